"""Lesson 1 · Hello, Flow."""

from __future__ import annotations

from lessons import RAISES, code, md

NAME = "01-hello-flow"

CELLS = [
    md("""
    # 1 · Hello, Flow

    Flow is a small, typed language for orchestrating LLM agents. Before we meet any
    agent, this lesson is about the everyday part of the language — the values you pass
    around, the names you give them and the builtins you shape them with — because every
    agent call takes values in and gives values back.

    **What you will learn**

    - Flow's values: numbers, strings, booleans, `null`, arrays and objects (they are JSON);
    - naming values with `let` and `var`, and why most names should be `let`;
    - `print` and string interpolation with `${…}`;
    - a handful of builtins: `len`, `map`, `filter`, `sum`, `keys`, `join`, `sortBy`, `groupBy`…;
    - how a cell shows its result, and how bindings carry from one cell to the next;
    - what a mistake looks like: a compile error (nothing runs) and a runtime error.

    Every code cell in this notebook is Flow, run by the Flow kernel. Nothing here talks
    to a network.
    """),
    md("""
    ## A cell's result

    Like a Python notebook, a cell whose last statement is an expression shows that
    expression's value as its result. Flow's values are exactly JSON's values, and they
    are shown the way JSON writes them.
    """),
    code("""
    "Hello, Flow!"
    """),
    code("""
    [42, 3.5, 6 / 3, "text", true, null, [1, 2], {name: "Ada", languages: ["en", "fr"]}]
    """),
    md("""
    Two details worth noticing: `6 / 3` is shown as `2` — a number with an integral value
    is always written as an integer — and object keys keep the order you wrote them in.
    That rendering is the same everywhere a value becomes text: in a result, in `print`,
    in `${…}` inside a string, in a log line. What you see is what an agent would be sent.

    ## Naming values: `let` and `var`

    `let` names a value for good; `var` names one you mean to change. Prefer `let`: when
    you read a workflow later, every `let` is one less thing that might have changed
    under you.
    """),
    code("""
    let name = "Ada"
    let languages = ["en", "fr", "de"]
    var greetings = 0
    greetings = greetings + 1
    print "Hello, ${name}! You speak ${len(languages)} languages."
    print "greetings so far: ${greetings}"
    """),
    md("""
    `print` shows a line as the cell runs. Inside a string, `${…}` holds any expression —
    a name, arithmetic, a call — and strings are inserted as they are while every other
    value is written as JSON. (Interpolating a whole object is legal, but the compiler
    adds an *info* note asking whether you meant it; `json(…)` says that you did.)
    """),
    code("""
    let profile = {name: name, languages: languages}
    "${name} has ${len(name)} letters; ${1 + 2 * 3} is seven; the profile is ${json(profile)}"
    """),
    md("""
    Assigning to a `let` is a mistake the compiler catches before anything runs. The
    cell below fails on purpose: read the diagnostic — its code, the caret under the
    offending name, and the hint. (`%explain F2004` would tell you more about the code.)
    """),
    code("""
    name = "Grace"
    """, RAISES),
    md("""
    ## Builtins: shaping data

    Flow has no user-defined functions; it has a fixed set of pure builtins instead, and
    lambdas (`x => …`) that you pass straight to them. That is enough to reshape what
    agents return without leaving the language.
    """),
    code("""
    let scores = [{who: "Ada", points: 9}, {who: "Grace", points: 7}, {who: "Alan", points: 8}]
    let points = map(scores, s => s.points)
    let good = filter(scores, s => s.points >= 8)
    print "total ${sum(points)}, best ${max(points)}, average ${avg(points)}"
    print "good: ${join(good[*].who, ", ")}"
    sortBy(scores, s => -s.points)[*].who
    """),
    md("""
    `good[*].who` is a *projection*: it reads `who` from every element, like
    `map(good, g => g.who)`. A few more builtins, on objects and strings:
    """),
    code("""
    let ticket = {id: "T1", title: "Refund for order 42", tags: ["billing", "refund"]}
    {
      fields: keys(ticket),
      words: split(lower(ticket.title), " "),
      first_tag: first(ticket.tags),
      has_refund: "refund" in ticket.tags,
      summary: ticket.{id, title},
    }
    """),
    code("""
    let words = ["apple", "avocado", "banana", "blueberry", "cherry"]
    groupBy(words, w => slice(w, 0, 1))
    """),
    md("""
    ## Control flow

    `if`, `for` and `while` are what you would expect; a condition must be a `bool`.
    `for x, i in xs` also gives the index.
    """),
    code("""
    var lines: string[] = []
    for word, i in words {
      if len(word) > 6 {
        lines = lines + ["${i}: ${word} (long)"]
      } else {
        lines = lines + ["${i}: ${word}"]
      }
    }
    join(lines, "; ")
    """),
    md("""
    ## Bindings carry across cells

    Every cell adds to the *session*: the names bound at the top level of a cell stay,
    with their types, for every later cell. `%who` lists what the session holds — a
    handy way to see the type Flow inferred for each name.
    """),
    code("""
    %who
    """),
    code("""
    greetings = greetings + 1
    "${name} has been greeted ${greetings} times"
    """),
    md("""
    A cell whose last statement is not an expression (a `let`, say) shows no result:
    """),
    code("""
    let top = first(sortBy(scores, s => -s.points))
    """),
    code("""
    top
    """),
    md("""
    ## When a run fails

    Some mistakes can only be found while running — an index past the end of an array,
    `parseJson` of text that is not JSON, a division by zero. Such a failure is an
    *error with a code* (here `evaluation`) and it points to the Flow line where it
    happened. The bindings made before the failure stay in the session.
    """),
    code("""
    let before = "bound before the failure"
    let third = languages[3]
    """, RAISES),
    code("""
    before
    """),
    md("""
    Error codes matter: later lessons catch errors by their code with `try`/`catch`, and
    retry agent calls on some codes.

    ## What next

    You can now name, print and reshape values. In
    [2 · Types and schemas](02-types-and-schemas.ipynb) we give those values *types* —
    the contracts that Flow checks before a run and that agents must satisfy when they
    answer.
    """),
]

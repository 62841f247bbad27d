"""The teaching gallery's source, as Python data, and the script that builds it.

Each notebook is a list of cells: `md(...)` for the lesson's text, `code(...)` for Flow
code, with optional tags (`raises-exception` for a cell that fails on purpose). Running
this file writes every `NN-name.ipynb` beside it, executes it with the Flow kernel and
saves it with its outputs, so the committed notebooks read well on GitHub and
`pytest --nbval notebooks/` checks that they still produce the same outputs.

    python notebooks/make.py          # all notebooks
    python notebooks/make.py 03       # the notebook(s) whose name starts with 03
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
RAISES = "raises-exception"


@dataclass(frozen=True)
class Cell:
    kind: str  # "markdown" | "code"
    source: str
    tags: tuple[str, ...] = ()


def md(text: str) -> Cell:
    return Cell("markdown", textwrap.dedent(text).strip("\n"))


def code(text: str, *tags: str) -> Cell:
    return Cell("code", textwrap.dedent(text).strip("\n"), tags)


NOTEBOOKS: dict[str, list[Cell]] = {}

NOTEBOOKS["01-hello-flow"] = [
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

NOTEBOOKS["02-types-and-schemas"] = [
    md("""
    # 2 · Types and schemas

    An agent's answer is only useful if you know its shape. Flow's types describe shapes
    of JSON values; the compiler checks your code against them before anything runs, and
    the same types become JSON Schemas that agent outputs and workflow inputs are
    validated against at run time. One description, checked twice.

    **What you will learn**

    - `type` aliases for objects, with required and optional fields;
    - unions of literals (`"low" | "medium" | "high"`) and arrays;
    - constraints such as `string(minLength: 1)` and `int(minimum: 0)`;
    - `%schema Name` to see the JSON Schema a type stands for;
    - workflows with typed inputs and outputs, and `%input` to bind JSON as a value;
    - what happens when a value breaks its type — a compile error before anything
      runs — and what is left to run-time validation;
    - open objects (`...`) and optional values (`T?`).
    """),
    md("""
    ## Type aliases

    A `type` declaration gives a shape a name. Objects list their fields; `body?` marks
    an optional field; `Severity[]` is an array; a union of string literals is an
    enumeration. Constraints go in parentheses after a base type and map one to one to
    JSON Schema keywords.
    """),
    code("""
    ## How urgent a ticket is.
    type Severity = "low" | "medium" | "high"

    ## A support ticket as it arrives.
    type Ticket = {
      id: string(pattern: "^T[0-9]+$"),
      title: string(minLength: 1, maxLength: 120),
      body?: string,
      tags: string[](uniqueItems: true),
    }

    ## What triage makes of a ticket.
    type Triage = {
      id: string,
      severity: Severity,
      score: int(minimum: 0, maximum: 10),
      needs_human: bool,
    }
    """),
    md("""
    A cell of declarations shows nothing: it adds the types to the session. Now a value
    with a declared type. The checker knows `body` may be missing, so reading it gives
    `string | null` — `??` supplies a default.
    """),
    code("""
    let ticket: Ticket = {id: "T1", title: "Refund for order 42", tags: ["billing"]}
    "${ticket.id}: ${ticket.body ?? "(no body)"}"
    """),
    md("""
    The checker catches a value that does not fit — here a severity that is not one of
    the three literals, and a missing required field. Nothing runs; the cell fails on
    purpose to show the diagnostics.
    """),
    code("""
    let wrong: Triage = {id: "T1", severity: "urgent", needs_human: false}
    """, RAISES),
    md("""
    On literals, constraints are checked statically too: a title must have at least one
    character.
    """),
    code("""
    let empty: Ticket = {id: "T9", title: "", tags: []}
    """, RAISES),
    md("""
    ## From types to JSON Schema

    `%schema` shows the JSON Schema of a type. This is what an agent is asked to produce
    and what its answer is validated against: note `additionalProperties: false` (Flow
    objects are closed unless they end with `...`) and the constraints carried over as
    keywords.
    """),
    code("""
    %schema Ticket
    """),
    code("""
    %schema Triage
    """),
    md("""
    ## Typed workflows

    A workflow is Flow's unit of work: named, with typed parameters and a typed result.
    This one triages a ticket with plain rules — no agent yet — so we can concentrate on
    the types. A workflow body sees only its parameters and the declarations, never the
    cell's bindings: that is what makes it mean the same in a notebook, in a file and
    from the command line.
    """),
    code("""
    ## Rule-based triage: billing words are urgent.
    workflow triage(ticket: Ticket, strict?: bool) -> Triage {
      let text = lower(ticket.title + " " + (ticket.body ?? ""))
      let billing = any(["refund", "charge", "invoice"], w => w in text)
      let severity: Severity = billing ? "high" : "low"
      return {
        id: ticket.id,
        severity: severity,
        score: billing ? 8 : 2,
        needs_human: billing or (strict ?? false),
      }
    }
    """),
    md("""
    `%schema` of a workflow shows both sides of its contract: the input object (its
    parameters, `strict` not required) and the output.
    """),
    code("""
    %schema triage
    """),
    md("""
    ## Binding JSON with `%input`

    Data often arrives as JSON — from a file, an API, a colleague. `%input NAME = JSON`
    binds it as a session value, typed from the value itself, as if an earlier cell had
    written the `let`. Passing it to `triage` checks that its inferred type fits `Ticket`.
    """),
    code("""
    %input incoming = {"id": "T2", "title": "Charged twice this month", "body": "Please help", "tags": ["billing", "urgent"]}
    """),
    code("""
    triage(incoming)
    """),
    code("""
    triage(ticket: {id: "T3", title: "Dark mode please", tags: []}, strict: true)
    """),
    md("""
    The check is structural: `incoming` has every field `Ticket` requires, with the right
    types, so it fits (`strict` is optional, so leaving it out is fine). Its fields are
    plain strings where `Ticket` has constrained ones; the checker accepts that, since
    it checks constraints only on literals it can see. JSON of the wrong *shape* is
    another matter — here `tags` is a string, not an array — and the call is refused
    before it runs:
    """),
    code("""
    %input mangled = {"id": "T4", "title": "Login loop", "tags": "auth"}
    triage(mangled)
    """, RAISES),
    md("""
    ## Types at run time

    Statically, the checker proves what it can see: the shapes of values, and the
    constraints of literals. The rest is checked while running. An agent's answer is
    validated against its `output` type every time (that is the next lesson), and when a
    workflow is the entry point of a run — `flow run tickets.flow triage --input @t.json`
    on the command line — its input is validated against the input schema above
    (`workflow-input-validation`) and its result against the output schema
    (`output-validation`).

    Objects are closed: a field the type does not list is an error. When you *want* to
    accept extra fields — metadata from another system, say — end the object type with
    `...`. And `T?` is short for `T | null`.
    """),
    code("""
    type Source = { system: string, received?: string, ... }
    type Envelope = { ticket: Ticket, source: Source, assignee: string? }

    let envelope: Envelope = {
      ticket: ticket,
      source: {system: "email", mailbox: "support@example.com", spam_score: 0.1},
      assignee: null,
    }
    [envelope.source.system, envelope.assignee ?? "unassigned", len(keys(envelope.source))]
    """),
    code("""
    %schema Source
    """),
    md("""
    ## What next

    Types are contracts. In [3 · Agents, contracts, repair and retry](03-agents-contracts-repair-retry.ipynb)
    an agent's `output:` type becomes the contract its answers must meet — and we watch
    what Flow does when an answer does not.
    """),
]


NOTEBOOKS["03-agents-contracts-repair-retry"] = [
    md("""
    # 3 · Agents: contracts, repair and retry

    An LLM is an unreliable function: the same question may come back malformed, off
    topic, late, or not at all. Flow's answer is to put a *contract* around every agent
    call — the output type, extra `expect` checks, a timeout — and to say, in the agent's
    declaration, what to do when the contract is broken: ask again with the errors
    (*repair*), start over (*retry*), or settle for a default (*fallback*).

    **What you will learn**

    - declaring an `agent` with an `output:` type, and calling it;
    - the deterministic `scripted` and `mock` models, for lessons and tests;
    - the repair loop: invalid answers are sent back with their validation errors;
    - `expect` clauses: checks of your own that feed the same loop;
    - `retry` on `agent-invocation` errors, `timeout`, `choice` and `fallback`;
    - catching a failed call with `try`/`catch`, and what an uncaught one looks like.

    Every agent here uses `model: "scripted"` (the answers are written in the agent's
    `script`) or `model: "mock"`, so the lesson runs the same way every time, offline.
    Swap in `"openai/gpt-4o-mini"` or `"anthropic/…"` and the code stays the same.
    """),
    md("""
    ## An agent with a contract

    An agent declaration is a prompt made of parts — `role`, `instructions`,
    `constraints`… — and an `output` type. The type becomes a JSON Schema the model is
    asked to follow, and every answer is validated against it.

    This scripted classifier answers badly on purpose: first with a label that is not
    one of the literals, then with a confidence out of range, and only then correctly.
    `repair: 2` allows two repairs after the first attempt.
    """),
    code("""
    type Verdict = {
      label: "spam" | "ham",
      confidence: number(minimum: 0, maximum: 1),
    }

    agent classifier {
      model: "scripted"
      role: "mail filter"
      instructions: "Decide whether the message is spam."
      constraints: ["Answer only about the message you are given"]
      output: Verdict
      repair: 2
      script: [
        { label: "SPAM", confidence: 0.9 },
        { label: "spam", confidence: 90 },
        { label: "spam", confidence: 0.97 },
      ]
    }
    """),
    code("""
    let verdict = classifier("WIN A FREE CRUISE!!! Reply with your bank details")
    verdict
    """),
    md("""
    The run view shows the agent card with its three attempts and, for each failed one,
    the validation errors. Those errors are exactly what the model receives with its
    previous answer when it is asked to repair: it learns what was wrong, not just that
    something was. Open the card (▸) to see the prompt.

    Because `verdict` has type `Verdict`, the rest of the program can rely on it:
    `verdict.label` is `"spam" | "ham"`, never anything else.
    """),
    code("""
    verdict.label == "spam" ? "move to junk" : "keep in inbox"
    """),
    md("""
    ## `expect`: checks a schema cannot express

    A schema says what shape an answer has; it cannot say that the answer is about the
    right order. `expect` clauses after the call can: inside the condition, `it` is the
    candidate answer, already schema-valid and typed, and the condition may use the
    cell's names. A failed expectation is treated like invalid output — its message goes
    back to the model, so write it as an instruction.
    """),
    code("""
    agent summarizer {
      model: "scripted"
      output: { order: string, summary: string }
      repair: 2
      script: [
        { order: "24", summary: "A customer wants a refund for a broken order." },
        { order: "42", summary: "A customer wants a refund for a broken order." },
        { order: "42", summary: "Refund requested: order 42 arrived broken." },
      ]
    }

    let order = "42"
    let s = summarizer("Summarise: my order ${order} arrived broken, I want my money back")
      expect it.order == order : "quote the order number from the message"
      expect order in it.summary : "mention the order number in the summary"
    s.summary
    """),
    md("""
    ## When repairs run out

    Repairs are a budget, not a promise. This agent keeps answering a string where an
    `int` is required; after its one repair the call fails with `output-validation`.
    Every runtime error has a *code*, and `try … catch "code" as err` catches by code —
    `err` holds the code, the message, the stage and details.
    """),
    code("""
    agent counter {
      model: "scripted"
      output: int
      repair: 1
      script: ["forty-two"]
    }

    var answer = 0
    try {
      answer = counter("How many items are in the box?")
    } catch "output-validation" as err {
      print "gave up: ${err.code}: ${err.message}"
      answer = -1
    }
    answer
    """),
    md("""
    ## Retry: when the call itself fails

    Repair is for bad answers; *retry* is for calls that produce no answer at all — a
    provider returning 503, a dropped connection. `retry` lists the error codes worth
    another try (only `agent-invocation` and `output-validation` may be retried),
    the total number of attempts, and a pause between them. The script's `fail(...)`
    entries simulate failures.
    """),
    code("""
    agent flaky {
      model: "scripted"
      retry: { on: ["agent-invocation"], attempts: 3, backoff: 50ms }
      script: [
        fail("agent-invocation", "503 Service Unavailable"),
        fail("agent-invocation", "connection reset by peer"),
        "Here is your answer, on the third try.",
      ]
    }

    flaky("Say something useful")
    """),
    md("""
    ## Timeouts

    `timeout` bounds each attempt. A `slow(delay, value)` script entry answers after a
    delay: the first attempt below takes a second against a 200 ms timeout, fails with
    `agent-invocation`, and the retry (a fresh attempt) is quick enough. Without the
    retry, the timeout would fail the call.
    """),
    code("""
    agent slowpoke {
      model: "scripted"
      timeout: 200ms
      retry: { on: ["agent-invocation"], attempts: 2 }
      script: [slow(1s, "too late"), slow(10ms, "just in time")]
    }

    slowpoke("Hurry up")
    """),
    md("""
    ## `choice` and `fallback`

    Often you want one of a few words — a queue, a verdict, a next step. `choice:` on
    the call makes the output an enumeration (and the result's type the union of those
    literals); an answer outside it is repaired like any invalid output. With
    `fallback:`, exhausted repairs return the fallback instead of failing: the right
    default for routing, where "other" is a safe answer.

    A `when("substring", reply)` script entry answers every attempt of a call whose
    prompt contains the substring.
    """),
    code("""
    agent dispatcher {
      model: "scripted"
      script: [when("charged", "billing"), when("password", "tech"), when("weird", "no idea, sorry")]
    }

    let queues = ["billing", "tech", "other"]
    [
      dispatcher("Route: I was charged twice", choice: queues),
      dispatcher("Route: I forgot my password", choice: queues),
      dispatcher("Route: something weird happened", choice: queues, fallback: "other"),
    ]
    """),
    md("""
    ## The `mock` model

    A `scripted` agent needs its answers written out. `model: "mock"` needs nothing: it
    makes up a schema-valid answer, seeded by the agent's name and the prompt, so the
    same call gives the same answer on every run. It is the quickest way to try a
    pipeline's plumbing before any real model is involved.
    """),
    code("""
    agent guesser {
      model: "mock"
      output: Verdict
    }

    let first_guess = guesser("Is 'hello, old friend' spam?")
    let second_guess = guesser("Is 'hello, old friend' spam?")
    {same: first_guess == second_guess, valid: first_guess.confidence <= 1}
    """),
    md("""
    ## An uncaught failure

    Finally, what happens when nobody catches: the run fails, the cell's output shows
    the error's code and the Flow line it came from, and the run view marks the failed
    card. This cell fails on purpose.
    """),
    code("""
    agent offline {
      model: "scripted"
      script: [fail("agent-invocation", "the provider is unreachable")]
    }

    let reply = offline("Is anyone there?")
    """, RAISES),
    md("""
    ## What next

    One agent at a time is slow. [4 · Parallel work, pipelines and stages](04-parallel-pipelines-stages.ipynb)
    runs calls side by side, organises a workflow into observable stages, and publishes
    a report at the end.
    """),
]


NOTEBOOKS["04-parallel-pipelines-stages"] = [
    md("""
    # 4 · Parallel work, pipelines and stages

    Agent calls are slow — seconds each — and most of a real workflow's calls do not
    depend on one another. This lesson runs them side by side, then gives a longer
    workflow a visible structure: named stages you can watch, progress, a log, checks
    that record or stop, and a report at the end.

    **What you will learn**

    - `parallel { … }`: a few different calls at once, as one object;
    - `parallelMap(xs, x => …, concurrency: n)`: the same call over many items, in order;
    - `limits { … }`: the budgets a workflow runs under;
    - `pipeline` and `stage`: named, observed steps;
    - `emit progress`, `log`, `verify` (records, goes on) and `require` (stops);
    - `publish`: an artifact — here a Markdown report — shown in the notebook;
    - `async` / `await` for a task that runs while the workflow goes on.
    """),
    md("""
    ## The agents

    Three scripted agents, answering from `when` patterns so that each review gets the
    same answer whichever order the calls happen in — parallel calls start in order but
    may finish in any order.
    """),
    code("""
    type Sentiment = { review: string, mood: "happy" | "neutral" | "unhappy", topic: string }

    agent rater {
      model: "scripted"
      instructions: "Rate the mood of a product review and name its topic in one word."
      output: Sentiment
      script: [
        when("fast", { review: "R1", mood: "happy", topic: "delivery" }),
        when("broke", { review: "R2", mood: "unhappy", topic: "quality" }),
        when("fine", { review: "R3", mood: "neutral", topic: "price" }),
        when("love", { review: "R4", mood: "happy", topic: "design" }),
        when("late", { review: "R5", mood: "unhappy", topic: "delivery" }),
      ]
    }

    agent headliner {
      model: "scripted"
      script: ["Customers love the design, delivery is hit and miss"]
    }

    agent advisor {
      model: "scripted"
      script: ["Talk to the courier about late deliveries."]
    }

    let reviews = [
      { id: "R1", text: "Arrived fast, works great" },
      { id: "R2", text: "It broke after two days" },
      { id: "R3", text: "It is fine for the price" },
      { id: "R4", text: "I love the colour and the shape" },
      { id: "R5", text: "Came a week late" },
    ]
    """),
    md("""
    ## `parallelMap`: one call per item

    `parallelMap` runs the lambda for every item, at most `concurrency` at a time, and
    returns the results **in input order** — whatever order the calls finish in. If one
    call fails, the ones still running are cancelled: the result is all or nothing.
    """),
    code("""
    let rated = parallelMap(reviews, r => rater("Review ${r.id}: ${r.text}"), concurrency: 3)
    rated[*].mood
    """),
    md("""
    ## `parallel`: different calls at once

    `parallel` takes named branches and gives back an object with one field per branch,
    each with its own type. Here the headline and the advice do not depend on each
    other, so there is no reason to wait for one before asking for the other.
    """),
    code("""
    let unhappy = filter(rated, r => r.mood == "unhappy")
    let extras = parallel {
      headline: headliner("Write a headline for ${len(rated)} reviews")
      advice: advisor("Advise on these complaints: ${json(unhappy[*].topic)}")
    }
    extras
    """),
    md("""
    ## A workflow with stages

    Now the same work as a workflow someone else can watch. `limits` comes first and
    caps what the workflow may spend: agent calls (attempts included), wall time,
    calls in flight, executed steps. A `pipeline` groups `stage`s; each stage appears in
    the run view with its state, so when something fails you see *where*. Stages do not
    open a scope: `rated` made in the first stage is visible in the next.

    Inside, four ways to report:

    - `emit progress {done, total, message}` — a progress bar for the current stage;
    - `log` — a line in the run's log;
    - `verify cond : "message"` — records whether a check passed, and goes on;
    - `require cond : "message"` — stops the run with an `assertion` error if false.

    And `publish NAME value` makes an artifact: a string is shown as Markdown, a value
    as JSON.
    """),
    code('''
    type Review = { id: string, text: string }

    ## Rate reviews, check the ratings, and publish a Markdown report.
    workflow review_report(reviews: Review[]) -> { happy: int, unhappy: int } {
      limits { agent_runs: 20, duration: 1m, concurrency: 2 }
      pipeline "reviews" {
        stage "rate" {
          let rated = parallelMap(reviews, r => rater("Review ${r.id}: ${r.text}")
                                    expect it.review == r.id : "echo the review id", concurrency: 4)
          emit progress { done: len(rated), total: len(reviews), message: "reviews rated" }
          log "rated ${len(rated)} reviews"
        }
        stage "check" {
          require len(rated) == len(reviews) : "one rating per review"
          verify all(rated, r => r.topic != "") : "every rating names a topic"
          verify count(rated, r => r.mood == "unhappy") <= 1 : "at most one unhappy review"
        }
        stage "write" {
          let extras = parallel {
            headline: headliner("Write a headline for ${len(rated)} reviews")
            advice: advisor("Advise on the unhappy reviews")
          }
          let lines = map(rated, r => "| ${r.review} | ${r.mood} | ${r.topic} |")
          publish "report.md" """
            # ${extras.headline}

            | review | mood | topic |
            |---|---|---|
            ${join(lines, "\\n")}

            **Advice:** ${extras.advice}
            """
        }
      }
      return {
        happy: count(rated, r => r.mood == "happy"),
        unhappy: count(rated, r => r.mood == "unhappy"),
      }
    }
    '''),
    md("""
    Run it. The summary shows the tree — pipeline, stages, agent calls — with the
    progress, the log line, both `verify` results (one failed, and the run went on) and
    the published report, which also appears as an output of its own.
    """),
    code("""
    review_report(reviews)
    """),
    md("""
    Notice `concurrency: 4` on the `parallelMap`: the workflow's `limits` say 2, and the
    workflow's limit wins, so at most two reviews were rated at a time.

    ## When a `require` fails

    `verify` is for things worth knowing; `require` is for things the rest of the
    workflow cannot do without. A failed `require` stops the run with an `assertion`
    error — which, like any error with a code, can be caught:
    """),
    code("""
    var outcome = "not run"
    try {
      stage "gate" {
        require len(unhappy) == 0 : "no unhappy reviews before the launch"
        outcome = "ship it"
      }
    } catch "assertion" as err {
      outcome = "blocked: ${err.message}"
    }
    outcome
    """),
    md("""
    ## `async` and `await`

    `parallel` waits for all its branches at once. Sometimes you want to start something
    slow, do other work, and collect it later: `async name { … }` starts a task and goes
    on; `await name` waits for it, and the task's top-level bindings become fields of
    its name.
    """),
    code("""
    async headline_task { let headline = headliner("A headline, please") }
    let tally = groupBy(rated, r => r.mood)
    await headline_task
    {headline: headline_task.headline, moods: map(tally, g => "${g.key}: ${len(g.items)}")}
    """),
    md("""
    ## What next

    So far every agent has worked alone. [5 · Teams and routing](05-teams-and-routing.ipynb)
    groups agents into a team and lets a call decide, at run time, which member answers.
    """),
]

NOTEBOOKS["05-teams-and-routing"] = [
    md("""
    # 5 · Teams and routing

    A single agent asked to do everything gets a long, vague prompt. It works better to
    give each agent one job — billing questions, technical questions, the polite front
    desk — and to decide *per request* who answers. A `team` groups such agents under one
    name; routing picks a member at run time, and the team makes sure only its members
    can be picked.

    **What you will learn**

    - `team Name { main: …, members: […] }`, and calling `team.main` and `team.member_name`;
    - `team.member(name, prompt)`: choosing the member at run time;
    - routing with a `choice` call, with a `fallback` for requests nobody recognises;
    - what happens when the name is not a member: a `capability-violation` error, caught.
    """),
    md("""
    ## A support team

    Three scripted agents, each with one job, and a team. `main` is the agent the team
    answers with by default; `members` are the specialists. (The main agent counts as a
    member too, when routing by name.)
    """),
    code("""
    agent frontdesk {
      model: "scripted"
      role: "front desk of a support team"
      instructions: "Answer general questions politely; hand anything specific to a specialist."
      script: ["Thanks for writing! A specialist will look at this shortly."]
    }

    agent billing {
      model: "scripted"
      role: "billing specialist"
      instructions: "Answer questions about invoices, charges and refunds."
      script: [when("twice", "I have refunded the duplicate charge; expect it within 5 days."),
               "Your invoices are under Account → Billing."]
    }

    agent tech {
      model: "scripted"
      role: "technical support engineer"
      instructions: "Diagnose login and app problems step by step."
      script: ["Please reset your password from the login page, then clear the app's cache."]
    }

    team support { main: frontdesk, members: [billing, tech] }
    """),
    md("""
    Calling the team: `support.main(…)` is the main agent, `support.billing(…)` a member
    by its name. The names are checked before the run, like any other call.
    """),
    code("""
    [support.main("Hello?"), support.billing("Where are my invoices?")]
    """),
    md("""
    A member the team does not have is a compile error: nothing runs. (This cell fails
    on purpose.)
    """),
    code("""
    support.legal("Can I sue you?")
    """, RAISES),
    md("""
    ## Routing at run time

    Usually you do not know in advance who should answer — that depends on the message.
    `support.member(name, prompt)` takes the member's name as a *value*. Here a router
    agent picks it. Its call uses `choice`, so the answer can only be one of the names
    we list, and `fallback: "frontdesk"` handles messages it cannot place: a router
    that is unsure should send the request to the front desk, not fail.

    The routing lives in a workflow, so each message is handled the same way, and
    `parallelMap` handles several messages at once.
    """),
    code("""
    agent router {
      model: "scripted"
      instructions: "Name the specialist who should answer the message."
      script: [when("charged", "billing"), when("password", "tech"), when("log in", "tech"),
               when("weather", "I'm not sure")]
    }

    ## Route a message to the right member of `support`, and answer it.
    workflow handle(message: string) -> { routed_to: string, reply: string } {
      let who = router("Who should answer: ${message}", choice: ["frontdesk", "billing", "tech"],
                       fallback: "frontdesk")
      return { routed_to: who, reply: support.member(who, message) }
    }
    """),
    code("""
    let inbox = [
      "I was charged twice this month",
      "I forgot my password",
      "What's the weather like over there?",
    ]
    parallelMap(inbox, m => handle(m))
    """),
    md("""
    Open the run view's cards: the third router call answered outside the choice, was
    asked to repair, failed again and fell back to `frontdesk` — the request still got
    an answer.

    ## Only members may answer

    `choice` is what made that routing safe. Without it, the router's answer is any
    string — and a team must not let a string decide to call an agent outside it. A name
    that is neither `main` nor a member fails the call with `capability-violation`. Here
    a router without a `choice` comes up with "legal"; we catch the error and answer
    from the front desk instead.
    """),
    code("""
    agent loose_router {
      model: "scripted"
      script: ["legal"]
    }

    let message = "I want to cancel my contract and speak to a lawyer"
    let who = loose_router("Who should answer: ${message}")
    var reply = ""
    try {
      reply = support.member(who, message)
    } catch "capability-violation" as err {
      print "refused: ${err.message}"
      reply = support.main(message)
    }
    reply
    """),
    md("""
    ## What next

    Some decisions should not be left to any agent. [6 · Approvals and questions](06-approvals-and-questions.ipynb)
    stops a workflow to ask a person — and shows how a notebook that must run unattended
    answers anyway.
    """),
]

NOTEBOOKS["06-approvals-and-questions"] = [
    md("""
    # 6 · Approvals and questions

    Some steps should not happen without a person saying yes: sending email to
    customers, refunding money, publishing. And sometimes a workflow simply needs
    information only a person has. Flow makes both explicit: `approve` pauses the run
    for a yes or no, `ask` for an answer. Whoever answers is the run's *operator*, and
    the operator's *policy* decides what happens when nobody is there to answer — in CI,
    say, or in this very notebook, which is executed unattended to produce the outputs
    you are reading.

    **What you will learn**

    - `approve "question" details {…}`: a `bool`, decided by the operator;
    - `ask "question"` (a free answer) and `ask "question" choice [...]`;
    - the operator policies: `interactive`, `auto-approve`, `auto-deny`,
      `answers:FILE` and `none`, set with `%operator`;
    - why a run with nobody to ask fails closed with `operator-unavailable`;
    - answering from a later cell with `%background`, `%approve` and `%wait`.
    """),
    md("""
    ## The agents

    A writer drafts emails; we will want a person to approve them before they go out.
    """),
    code("""
    type Draft = { to: string, subject: string, body: string }

    agent writer {
      model: "scripted"
      instructions: "Draft a short reply to the customer."
      output: Draft
      script: [
        when("Ada", { to: "ada@example.com", subject: "Your refund", body: "Your refund is on its way." }),
        when("Alan", { to: "alan@example.com", subject: "Your order", body: "Your order ships tomorrow." }),
      ]
    }

    let customers = ["Ada", "Alan"]
    """),
    md("""
    ## Nobody to ask: failing closed

    `%operator` with no argument shows the current policy. The kernel starts
    `interactive`: a person at the notebook answers.
    """),
    code("""
    %operator
    """),
    md("""
    But when this notebook is executed by a tool — `nbclient`, `nbval`, CI — no person
    can click anything, and the kernel knows it. An `approve` with no way to be answered
    does not guess: it fails with `operator-unavailable`. That is the safe default for a
    question whose point is that a person decides. `%operator none` makes the same
    choice explicit, and everywhere: every request fails closed. (This cell fails on
    purpose.)
    """),
    code("""
    %operator none
    let drafts = parallelMap(customers, c => writer("Reply to ${c}"))
    let send = approve "Send ${len(drafts)} emails to customers?" details { drafts: drafts }
    """, RAISES),
    md("""
    The drafts were made before the failure, so `drafts` is still bound — the failure
    stopped the run exactly at the question. With no answer, nothing was sent.

    ## `auto-approve` and `auto-deny`

    For demos, tests and trusted batch jobs, a policy can answer on the operator's
    behalf. `auto-approve` says yes to every `approve`; `auto-deny` says no. The run
    view records who decided — a policy, not a person — so the record stays honest.
    `details` travel with the question: a person would see them next to the buttons.
    """),
    code("""
    %operator auto-approve
    let send = approve "Send ${len(drafts)} emails to customers?" details { drafts: drafts }
    if send {
      for d in drafts { log "sent \\"${d.subject}\\" to ${d.to}" }
    }
    send ? "sent ${len(drafts)} emails" : "nothing sent"
    """),
    code("""
    %operator auto-deny
    let publish_now = approve "Publish the release notes now?"
    publish_now ? "published" : "kept as a draft"
    """),
    md("""
    ## Questions: `ask`

    `ask` returns a string. With `choice`, the answer is one of the listed strings and
    the result's type is their union, so the rest of the program can branch on it
    safely. `auto-approve` and `auto-deny` answer a `choice` question with its *first*
    choice — put the safe option first. An open question they cannot answer: that is
    `operator-unavailable` again, caught here.
    """),
    code("""
    %operator auto-approve
    let tone = ask "Which tone should the replies take?" choice ["formal", "friendly"]
    var note = ""
    try {
      note = ask "Anything the writer should know?"
    } catch "operator-unavailable" as err {
      print "no answer: ${err.message}"
      note = "(none)"
    }
    {tone: tone, note: note}
    """),
    md("""
    ## Answers from a file: `answers:PATH`

    For a notebook that must run unattended *and* take particular decisions, write the
    answers down. `answers:answers.json` (a path relative to the notebook) names a JSON
    object mapping each question's exact text to its answer — `true`/`false` for an
    `approve`, a string for an `ask`. The file beside this notebook:

    ```json
    {
      "Send 2 emails to customers?": true,
      "Publish the release notes now?": false,
      "Which tone should the replies take?": "friendly",
      "Anything the writer should know?": "Mention the 10% discount for returning customers."
    }
    ```

    Questions are matched by their text *after* interpolation: "Send 2 emails…", not
    "Send ${len(drafts)} emails…". A question the file does not list is
    `operator-unavailable`: a changed question should fail loudly, not be answered by
    an answer written for another one.
    """),
    code("""
    %operator answers:answers.json
    let answers = {
      send: approve "Send ${len(drafts)} emails to customers?" details { drafts: drafts },
      publish: approve "Publish the release notes now?",
      tone: ask "Which tone should the replies take?" choice ["formal", "friendly"],
      note: ask "Anything the writer should know?",
    }
    answers
    """),
    md("""
    The policy stays until the next `%operator`. A question missing from the file:
    """),
    code("""
    var refund = false
    try {
      refund = approve "Refund both customers?"
    } catch "operator-unavailable" as err {
      print "not in the answers file: ${err.message}"
    }
    refund
    """),
    md("""
    ## A person at the notebook: `interactive`

    `interactive` is the default when a person can answer. In JupyterLab (or Notebook)
    the run view shows the question with its details and **Approve** / **Deny** buttons
    — or the choices of an `ask`, or a text box — while the cell is still running; the
    click resumes the run, and the view then shows who decided what. This notebook was
    executed headless, so you see policies' answers here; open it in JupyterLab, change
    a cell's `%operator …` line to `%operator interactive`, and that cell will wait for
    your click instead.

    ## Answering from another cell: `%background`

    A long workflow that asks for an approval halfway through should not block the
    notebook. `%background` at the top of a cell returns at once with the live view
    while the run goes on, and prints the run's id — say `r3f9c2a1b7d0`:

    ```
    %background
    %operator interactive
    let drafts = parallelMap(customers, c => writer("Reply to ${c}"))
    let send = approve "Send ${len(drafts)} emails to customers?" details { drafts: drafts }
    ```

    The prompt shows in that cell's view, and you may click there; or answer from any
    later cell — `%approve` answers the run's oldest pending question with `yes` or
    `no`, and `%wait` waits for the run to end:

    ```
    %approve r3f9c2a1b7d0 yes
    ```
    ```
    %wait r3f9c2a1b7d0
    ```

    The run's summary and result go to the cell that started it. Answering a run that
    has already ended is refused with a clear error, so a stale `%approve` cannot
    approve something else. (These cells are shown, not run: run ids are random, and
    this notebook's outputs must be the same every time it is executed.)

    ## What next

    You have seen the whole loop: typed values, agents under contracts, parallel
    pipelines, teams, and people in the loop. The rest of the gallery builds on these:
    tools implemented in Python, recording and replaying real models, and `%%flow` in
    Python notebooks.
    """),
]

# -- building --------------------------------------------------------------------------------
def build(name: str, cells: list[Cell]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "flow", "display_name": "Flow", "language": "flow"}
    nb.metadata["language_info"] = {"name": "flow"}
    for index, cell in enumerate(cells):
        node = nbformat.v4.new_markdown_cell(cell.source) if cell.kind == "markdown" else \
            nbformat.v4.new_code_cell(cell.source)
        node.id = f"{name[:2]}-{index:02d}"  # stable ids: a rebuild changes no cell id
        if cell.tags:
            node.metadata["tags"] = list(cell.tags)
        nb.cells.append(node)
    return nb


def execute(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Run every cell in the Flow kernel; a cell tagged raises-exception may fail, no other."""
    client = NotebookClient(nb, timeout=120, kernel_name="flow", resources={"metadata": {"path": str(HERE)}},
                            allow_errors=False, record_timing=False)
    client.execute()
    return nb


def make(name: str) -> Path:
    nb = execute(build(name, NOTEBOOKS[name]))
    path = HERE / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def main(argv: list[str]) -> int:
    wanted = [n for n in NOTEBOOKS if not argv or any(n.startswith(a) for a in argv)]
    if not wanted:
        print(f"no notebook matches {' '.join(argv)}; they are: {', '.join(NOTEBOOKS)}", file=sys.stderr)
        return 2
    try:
        for name in wanted:
            print(f"{make(name).relative_to(HERE.parent)}", flush=True)
    finally:
        shutil.rmtree(HERE / ".flow", ignore_errors=True)  # the run journals are not part of the gallery
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

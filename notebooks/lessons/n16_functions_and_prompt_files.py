"""Lesson 16 · Functions, folds and prompt files (Flow v1.2)."""

from __future__ import annotations

from lessons import RAISES, code, md

NAME = "16-functions-and-prompt-files"

CELLS = [
    md("""
    # 16 · Functions, folds and prompt files

    A workflow that grows repeats itself: the same few lines to format a time, the same
    agent call wrapped the same way, the same prompt pasted with a different ticket in
    it. This lesson removes the repetition with three things Flow 1.2 adds: functions of
    your own, the folding builtins `reduce` and `flatMap`, and prompt files with
    variables.

    **What you will learn**

    - `fn name(p: T) -> R { … }`: a small typed helper, and how its return type is
      checked;
    - a function that calls an agent, and functions in `map` and `parallelMap` lambdas;
    - `reduce(xs, init, (acc, x) => …)` and `flatMap(xs, x => [...])`, both typed;
    - `file("prompts/reply.md", { team: …, ticket: … })`: a prompt file whose
      `{{placeholders}}` are filled with values, as data;
    - the diagnostics that keep all three honest: a wrong return type, a lambda of the
      wrong arity, a placeholder without a value.

    Every agent here is `scripted` (lesson 3), so the lesson runs the same every time,
    without a network.
    """),
    md("""
    ## A small helper

    A support desk's tickets, each with how long it has waited. People read "2 h 5 min"
    better than "125", so a function says it once. A function is declared like a
    workflow — typed parameters, a typed result, `##` for its documentation — but it is
    not a run of its own: it runs inside whatever calls it.
    """),
    code("""
    type Ticket = { id: string, text: string, minutes: int, tags: string[] }

    ## A waiting time as people read it: "45 min", "2 h 5 min".
    fn waited(minutes: int) -> string {
      if minutes < 60 {
        return "${minutes} min"
      }
      return "${floor(minutes / 60)} h ${minutes % 60} min"
    }

    let tickets: Ticket[] = [
      {id: "T1", text: "I was charged twice for order 42 (a double charge)", minutes: 45, tags: ["billing"]},
      {id: "T2", text: "The app logs me out every five minutes", minutes: 125, tags: ["login", "mobile"]},
      {id: "T3", text: "Where is my invoice for March?", minutes: 300, tags: ["billing", "invoice"]},
    ]
    waited(125)
    """),
    md("""
    Like the cell's types, the function is now part of the session: later cells call it
    (Tab completes its name, Shift+Tab shows its signature and its `##` line). A
    function is pure when it has no effect, and a pure function may be called anywhere
    — here in `map`'s lambda:
    """),
    code("""
    map(tickets, t => "${t.id}: waiting ${waited(t.minutes)}")
    """),
    md("""
    ## A typed return

    The body is checked like a workflow's: against the declared result type, before
    anything runs. This one promises a `string` and returns a `bool` — a type mismatch,
    F3001, at the value returned. The cell fails on purpose.
    """),
    code("""
    ## Whether a ticket waited too long (it should say so in words).
    fn verdict(t: Ticket) -> string {
      return t.minutes > 60
    }
    """, RAISES),
    md("""
    A function sees its parameters, the declarations and the builtins — not the cell's
    `let`s (`tickets` inside a function body is F2001): what it needs, it is given.

    ## A function that calls an agent

    Routing a ticket is an agent's call and a rule about it. The function `route` puts
    both in one place. The classifier is scripted: it answers from `when` patterns on
    the prompt.
    """),
    code("""
    type Label = "billing" | "tech" | "other"

    agent classifier {
      model: "scripted"
      output: Label
      script: [when("charged", "billing"), when("invoice", "billing"), when("logs me out", "tech"), "other"]
    }

    type Routed = { id: string, label: Label, urgent: bool }

    ## Labels one ticket; billing is urgent after an hour, the rest after four.
    fn route(t: Ticket) -> Routed {
      let label = classifier("Label this ticket: ${t.text}")
      return {id: t.id, label: label, urgent: t.minutes > (label == "billing" ? 60 : 240)}
    }
    """),
    md("""
    A function that calls an agent has an effect, so it goes where effects may go: a
    cell, a workflow, a `for` loop or `parallelMap` — not `map`'s lambda, which must be
    pure (that is F5020, and its note points at the agent call inside the function).
    Its calls are journaled like any other, so `%replay` and a resumed run get the same
    answers. The summary shows the three classifier calls, in the tickets' order:
    """),
    code("""
    let routed = parallelMap(tickets, t => route(t), concurrency: 2)
    routed
    """),
    md("""
    ## Folding: `reduce` and `flatMap`

    `reduce(xs, init, (acc, x) => …)` walks the items from the left and carries an
    accumulator: it starts as `init`, and the lambda gives the next one from it and an
    item. The accumulator has the type of `init` — `0` is an `int` — and the lambda must
    keep it so. `flatMap(xs, x => [...])` gives an array per item and joins them: a way
    to map and filter in one go (`[]` drops an item).
    """),
    code("""
    let total = reduce(tickets, 0, (so_far, t) => so_far + t.minutes)
    let urgent = reduce(routed, 0, (n, r) => r.urgent ? n + 1 : n)
    {
      waited: waited(total),
      urgent: urgent,
      tags: unique(flatMap(tickets, t => t.tags)),
      escalate: flatMap(routed, r => r.urgent ? [r.id] : []),
    }
    """),
    md("""
    Both are typed. `reduce`'s lambda takes the accumulator *and* the item; one that
    takes only the item is F3019, before anything runs — the one error, since what a
    lone parameter would stand for is anyone's guess. (A lambda that gives the wrong type is F3001, and so is one of `flatMap`'s that
    gives no array.)
    """),
    code("""
    reduce(tickets, 0, t => t.minutes)
    """, RAISES),
    md("""
    ## Prompt files with variables

    Instructions and prompts that are more than a line belong in a file, versioned with
    the notebook. [`prompts/reply.md`](prompts/reply.md) has two placeholders:

    ```
    You answer customers of the {{team}} team.
    Write one short, friendly reply to this ticket: {{ticket}}
    ```

    `file(PATH, { name: value, … })` fills them. In a prompt, the values are computed
    when the call runs — here the ticket's text. The summary shows how the filled prompt
    begins: `"billing"` stands in it with its quotes.
    """),
    code("""
    type Reply = { text: string, refund: bool }

    agent replier {
      model: "scripted"
      output: Reply
      script: [
        when("double", { text: "Sorry for the double charge: a refund is on its way.", refund: true }),
        when("invoice", { text: "Your March invoice is in Account, Invoices.", refund: false }),
      ]
    }

    let ticket = "I was charged twice for order 42 (a double charge)"
    let reply = replier(file("prompts/reply.md", { team: "billing", ticket: ticket }))
    print reply.text
    reply.refund
    """),
    md("""
    A value stands in the text as data, never as more of the prompt: it is written as
    its JSON — a ticket with a newline, a fence or `{{team}}` in it stays one quoted
    string — and it never gets more trust than the
    place it lands in (lesson 8 passes data as `context:`; see
    [the language guide](../docs/language-guide.md#prompt-variables)).

    The file is read when the cell is checked, so a file and its callers cannot drift
    apart unnoticed: every placeholder needs a value, and every value a placeholder.
    Leaving out `team` is F4035, naming the placeholder and its line in the file (a
    value that no placeholder uses would be F4036):
    """),
    code("""
    replier(file("prompts/reply.md", { ticket: ticket }))
    """, RAISES),
    md("""
    ## All three together

    A function that answers any ticket of a team through the prompt file, run over the
    billing tickets with `parallelMap`, and a `reduce` that counts the refunds promised:
    """),
    code("""
    ## A reply to one ticket, written for the team `desk`.
    fn answer(t: Ticket, desk: string) -> Reply {
      return replier(file("prompts/reply.md", { team: desk, ticket: t.text }))
    }

    let billing = filter(tickets, t => "billing" in t.tags)
    let replies = parallelMap(billing, t => answer(t, "billing"))
    print map(replies, r => r.text)
    reduce(replies, 0, (n, r) => r.refund ? n + 1 : n)
    """),
    md("""
    ## What next

    Functions follow the rest of the language: [docs/language-guide.md](../docs/language-guide.md)
    has [`fn`](../docs/language-guide.md#functions-fn) (recursion, limits, what a
    function may not do inside a lambda), [the folding
    builtins](../docs/language-guide.md#folding-reduce-and-flatmap) and [prompt
    variables](../docs/language-guide.md#prompt-variables); `flow explain F3019` (or any
    code above) says more about a diagnostic.
    """),
]

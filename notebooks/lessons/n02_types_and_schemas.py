"""Lesson 2 · Types and schemas."""

from __future__ import annotations

from lessons import RAISES, code, md

NAME = "02-types-and-schemas"

CELLS = [
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

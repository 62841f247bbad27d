"""Lesson 9 · A tour of the diagnostics."""

from __future__ import annotations

from lessons import RAISES, code, md

NAME = "09-diagnostics-tour"

CELLS = [
    md("""
    # 9 · A tour of the diagnostics

    Flow checks a cell completely before any of it runs. Whatever the checker can
    prove wrong — a misspelt name, a value of the wrong type, an agent that can never
    answer, a budget that cannot be met — is a *diagnostic* with a code, a place and,
    where it can, a hint; and nothing of the cell runs, so a mistake costs no model call.

    Most code cells below are broken on purpose (and tagged
    `raises-exception`, so the notebook's tests expect the failure). Read each
    diagnostic: the code (`F2001`…), the caret under the exact span, the hint.

    **What you will learn**

    - the families: syntax (F1), names (F2), types (F3), agents and tools (F4),
      control flow and effects (F5), limits (F6), hints (F7);
    - errors stop the cell; warnings and infos are shown above a run that goes on;
    - `%explain CODE` for the long story, `%check` to check without running;
    - the same diagnostics from the command line: `flow check file.flow`.
    """),
    md("""
    ## Syntax (F1xxx)

    A string that never ends, and a stray bracket: the parser says what it expected.
    """),
    code('''
    let greeting = "Hello, world
    ''', RAISES),
    code("""
    let xs = [1, 2, 3]]
    """, RAISES),
    md("""
    ## Names (F2xxx)

    An undefined name gets the closest known one as a hint; a `let` cannot be
    assigned; a name cannot hide a builtin.
    """),
    code("""
    let total_price = 42
    print "the price is ${total_prices}"
    """, RAISES),
    code("""
    let len = 3
    """, RAISES),
    md("""
    ## Types (F3xxx)

    Types come from literals, declarations and builtins; every expression is checked
    against what its place needs. A condition must be a `bool`, an object literal must
    fit the declared type, and a field must exist.
    """),
    code("""
    type Ticket = { id: string, priority: "low" | "high", tags?: string[] }
    let t: Ticket = { id: "T1", priority: "urgent" }
    """, RAISES),
    code("""
    let found = 3
    if found { print "some" }
    """, RAISES),
    code("""
    type User = { name: string, email: string }
    let u: User = { name: "Ada", email: "ada@example.org" }
    u.phone
    """, RAISES),
    md("""
    ## Agents, teams and tools (F4xxx)

    An agent declaration is checked like code: its fields, its model string, its
    retry policy (only `agent-invocation` and `output-validation` can be retried — a
    time-out of the whole run cannot), and the tools it names.
    """),
    code("""
    agent helper {
      model: "gpt-4o"
      instructions: "Help."
      retry: { on: ["workflow-timeout"], attempts: 2 }
      tools: [search]
    }
    """, RAISES),
    md("""
    Each problem is its own diagnostic, all reported at once: you fix them in one go.
    `%explain` tells the long story of a code, with an example and the fix:
    """),
    code("""
    %explain F4004
    """),
    md("""
    ## Control flow and effects (F5xxx)

    Some rules are about *when* things may happen. A person cannot be asked a question
    from inside a `parallel` branch (which of the parallel questions comes first?), and
    a lambda given to a pure builtin like `map` may not call an agent — use
    `parallelMap`, which is made for it.
    """),
    code("""
    agent echo { model: "mock", output: string }
    """),
    code("""
    let both = parallel {
      a: echo("one"),
      b: approve "Go on?",
    }
    """, RAISES),
    code("""
    let shouts = map(["a", "b"], w => echo(w))
    """, RAISES),
    code("""
    try {
      echo("hi")
    } catch "limit-exceeded" as err {
      print "never"
    }
    """, RAISES),
    md("""
    That last one is a rule worth knowing: budgets (`limit-exceeded`), deadlines
    (`workflow-timeout`), cancellation and sandbox failures are *fatal* — no `catch`
    may swallow them, so a budget really is a budget (lesson 11).

    ## Limits (F6xxx)
    """),
    code("""
    workflow nightly() -> int {
      limits { agent_runs: 0, retries: 3 }
      return 1
    }
    """, RAISES),
    md("""
    ## Warnings and hints (F7xxx) do not stop a run

    A warning is shown above the run, which goes on. Here a binding is never used, a
    `verify` checks something that is always true, and a line can never be reached:
    """),
    code("""
    workflow tidy() -> string {
      let unused = 1
      verify true : "always true"
      return "ran anyway"
      print "after the return"
    }
    tidy()
    """),
    md("""
    An *info* is a gentler note: interpolating an object writes it as JSON, which is
    fine if you meant it (say so with `json(…)`):
    """),
    code("""
    let user = { name: "Ada" }
    "user: ${user}"
    """),
    md("""
    ## Checking without running

    `%check` checks the rest of the cell against the session and shows what it found,
    without running anything — handy for a cell that would call an expensive model. Here
    it finds a mistake in the last line, and the agent is never called:
    """),
    code("""
    %check
    agent pricey { model: "mock", output: { answer: string } }
    let a = pricey("What is the meaning of life?")
    a.answer + 42
    """, RAISES),
    md("""
    ## From the command line

    The same checker runs outside notebooks, with the same codes and carets:

    ```console
    $ flow check examples/triage.flow
    $ flow check broken.flow --format json     # {"diagnostics": [...]} for editors and CI
    $ flow explain F3001
    ```

    The full catalogue, generated from the checker's own registry, is in
    [`docs/diagnostics.md`](../docs/diagnostics.md).
    """),
]

"""Lesson 11 · Budgets, limits and failure reports."""

from __future__ import annotations

from lessons import RAISES, code, md

NAME = "11-budgets-limits-failures"

CELLS = [
    md("""
    # 11 · Budgets, limits and failure reports

    An agent workflow can go wrong in ways a normal program rarely does: a model that
    keeps failing its contract burns through calls, a loop waits on answers that never
    converge, a fan-out is bigger than anyone meant. Flow puts a *budget* on every run,
    enforced by the runtime, not by good intentions — and when a run does fail, it
    says where, why, and what it had already done.

    **What you will learn**

    - `limits { agent_runs, steps, duration, concurrency }`, their defaults, and how
      they nest when one workflow calls another;
    - `limit-exceeded` and `workflow-timeout`: fatal, never caught;
    - loops with `while`, `break` and `continue`, and what a step is;
    - the sandbox's memory cap (`isolate`) and why the next cell is unharmed;
    - reading a failure report; optional values with `?.` and `??`;
    - where settings live: `flow.toml`.
    """),
    md("""
    ## The defaults

    Every run has limits, even when you write none: 100 agent runs (attempts and
    repairs included), 1,000 steps, a 10-minute deadline and at most 4 agent calls in
    flight. The run view's last line shows what a run used against them:
    """),
    code("""
    agent tagger {
      model: "scripted"
      output: string[]
      script: [["billing"], ["bug"], ["docs", "export"]]
    }
    parallelMap(["Charged twice", "Crash on login", "CSV export?"], t => tagger(t))
    """),
    md("""
    ## `agent_runs`: a budget for model calls

    A `limits` block, first in a workflow (or a cell), sets its own budget. Every
    attempt is charged *before* it starts, so a budget of 3 means at most three calls
    reach the provider — here a fan-out over five tickets stops at the fourth:
    """),
    code("""
    workflow tag_all(titles: string[]) -> string[][] {
      limits { agent_runs: 3, concurrency: 1 }
      return parallelMap(titles, t => tagger(t), concurrency: 1)
    }
    tag_all(["a", "b", "c", "d", "e"])
    """, RAISES),
    md("""
    `limit-exceeded` is *fatal*: no `try`/`catch` can swallow it (the checker refuses
    to compile one that tries, lesson 9), so a budget is a budget. Budgets nest: a
    workflow called from another counts against its own limits *and* every enclosing
    one, so the caller's budget bounds everything below it.

    ## Steps, and loops

    A *step* is one executed statement or call. Steps bound loops that would not end
    by themselves. Here is a loop with `while`, `continue` and `break` — primes by
    trial division — well within its budget:
    """),
    code("""
    var primes: int[] = []
    var candidate = 1
    while candidate < 1000 {
      candidate = candidate + 1
      if candidate > 40 and not (len(primes) < 5) {
        break
      }
      if len(filter(primes, p => candidate % p == 0)) > 0 {
        continue
      }
      primes = primes + [candidate]
    }
    { primes: primes, first_three: primes[0:3], last: primes[len(primes) - 1] }
    """),
    md("""
    The same search for primes up to 10,000 needs far more steps than its budget of 500.
    The run stops at the step that went over, and the report points at it:
    """),
    code("""
    workflow primes_below(n: int) -> int[] {
      limits { steps: 500 }
      var found: int[] = []
      var k = 2
      while k < n {
        if all(found, p => k % p != 0) {
          found = found + [k]
        }
        k = k + 1
      }
      return found
    }
    len(primes_below(10000))
    """, RAISES),
    md("""
    ## `duration`: a deadline

    `duration` is the run's deadline (the earlier of its own and its caller's). A run
    past it is stopped wherever it is — here in the middle of a slow agent call — with
    `workflow-timeout`, also fatal. (An agent's own `timeout` bounds one attempt, and
    is an ordinary `agent-invocation` error that `retry` can handle, lesson 3.)
    """),
    code("""
    agent ponder {
      model: "scripted"
      script: [slow(3s, "an answer, eventually")]
    }
    workflow hurry() -> string {
      limits { duration: 500ms }
      return ponder("Think about it")
    }
    hurry()
    """, RAISES),
    md("""
    ## Memory: the sandbox's cap

    Each run's sandbox has a fixed memory cap (512 MiB by default). A value that
    doubles on every turn reaches it in a few dozen steps; the sandbox refuses the
    allocation and the run fails with `isolate`, pointing at the expression that asked
    for too much. The sandbox that grew is thrown away, so the next cell starts fresh:
    """),
    code("""
    var s = "x"
    while true {
      s = s + s
    }
    """, RAISES),
    code("""
    "the next cell runs in a fresh sandbox"
    """),
    md("""
    ## Reading a failure report

    A failed run says where it got to: the cell (or file) and line, the pipeline and
    stage, the agent call and its attempts, the reason — and the effects it had
    already made, such as an artifact it published before it failed. Here the second
    stage's `require` fails after the first stage published a report:
    """),
    code("""
    type Order = { id: string, total: number, coupon?: { code: string, percent: int } }

    let orders: Order[] = [
      { id: "A-1", total: 40, coupon: { code: "WELCOME", percent: 10 } },
      { id: "A-2", total: 25 },
    ]

    pipeline "month-end" {
      stage "summarise" {
        let discounts = map(orders, o => o.coupon?.percent ?? 0)
        publish "summary.json" { orders: len(orders), discounts: discounts }
      }
      stage "reconcile" {
        let revenue = sum(orders[*].total)
        require revenue > 100 : "revenue below the monthly minimum"
      }
    }
    """, RAISES),
    md("""
    `o.coupon?.percent` reads a field of an optional value: `null` when there is no
    coupon, and `?? 0` replaces that `null`. The checker insists on one of the two —
    using `o.coupon.percent` directly is a warning (F3003), because it may be null.

    ## A call can change its contract

    An agent's `output` type is its default; a single call may ask for another with
    the `output:` option, checked like any other type:
    """),
    code("""
    agent analyst {
      model: "mock"
      instructions: "Answer with the figures asked for."
    }
    analyst("Revenue and order count for March", output: { revenue: number, orders: int(minimum: 0) })
    """),
    md("""
    ## Where settings live: `flow.toml`

    Budgets belong in the code, next to what they bound. What belongs to the machine —
    which model `model: "default"` means, the operator policy, the programs `run` may
    start, the provider endpoints — goes in a `flow.toml` beside the notebook (or
    `[tool.flow]` in `pyproject.toml`), read by the kernel, `flow run` and `Session`:

    ```toml
    default_model = "openai/gpt-4o-mini"   # what model: "default" means
    operator = "auto-deny"                 # for unattended runs
    allow_run = [{git = ["status", "log *"]}, {sort = ["-f"]}]   # pinned arguments

    [providers.openai]                     # any OpenAI-compatible endpoint
    base_url = "http://localhost:11434/v1"
    api_key_env = "OLLAMA_API_KEY"         # the variable holding the key, never the key
    ```

    A key written in the file itself is refused: secrets stay in the environment.

    ## The end of the gallery

    You have seen all of Flow: values and types, agents under contracts, parallel
    pipelines, teams, people in the loop, tools and processes, record and replay,
    diagnostics, Flow from Python, and budgets. The reference is in
    [`docs/`](../docs/): the language guide, the runtime guide, the diagnostics
    catalogue and the performance figures.
    """),
]

"""Catalogue entries for budgets checked before a run: a workflow whose text alone spends
more agent runs or steps than its `limits` allow. Codes beyond the normative catalogue
(see `catalogue.py`); the same shape as the family tables."""

from __future__ import annotations

# (code, severity letter E/W/I, one-line summary, explanation, failing example, fixed example)
ENTRIES: tuple[tuple[str, str, str, str, str, str], ...] = (
    (
        "F6008",
        "E",
        "a workflow certainly makes more agent calls than `agent_runs` allows",
        """\
Counted from the text, every run of the workflow (or cell) that gets to its end makes
more agent calls than its `agent_runs` budget: `parallel` branches, `parallelMap` and
`for` over an array literal or `range(N)` with a literal `N` (nested ones multiply),
and calls outside `if`, `?:`, `try` and loops of unknown length. Each call takes at
least one run, so the run could only fail with `limit-exceeded` after spending the
budget; nothing runs. Set `agent_runs` to at least the number the message gives (more
if repairs or retries may happen), or make fewer calls. Calls that only some paths
make are F6006, a warning.""",
        """\
agent reviewer {
  model: "scripted"
  script: ["Fine"]
}
workflow review_all() -> string[] {
  limits { agent_runs: 3 }
  return parallelMap(range(5), i => reviewer("Review part ${i}"))
}
print review_all()
""",
        """\
agent reviewer {
  model: "scripted"
  script: ["Fine"]
}
workflow review_all() -> string[] {
  limits { agent_runs: 5 }
  return parallelMap(range(5), i => reviewer("Review part ${i}"))
}
print review_all()
""",
    ),
    (
        "F6009",
        "E",
        "a workflow certainly takes more steps than `steps` allows",
        """\
The sandbox counts a step for every statement, every builtin, agent, team, workflow
or panel call, and every call of a lambda, and stops a workflow with
`limit-exceeded` once it has taken more than `limits { steps: … }` (1000 unless
set). Counted from the text, this workflow takes more than that on every path to its
end — usually a `parallelMap`, `map` or `for` over a long literal array or
`range(N)`: a `parallelMap` item that calls an agent takes 2 steps (the lambda and
the call), so the default stops a 1,000-item fan-out near item 500. Nothing runs. Set
`steps` to at least the number the message gives.""",
        """\
agent tagger {
  model: "scripted"
  script: ["ok"]
}
workflow tag_all() -> string[] {
  limits { agent_runs: 1000 }
  return parallelMap(range(1000), i => tagger("Tag item ${i}"))
}
print len(tag_all())
""",
        """\
agent tagger {
  model: "scripted"
  script: ["ok"]
}
workflow tag_all() -> string[] {
  limits { agent_runs: 1000, steps: 2003 }
  return parallelMap(range(1000), i => tagger("Tag item ${i}"))
}
print len(tag_all())
""",
    ),
)

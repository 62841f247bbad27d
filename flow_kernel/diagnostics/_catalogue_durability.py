"""Catalogue entries for deadlines on the person: `approve … timeout T
else V` and `ask … timeout T else V`. Codes beyond the normative catalogue (see
`catalogue.py`); the same shape as the family tables."""

from __future__ import annotations

# (code, severity letter E/W/I, one-line summary, explanation, failing example, fixed example)
ENTRIES: tuple[tuple[str, str, str, str, str, str], ...] = (
    (
        "F1015",
        "E",
        "`timeout` on `approve`/`ask` without a default (`else`)",
        """\
An `approve` or `ask` has a `timeout` but no `else`. A deadline on a person says
what happens when nobody answers in time, and that answer must be written: it is
used as the operator's answer, marked `by: "timeout"` in the run's events and
journal. Add `else` and the answer: `false` (or `true`) for an `approve`, a
string (one of the choices, with `choice`) for an `ask`.""",
        """\
let ship = approve "Ship the release?" timeout 2m
print ship
""",
        """\
let ship = approve "Ship the release?" timeout 2m else false
print ship
""",
    ),
    (
        "F1016",
        "E",
        "default (`else`) on `approve`/`ask` without a `timeout`",
        """\
An `approve` or `ask` is followed by `else` and a default, but there is no
`timeout` before it. Without a deadline the run waits for the operator's answer
as long as it may, so a default could never be used. Write the deadline first:
`approve "…" timeout 2h else false`; or drop the `else` to wait for the answer.""",
        """\
let ship = approve "Ship the release?" else false
print ship
""",
        """\
let ship = approve "Ship the release?" timeout 2m else false
print ship
""",
    ),
    (
        "F5021",
        "E",
        "the default after a `timeout` is not an answer the question could get",
        """\
The default after `timeout … else` stands in for the operator's answer, so it has
the answer's type: `bool` for an `approve`, `string` for an `ask`, and one of the
listed strings for an `ask` with `choice` (the rest of the program relies on the
result being one of them). Write a default of that type, such as `false` or the
safe choice.""",
        """\
let tone = ask "Which tone?" choice ["formal", "friendly"] timeout 1m else "casual"
print tone
""",
        """\
let tone = ask "Which tone?" choice ["formal", "friendly"] timeout 1m else "formal"
print tone
""",
    ),
    (
        "F5022",
        "E",
        "a `timeout` of zero on `approve`/`ask`",
        """\
The deadline of an `approve` or `ask` is zero, so nobody could ever answer: the
default would be used at once, after showing a question no one can act on. Give
the person time (`timeout 30s`), or use the default directly instead of asking.""",
        """\
let ship = approve "Ship the release?" timeout 0ms else false
print ship
""",
        """\
let ship = approve "Ship the release?" timeout 30s else false
print ship
""",
    ),
    (
        "F5023",
        "W",
        "an `approve`/`ask` deadline longer than the workflow's `duration`",
        """\
The deadline of an `approve` or `ask` is longer than the `duration` of the
workflow (10m unless its `limits` say otherwise). A run that waits for the answer
(a person at the notebook's buttons or a terminal prompt) is still bound by its
`duration`, so it ends with `workflow-timeout` before the default can apply. Only
a deferred run (operator `defer`), which stops while it waits and checks the
deadline when it is answered or resumed, reaches it. Raise the workflow's
`duration`, or shorten the deadline.""",
        """\
workflow release() -> bool {
  limits { duration: 5m }
  let ship = approve "Ship the release?" timeout 1h else false
  return ship
}
""",
        """\
workflow release() -> bool {
  limits { duration: 2h }
  let ship = approve "Ship the release?" timeout 1h else false
  return ship
}
""",
    ),
    (
        "F5024",
        "E",
        "the default after a `timeout` has an effect",
        """\
The default after `timeout … else` is computed before the question is asked (it
travels with the request, so that the host can answer it when the deadline
passes, even for a run that stopped to wait). It may therefore not call an agent,
team or workflow, ask another question, or run a process. Compute the value
before the question with `let`, and use its name as the default.""",
        """\
agent writer { model: "scripted", script: ["formal"] }
let tone = ask "Which tone?" timeout 1m else writer("Pick a tone")
print tone
""",
        """\
agent writer { model: "scripted", script: ["formal"] }
let suggested = writer("Pick a tone")
let tone = ask "Which tone?" timeout 1m else suggested
print tone
""",
    ),
)

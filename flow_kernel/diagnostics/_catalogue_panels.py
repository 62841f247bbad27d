"""Codes beyond the normative catalogue: prompt files, models chosen by purpose,
and `rubric` / `panel` declarations (docs/language-guide.md, "Panels"). Registered through
`catalogue._ADDED`; the numbers are this topic's range (F1017-F1019, F2020-F2022,
F4025-F4034)."""

from __future__ import annotations

# (code, severity letter E/W/I, one-line summary, explanation, failing example, fixed example)
ENTRIES: tuple[tuple[str, str, str, str, str, str], ...] = (
    (
        "F4025",
        "E",
        "unknown model purpose",
        """\
`model: "for:<purpose>"` chooses the model by what the call needs, through the
`[models]` table of flow.toml. The purposes are fixed: `deep-judgement`,
`structured-authoring`, `high-volume-mechanical`, `long-context-analysis` and
`visual-judgement`. Any other name after `for:` is a mistake (often a spelling),
so it is refused rather than falling back to some other model.""",
        """\
agent reviewer {
  model: "for:deep-judgment"
}
print reviewer("Is this plan sound?")
""",
        """\
agent reviewer {
  model: "openai/gpt-4o"
}
print reviewer("Is this plan sound?")
""",
    ),
    (
        "F4026",
        "E",
        "no model configured for a purpose",
        """\
In a file (`flow check`, `flow run`) an agent whose model is `for:<purpose>` needs
the configuration to say which model serves that purpose: a line such as
`deep-judgement = "anthropic/claude-sonnet-4-5"` under `[models]` in flow.toml (or
`[tool.flow.models]` in pyproject.toml). Nothing is guessed: with no line for the
purpose the file does not compile (in a notebook the call fails when it runs, with
the same instruction). Set the key the message names, or choose a model directly,
or write `"for:<purpose> else default"` to fall back to the session's model (the
run then records that it did).""",
        """\
agent reviewer {
  model: "for:deep-judgement"
}
print reviewer("Is this plan sound?")
""",
        """\
agent reviewer {
  model: "anthropic/claude-sonnet-4-5"
}
print reviewer("Is this plan sound?")
""",
    ),
    (
        "F4033",
        "E",
        "malformed `file(…)`",
        """\
`file("path")` reads a prompt's text from a file beside the program (an agent's
`role`, `persona`, `instructions`, `uncertainty`, an item of `constraints` or
`hints`, a rubric criterion's `description`), or stands as a string anywhere with values for
its placeholders: `file("path", { name: value })` (F4035, F4036). The file is read
when the program is checked, so the path must be one constant string (no
interpolation), and the values, when given, one object literal.""",
        """\
let name = "triage"
agent triager {
  model: "mock"
  instructions: file("prompts/${name}.md")
}
print triager("Ticket 1")
""",
        """\
agent triager {
  model: "mock"
  instructions: file("prompts/triage.md")
}
print triager("Ticket 1")
# %% file prompts/triage.md
Classify the ticket in one sentence.
""",
    ),
    (
        "F4027",
        "E",
        "unknown rubric or panel field",
        """\
A `rubric` or `panel` declaration has a field Flow does not know. A rubric has
`criteria`; a panel has `experts`, `rubric`, `judge`, `rounds` and `converge`.
Each field changes what the panel does, so a misspelt one is refused rather than
silently ignored.""",
        """\
rubric essay {
  criteria: [
    { id: "accuracy", description: "Facts are right", weight: 3, scale: 5 },
    { id: "clarity", description: "Easy to read", weight: 1 },
  ]
}
agent historian { model: "mock" }
agent stylist { model: "mock" }
panel review {
  experts: [{ agent: historian, domain: "history" }, { agent: stylist, domain: "prose" }]
  rubric: essay
  round: 2
  converge: { spread: 1 }
}
print review("An essay about 1066").status
""",
        """\
rubric essay {
  criteria: [
    { id: "accuracy", description: "Facts are right", weight: 3, scale: 5 },
    { id: "clarity", description: "Easy to read", weight: 1 },
  ]
}
agent historian { model: "mock" }
agent stylist { model: "mock" }
panel review {
  experts: [{ agent: historian, domain: "history" }, { agent: stylist, domain: "prose" }]
  rubric: essay
  rounds: 2
  converge: { spread: 1 }
}
print review("An essay about 1066").status
""",
    ),
    (
        "F4028",
        "E",
        "malformed rubric criterion",
        """\
A rubric's `criteria` is a non-empty list of objects `{ id, description,
weight, scale }`: `id` a constant name, unique in the rubric (it is the key of each
expert's scores); `description` a string or `file("…")`; `weight` a positive
number (default 1); `scale` the top score (`5` means whole scores 1 to 5, the
default) or `[lowest, highest]`. The experts' answers are validated against these,
so a criterion that cannot be scored is refused here.""",
        """\
rubric essay {
  criteria: [
    { id: "accuracy", description: "Facts are right", weight: 3, scale: 5 },
    { id: "clarity", description: "Easy to read", weight: 0, scale: 1 },
  ]
}
agent historian { model: "mock" }
agent stylist { model: "mock" }
panel review {
  experts: [{ agent: historian, domain: "history" }, { agent: stylist, domain: "prose" }]
  rubric: essay
  rounds: 2
  converge: { spread: 1 }
}
print review("An essay about 1066").status
""",
        """\
rubric essay {
  criteria: [
    { id: "accuracy", description: "Facts are right", weight: 3, scale: 5 },
    { id: "clarity", description: "Easy to read", weight: 1 },
  ]
}
agent historian { model: "mock" }
agent stylist { model: "mock" }
panel review {
  experts: [{ agent: historian, domain: "history" }, { agent: stylist, domain: "prose" }]
  rubric: essay
  rounds: 2
  converge: { spread: 1 }
}
print review("An essay about 1066").status
""",
    ),
    (
        "F4029",
        "E",
        "a panel member is not an agent",
        """\
Each of a panel's `experts` names an agent (`{ agent: name, domain: "…" }`), and
so does its `judge`. A name that is not a declared agent — a typo, a team, a tool —
is refused: the panel calls these agents for its verdicts and its synthesis.""",
        """\
rubric essay {
  criteria: [
    { id: "accuracy", description: "Facts are right", weight: 3, scale: 5 },
    { id: "clarity", description: "Easy to read", weight: 1 },
  ]
}
agent historian { model: "mock" }
agent stylist { model: "mock" }
panel review {
  experts: [{ agent: historian, domain: "history" }, { agent: styler, domain: "prose" }]
  rubric: essay
  rounds: 2
  converge: { spread: 1 }
}
print review("An essay about 1066").status
""",
        """\
rubric essay {
  criteria: [
    { id: "accuracy", description: "Facts are right", weight: 3, scale: 5 },
    { id: "clarity", description: "Easy to read", weight: 1 },
  ]
}
agent historian { model: "mock" }
agent stylist { model: "mock" }
panel review {
  experts: [{ agent: historian, domain: "history" }, { agent: stylist, domain: "prose" }]
  rubric: essay
  rounds: 2
  converge: { spread: 1 }
}
print review("An essay about 1066").status
""",
    ),
    (
        "F4030",
        "E",
        "malformed panel field",
        """\
A panel needs `experts` (a non-empty list of `{ agent: name, domain: "…" }`,
each agent once, each with the domain it judges from) and a `rubric`; `rounds` is a
whole number from 1 to 10 (default 1) and `converge` is `{ spread: x }`: the panel
has converged when, on every criterion, the experts' scores differ by at most x
(default 0, unanimity).""",
        """\
rubric essay {
  criteria: [
    { id: "accuracy", description: "Facts are right", weight: 3, scale: 5 },
    { id: "clarity", description: "Easy to read", weight: 1 },
  ]
}
agent historian { model: "mock" }
agent stylist { model: "mock" }
panel review {
  experts: [{ agent: historian, domain: "history" }, { agent: stylist, domain: "prose" }]
  rubric: essay
  rounds: 0
  converge: { spread: 1 }
}
print review("An essay about 1066").status
""",
        """\
rubric essay {
  criteria: [
    { id: "accuracy", description: "Facts are right", weight: 3, scale: 5 },
    { id: "clarity", description: "Easy to read", weight: 1 },
  ]
}
agent historian { model: "mock" }
agent stylist { model: "mock" }
panel review {
  experts: [{ agent: historian, domain: "history" }, { agent: stylist, domain: "prose" }]
  rubric: essay
  rounds: 2
  converge: { spread: 1 }
}
print review("An essay about 1066").status
""",
    ),
    (
        "F4031",
        "E",
        "a panel's rubric is not a rubric",
        """\
A panel's `rubric` names a `rubric` declaration: its criteria become the
experts' output contract and the weights of the aggregate. Any other name, or an
unknown one, is refused.""",
        """\
rubric essay {
  criteria: [
    { id: "accuracy", description: "Facts are right", weight: 3, scale: 5 },
    { id: "clarity", description: "Easy to read", weight: 1 },
  ]
}
agent historian { model: "mock" }
agent stylist { model: "mock" }
panel review {
  experts: [{ agent: historian, domain: "history" }, { agent: stylist, domain: "prose" }]
  rubric: historian
  rounds: 2
  converge: { spread: 1 }
}
print review("An essay about 1066").status
""",
        """\
rubric essay {
  criteria: [
    { id: "accuracy", description: "Facts are right", weight: 3, scale: 5 },
    { id: "clarity", description: "Easy to read", weight: 1 },
  ]
}
agent historian { model: "mock" }
agent stylist { model: "mock" }
panel review {
  experts: [{ agent: historian, domain: "history" }, { agent: stylist, domain: "prose" }]
  rubric: essay
  rounds: 2
  converge: { spread: 1 }
}
print review("An essay about 1066").status
""",
    ),
    (
        "F4032",
        "E",
        "bad panel call",
        """\
A panel is called on one candidate, `review(candidate)`, with the options
`label` (its identity for replay) and `context` (more data for the experts). A call
with no candidate, several, or another option is refused; to judge several
candidates, call the panel for each, for instance in `parallelMap`.""",
        """\
rubric essay {
  criteria: [
    { id: "accuracy", description: "Facts are right", weight: 3, scale: 5 },
    { id: "clarity", description: "Easy to read", weight: 1 },
  ]
}
agent historian { model: "mock" }
agent stylist { model: "mock" }
panel review {
  experts: [{ agent: historian, domain: "history" }, { agent: stylist, domain: "prose" }]
  rubric: essay
  rounds: 2
  converge: { spread: 1 }
}
print review("An essay", "Another essay").status
""",
        """\
rubric essay {
  criteria: [
    { id: "accuracy", description: "Facts are right", weight: 3, scale: 5 },
    { id: "clarity", description: "Easy to read", weight: 1 },
  ]
}
agent historian { model: "mock" }
agent stylist { model: "mock" }
panel review {
  experts: [{ agent: historian, domain: "history" }, { agent: stylist, domain: "prose" }]
  rubric: essay
  rounds: 2
  converge: { spread: 1 }
}
print review("An essay", label: "essay-1").status
""",
    ),
    (
        "F4034",
        "W",
        "a panel cannot finish a round within `agent_runs`",
        """\
A panel call costs at least one agent run per expert for its first round, and one
more for the judge's synthesis. When the workflow's `agent_runs` is smaller, the
panel can only stop with status `budget-exhausted` before any round is complete,
so its record has no aggregate. Raise the limit, or use fewer experts.""",
        """\
rubric essay {
  criteria: [{ id: "accuracy", description: "Facts are right" }]
}
agent historian { model: "mock" }
agent stylist { model: "mock" }
agent chair { model: "mock" }
panel review {
  experts: [{ agent: historian, domain: "history" }, { agent: stylist, domain: "prose" }]
  rubric: essay
  judge: chair
}
workflow judge_it(text: string) -> string {
  limits { agent_runs: 2 }
  return review(text).status
}
""",
        """\
rubric essay {
  criteria: [{ id: "accuracy", description: "Facts are right" }]
}
agent historian { model: "mock" }
agent stylist { model: "mock" }
agent chair { model: "mock" }
panel review {
  experts: [{ agent: historian, domain: "history" }, { agent: stylist, domain: "prose" }]
  rubric: essay
  judge: chair
}
workflow judge_it(text: string) -> string {
  limits { agent_runs: 6 }
  return review(text).status
}
""",
    ),
)

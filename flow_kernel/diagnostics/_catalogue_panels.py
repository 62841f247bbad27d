"""Codes of issue 22 beyond the normative catalogue: prompt files, models chosen by purpose,
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
the same instruction). Set the key the message names, or choose a model directly.""",
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
`hints`, a rubric criterion's `description`). The file is read when the program is
checked, so the path must be one constant string: no interpolation, no other
arguments.""",
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
)

"""Codes beyond the normative catalogue: prompt variables (`file(PATH, { name: value })`)
and the tool calls an attempt may make (`max_tool_calls`) (docs/language-guide.md, "Prompts
in files" and "Tool calls"). Registered through `catalogue._ADDED`; the numbers are this
topic's range (F4035-F4037)."""

from __future__ import annotations

# (code, severity letter E/W/I, one-line summary, explanation, failing example, fixed example)
ENTRIES: tuple[tuple[str, str, str, str, str, str], ...] = (
    (
        "F4035",
        "E",
        "a prompt file's placeholder has no value",
        """\
A prompt file read with `file(PATH)` or `file(PATH, { name: value, … })` may hold
placeholders, `{{name}}`, each filled with the value of the same name. The file is
read when the program is checked, so a placeholder that no value fills is known
then: the message names it and the line of the file it is on. Give it a value in
the object after the path (or take the placeholder out of the file); nothing is
left unfilled or filled with an empty string at run time.""",
        """\
agent triager {
  model: "mock"
  instructions: file("prompts/triage.md", { team: "billing" })
}
print triager("Ticket 1")
# %% file prompts/triage.md
You triage tickets for the {{team}} team, in {{language}}.
""",
        """\
agent triager {
  model: "mock"
  instructions: file("prompts/triage.md", { team: "billing", language: "English" })
}
print triager("Ticket 1")
# %% file prompts/triage.md
You triage tickets for the {{team}} team, in {{language}}.
""",
    ),
    (
        "F4036",
        "E",
        "a prompt variable that the file never uses",
        """\
`file(PATH, { name: value, … })` fills the file's `{{name}}` placeholders. A value
whose name no placeholder of the file uses would be dropped without a word, which
almost always means a misspelt name or a file that changed; so it is an error that
names the key. Rename the key to the placeholder it was meant for, add the
placeholder to the file, or remove the value.""",
        """\
agent triager {
  model: "mock"
  instructions: file("prompts/triage.md", { team: "billing", tone: "kind" })
}
print triager("Ticket 1")
# %% file prompts/triage.md
You triage tickets for the {{team}} team.
""",
        """\
agent triager {
  model: "mock"
  instructions: file("prompts/triage.md", { team: "billing" })
}
print triager("Ticket 1")
# %% file prompts/triage.md
You triage tickets for the {{team}} team.
""",
    ),
    (
        "F4037",
        "E",
        "invalid `max_tool_calls`",
        """\
`max_tool_calls` bounds the tool calls one attempt of an agent call may make: an
agent field (`max_tool_calls: 3`, for every call of the agent) or a call option
(`max_tool_calls: 12`, for that call), 8 when neither says. It must be a positive
integer; an agent's must be a constant. A model that asks for one more call than
allowed fails the attempt with `agent-invocation`, whose message names the
limit.""",
        """\
tool lookup(id: string) -> string
agent clerk {
  model: "mock"
  tools: [lookup]
  max_tool_calls: 0
}
print clerk("Find order 42")
""",
        """\
tool lookup(id: string) -> string
agent clerk {
  model: "mock"
  tools: [lookup]
  max_tool_calls: 2
}
print clerk("Find order 42")
""",
    ),
)

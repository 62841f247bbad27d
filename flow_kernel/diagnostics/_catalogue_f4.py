"""The catalogue of F4xxx (agents, teams, tools), in the shape `catalogue.py` describes."""

from __future__ import annotations

ENTRIES: tuple[tuple[str, str, str, str, str, str], ...] = (
    # ------------------------------------------------------------------ F4xxx agents, teams, tools
    (
        "F4001",
        "E",
        "unknown agent field",
        """\
An `agent` declaration has a field that Flow does not know. The fields are fixed
(`model`, `role`, `persona`, `instructions`, `constraints`, `hints`,
`uncertainty`, `tools`, `output`, `repair`, `retry`, `timeout`, `temperature`,
`script`, `max_tool_calls`), because each one is compiled into the prompt or the call contract and
a misspelt field would otherwise be silently ignored. Fix the spelling, or move
the text into one of the known fields such as `persona` or `instructions`.""",
        """\
agent greeter {
  model: "scripted"
  script: ["Hello!"]
  mood: "cheerful"
}
print greeter("Say hello")
""",
        """\
agent greeter {
  model: "scripted"
  script: ["Hello!"]
  persona: "cheerful"
}
print greeter("Say hello")
""",
    ),
    (
        "F4002",
        "E",
        "invalid agent field value (negative `repair`, `timeout` not a duration, …)",
        """\
A known agent field has a value of the wrong kind: `repair` must be a
non-negative integer, `timeout` a positive duration such as `30s`, `temperature`
a number between 0 and 2, `retry` an object `{ on: [...], attempts: n, backoff:
duration }`, and the text fields constant strings. Agent fields are checked when
the file compiles so that a bad setting never reaches a provider. Write the value
in the expected form; for example, a timeout needs a unit (`30s`, not `30`).""",
        """\
agent greeter {
  model: "scripted"
  script: ["Hello!"]
  timeout: 30
}
print greeter("Say hello")
""",
        """\
agent greeter {
  model: "scripted"
  script: ["Hello!"]
  timeout: 30s
}
print greeter("Say hello")
""",
    ),
    (
        "F4003",
        "E",
        "`retry.on` names an unknown error code",
        """\
`retry.on` lists runtime error codes (see `runtime.md` §5), never messages, and
one of the entries is not a known code. An unknown code would never match, so the
retry you asked for would silently never happen. Use one of the retryable codes,
`agent-invocation` or `output-validation` (naming any other known code is F4004).""",
        """\
agent greeter {
  model: "scripted"
  script: ["Hello!"]
  retry: { on: ["network-error"], attempts: 3 }
}
print greeter("Say hello")
""",
        """\
agent greeter {
  model: "scripted"
  script: ["Hello!"]
  retry: { on: ["agent-invocation"], attempts: 3 }
}
print greeter("Say hello")
""",
    ),
    (
        "F4004",
        "E",
        "`retry.on` names a code that cannot be retried (only `agent-invocation` and `output-validation` can)",
        """\
`retry.on` names a real runtime error code, but not one that an agent retry can
recover from. Only a failed invocation (`agent-invocation`) and invalid output
after the repairs are used up (`output-validation`) are retried; errors such as
`evaluation`, `capability-violation` or `limit-exceeded` would fail the same way
again, or must never be retried. Keep only `agent-invocation` and/or
`output-validation` in the list (an unknown code is F4003 instead).""",
        """\
agent greeter {
  model: "scripted"
  script: ["Hello!"]
  retry: { on: ["evaluation"], attempts: 2 }
}
print greeter("Say hello")
""",
        """\
agent greeter {
  model: "scripted"
  script: ["Hello!"]
  retry: { on: ["output-validation"], attempts: 2 }
}
print greeter("Say hello")
""",
    ),
    (
        "F4005",
        "E",
        "team `main` or member is not an agent",
        """\
A team's `main` or one of its `members` names a declaration that exists but is
not an agent, such as a tool, a workflow or a type. A team only groups agents:
calling `team.main(...)` or `team.member(...)` must invoke an agent. Name an agent
there (a name that is not declared at all is F2008).""",
        """\
tool lookup(query: string) -> string
agent writer {
  model: "scripted"
  script: ["A draft"]
  tools: [lookup]
}
team crew { main: writer, members: [lookup] }
print crew.main("Write a draft")
""",
        """\
tool lookup(query: string) -> string
agent writer {
  model: "scripted"
  script: ["A draft"]
  tools: [lookup]
}
agent reviewer {
  model: "scripted"
  script: ["Looks good"]
}
team crew { main: writer, members: [reviewer] }
print crew.main("Write a draft")
""",
    ),
    (
        "F4006",
        "E",
        "static team member access to an agent that is not a member",
        """\
`team.name(prompt)` calls one of the team's `members`, and `name` is not among
them. The team's main agent is called as `team.main(prompt)`, not by its own
name. Membership is checked statically so that a team only ever uses the agents
it declares. Call `team.main(...)` for the main agent, add the agent to the
team's `members`, or use `team.member(nameExpr, prompt)` when the name is only
known at run time (a non-member is then a `capability-violation` error).""",
        """\
agent lead {
  model: "scripted"
  script: ["Plan"]
}
agent writer {
  model: "scripted"
  script: ["Draft"]
}
team crew { main: lead, members: [writer] }
print crew.lead("Plan the work")
""",
        """\
agent lead {
  model: "scripted"
  script: ["Plan"]
}
agent writer {
  model: "scripted"
  script: ["Draft"]
}
team crew { main: lead, members: [writer] }
print crew.main("Plan the work")
""",
    ),
    (
        "F4007",
        "E",
        "agent `tools` names an unknown tool",
        """\
An agent's `tools` list (or a call's `tools:` option) names something that is
not a declared `tool`: the name is undeclared, misspelt, or refers to an agent,
workflow or type. Agents may only be given host tools declared with `tool
name(...) -> Type`. Declare the tool, or fix the name (the hint suggests the
closest declared tool).""",
        """\
agent helper {
  model: "scripted"
  script: ["Try restarting it"]
  tools: [search_kb]
}
print helper("My printer is jammed")
""",
        """\
tool search_kb(query: string) -> string[]
agent helper {
  model: "scripted"
  script: ["Try restarting it"]
  tools: [search_kb]
}
print helper("My printer is jammed")
""",
    ),
    (
        "F4008",
        "E",
        "agent prompt is not a string",
        """\
The first argument of an agent or team call is the prompt, and it must be a
`string`. Structured data belongs in the `context:` option, where it is sent to
the model as untrusted data next to the prompt. Pass a string (interpolation
works, e.g. `"Ticket ${id}"`), and move other values into `context:`.""",
        """\
agent helper {
  model: "scripted"
  script: ["Done"]
}
print helper({ ticket: "T1" })
""",
        """\
agent helper {
  model: "scripted"
  script: ["Done"]
}
print helper("Handle the ticket", context: { ticket: "T1" })
""",
    ),
    (
        "F4009",
        "E",
        "`choice` combined with `output`",
        """\
A call gives both `choice:` and `output:`. A `choice` call already has an output
type, the union of its string literals (its schema is a string `enum`), so an
additional `output` type would contradict it. Keep `choice` for a pick among
fixed strings, or `output` for structured output, but not both.""",
        """\
agent reviewer {
  model: "scripted"
  script: ["accept"]
}
let verdict = reviewer("Accept this draft?", choice: ["accept", "revise"], output: string)
print verdict
""",
        """\
agent reviewer {
  model: "scripted"
  script: ["accept"]
}
let verdict = reviewer("Accept this draft?", choice: ["accept", "revise"])
print verdict
""",
    ),
    (
        "F4010",
        "E",
        "`fallback` is not one of the `choice` values",
        """\
A call's `fallback:` is returned when the model's answers stay outside the
`choice` values after every repair, so it must itself be one of those values;
otherwise the call could return something its type does not allow. Use one of the
listed choices as the fallback, or add the fallback to the choices.""",
        """\
agent reviewer {
  model: "scripted"
  script: ["accept"]
}
let verdict = reviewer("Accept this draft?", choice: ["accept", "revise"], fallback: "reject")
print verdict
""",
        """\
agent reviewer {
  model: "scripted"
  script: ["accept"]
}
let verdict = reviewer("Accept this draft?", choice: ["accept", "revise"], fallback: "revise")
print verdict
""",
    ),
    (
        "F4011",
        "E",
        "`fallback` without `choice`",
        """\
`fallback:` only makes sense together with `choice:`: it is the choice returned
when the model never gives one of the allowed answers. Without `choice` there is
no fixed set of answers to fall back within. Add a `choice:` list that contains
the fallback, or remove `fallback:`.""",
        """\
agent reviewer {
  model: "scripted"
  script: ["accept"]
}
let verdict = reviewer("Accept this draft?", fallback: "revise")
print verdict
""",
        """\
agent reviewer {
  model: "scripted"
  script: ["accept"]
}
let verdict = reviewer("Accept this draft?", choice: ["accept", "revise"], fallback: "revise")
print verdict
""",
    ),
    (
        "F4012",
        "E",
        "the same explicit call label twice in one workflow",
        """\
Two agent calls in one workflow (or in the top-level statements of a cell) carry
the same explicit `label:`. Labels give calls a stable identity for record and
replay, so two calls with one label could not be told apart in a cassette. Give
each call its own label, or drop `label:` to use the default
`<agent>@<line>:<column>`.""",
        """\
agent writer {
  model: "scripted"
  script: ["One", "Two"]
}
let title = writer("Write a title", label: "draft")
let subtitle = writer("Write a subtitle", label: "draft")
print "${title} / ${subtitle}"
""",
        """\
agent writer {
  model: "scripted"
  script: ["One", "Two"]
}
let title = writer("Write a title", label: "title")
let subtitle = writer("Write a subtitle", label: "subtitle")
print "${title} / ${subtitle}"
""",
    ),
    (
        "F4013",
        "E",
        "`expect` after something that is not an agent call",
        """\
`expect cond : "message"` checks an agent's candidate output and feeds failures
back into the repair loop, so it may only follow an agent or team call that is a
whole right-hand side of `let`/`var`/assignment/`return`, a whole lambda body or
an expression statement. After any other expression there is no model to repair.
To check an ordinary value, use `require` (fails the run) or `verify` (records the
result) instead.""",
        """\
workflow tally(xs: int[]) -> int {
  let total = sum(xs)
    expect it > 0 : "the total must be positive"
  return total
}
print tally([1, 2])
""",
        """\
workflow tally(xs: int[]) -> int {
  let total = sum(xs)
  require total > 0 : "the total must be positive"
  return total
}
print tally([1, 2])
""",
    ),
    (
        "F4014",
        "E",
        "invalid tool signature",
        """\
A `tool` declaration is not a valid signature: it has no `-> Type` return type,
or two parameters with the same name. Tools are implemented on the host, and the
agent is given their JSON Schema, so both the parameters and the result must be
fully described. Write `tool name(param: Type, ...) -> Type` with distinct
parameter names.""",
        """\
tool search_kb(query: string, query: int) -> string[]
agent helper {
  model: "scripted"
  script: ["Try restarting it"]
  tools: [search_kb]
}
print helper("My printer is jammed")
""",
        """\
tool search_kb(query: string, limit: int) -> string[]
agent helper {
  model: "scripted"
  script: ["Try restarting it"]
  tools: [search_kb]
}
print helper("My printer is jammed")
""",
    ),
    (
        "F4015",
        "E",
        "malformed `model` (`provider/model`, `default`, `mock` or `scripted`)",
        """\
An agent's `model` is not one of the accepted forms: `"provider/model"` (such as
`"openai/gpt-4o-mini"`), `"default"` (resolved from the session configuration),
`"mock"` or `"scripted"`. Without a provider prefix Flow cannot know which
provider to call. Add the provider, or use `"default"` to let the session decide.""",
        """\
agent helper {
  model: "gpt-4o-mini"
}
print helper("Say hello")
""",
        """\
agent helper {
  model: "openai/gpt-4o-mini"
}
print helper("Say hello")
""",
    ),
    (
        "F4016",
        "W",
        "agent listed twice in a team, or `main` also listed as a member",
        """\
A team lists the same agent twice among its `members`, or lists its `main` agent
as a member too. The team still works, because `team.name(...)` resolves the same
agent either way, but the duplicate is almost always a copy-and-paste slip (often
a different agent was meant). Remove the duplicate entry, or name the agent you
meant.""",
        """\
agent lead {
  model: "scripted"
  script: ["Plan"]
}
agent writer {
  model: "scripted"
  script: ["Draft"]
}
team crew { main: lead, members: [writer, writer] }
print crew.writer("Write a draft")
""",
        """\
agent lead {
  model: "scripted"
  script: ["Plan"]
}
agent writer {
  model: "scripted"
  script: ["Draft"]
}
team crew { main: lead, members: [writer] }
print crew.writer("Write a draft")
""",
    ),
    (
        "F4017",
        "E",
        "`script` on an agent whose model is not `scripted`, or malformed script entry",
        """\
A `script` gives the replies of the deterministic `scripted` provider, so it is
only meaningful with `model: "scripted"`; with any other model it would be
ignored. Script entries must be JSON values, `when("text", value)`,
`fail("agent-invocation" | "output-validation", "message")` or `slow(duration,
value)`. Set `model: "scripted"` or remove the script, and fix any malformed
entry.""",
        """\
agent greeter {
  model: "mock"
  script: ["Hello!"]
}
print greeter("Say hello")
""",
        """\
agent greeter {
  model: "scripted"
  script: ["Hello!"]
}
print greeter("Say hello")
""",
    ),
    (
        "F4018",
        "W",
        "`scripted` agent without a `script`",
        """\
An agent uses `model: "scripted"` but has no `script`. A script with no entries
answers nothing, so every call to the agent fails with `agent-invocation` at run
time. Add a `script: [...]` with the replies, or use `model: "mock"` to get
generated, schema-valid values without writing them.""",
        """\
agent greeter {
  model: "scripted"
}
print greeter("Say hello")
""",
        """\
agent greeter {
  model: "scripted"
  script: ["Hello!"]
}
print greeter("Say hello")
""",
    ),
)

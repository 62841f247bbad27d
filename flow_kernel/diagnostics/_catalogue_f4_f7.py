"""Catalogue entries for the families F4xxx (agents, teams, tools), F5xxx (control
flow, concurrency, effects), F6xxx (limits and durations) and F7xxx (hints): code,
severity letter, summary, explanation, failing example and fixed example (see
`diagnostics.md`, which is normative for codes and severities)."""

from __future__ import annotations

# (code, severity letter E/W/I, one-line summary, explanation, failing example, fixed example)
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
`script`), because each one is compiled into the prompt or the call contract and
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
    # ------------------------------------------------------------------ F5xxx control flow, concurrency, effects
    (
        "F5001",
        "E",
        "`async` not at the top level of a workflow or cell",
        """\
`async name { … }` starts a background task, and it may only stand at the top
level of a workflow body or cell (inside `stage` and `pipeline` bodies too, since
they open no scope), not inside `if`, loops, `try`, lambdas or other blocks.
Keeping tasks at the top level lets the compiler see every task, its name and its
`await`. Move the `async` statement out of the block (inside an `async` body,
F5002 is reported instead).""",
        """\
agent checker {
  model: "scripted"
  script: ["All good"]
}
let urgent = true
if urgent {
  async check { let report = checker("Check the build") }
  await check
  print check.report
}
""",
        """\
agent checker {
  model: "scripted"
  script: ["All good"]
}
async check { let report = checker("Check the build") }
await check
print check.report
""",
    ),
    (
        "F5002",
        "E",
        "`approve`, `ask`, `use`, `async` or `await` inside an `async` body",
        """\
An `async` body runs in the background while the workflow goes on, so it may not
pause for the operator (`approve`, `ask`), load declarations (`use`), or start or
wait for other tasks (`async`, `await`). For a nested `async`, this code is
reported rather than F5001. Do the operator interaction or task handling before
or after the task, in the workflow itself, and pass the result in: the task sees
a snapshot of the bindings made before it was launched.""",
        """\
agent writer {
  model: "scripted"
  script: ["A short text"]
}
async draft {
  let topic = ask "Which topic?"
  let text = writer("Write about ${topic}")
}
await draft
print draft.text
""",
        """\
agent writer {
  model: "scripted"
  script: ["A short text"]
}
let topic = ask "Which topic?"
async draft {
  let text = writer("Write about ${topic}")
}
await draft
print draft.text
""",
    ),
    (
        "F5003",
        "E",
        "duplicate task name",
        """\
Two `async` tasks in one workflow or cell have the same name. A task's name is
how `await name` and `name.field` refer to it, so it must be unique. Rename one
of the tasks (a task name that collides with a binding is F2016).""",
        """\
agent reviewer {
  model: "scripted"
  script: ["Fine"]
}
async review { let notes = reviewer("Review the frontend") }
async review { let notes = reviewer("Review the backend") }
await review
print review.notes
""",
        """\
agent reviewer {
  model: "scripted"
  script: ["Fine"]
}
async frontend { let notes = reviewer("Review the frontend") }
async backend { let notes = reviewer("Review the backend") }
await frontend
await backend
print "${frontend.notes} / ${backend.notes}"
""",
    ),
    (
        "F5004",
        "E",
        "task result read before `await`",
        """\
A task's field (`task.x`) is read at a point that comes textually before `await
task`. Until the task has been awaited its bindings may not exist yet, so reading
them would be a race. Put `await task` before the first read of its fields.""",
        """\
agent checker {
  model: "scripted"
  script: ["All good"]
}
async check { let report = checker("Check the build") }
print check.report
await check
""",
        """\
agent checker {
  model: "scripted"
  script: ["All good"]
}
async check { let report = checker("Check the build") }
await check
print check.report
""",
    ),
    (
        "F5005",
        "E",
        "assignment to an outer `var` inside a lambda or an `async` body (a race)",
        """\
A lambda or an `async` body assigns to a `var` declared outside it. Lambdas given
to `parallelMap` and `async` bodies run concurrently with other code, and an
`async` body works on a snapshot of the bindings, so such an assignment would be a
data race or be lost. Make the task or lambda produce a value instead (a binding
at the task's top level, or the lambda's result), and assign it to the outer
`var` after `await` or after the call.""",
        """\
var total = 0
async count {
  total = total + 1
}
await count
print total
""",
        """\
var total = 0
async count {
  let next = total + 1
}
await count
total = count.next
print total
""",
    ),
    (
        "F5006",
        "E",
        "lambda outside a builtin or `parallelMap` argument",
        """\
A lambda `x => …` appears somewhere other than as a direct argument of a builtin
that takes one (`map`, `filter`, `sortBy`, …) or of `parallelMap`. No value of the
Flow language is a function, so a lambda cannot be bound to a name, stored or
passed to a workflow or agent. Write the lambda directly where it is used.""",
        """\
let double = x => x * 2
""",
        """\
let doubled = map([1, 2, 3], x => x * 2)
print doubled
""",
    ),
    (
        "F5007",
        "W",
        "unreachable code",
        """\
A statement follows `return`, `break` or `continue` in the same block, so it can
never run. This is usually left over from editing, or a sign that the order of
statements is wrong. Remove the dead statement, or move it before the statement
that leaves the block.""",
        """\
workflow greet(name: string) -> string {
  return "Hello, ${name}"
  print "greeted ${name}"
}
print greet("Ada")
""",
        """\
workflow greet(name: string) -> string {
  print "greeted ${name}"
  return "Hello, ${name}"
}
print greet("Ada")
""",
    ),
    (
        "F5008",
        "E",
        "`break` / `continue` outside a loop",
        """\
`break` and `continue` leave or restart the innermost `for` or `while` loop, but
this one is not inside any loop (an `if` is not a loop, and a lambda body ends the
loop's reach). Put the statement inside a loop, or use `if`/`else` to skip the
code instead.""",
        """\
let n = 3
if n > 2 {
  break
}
print n
""",
        """\
for n in [1, 2, 3] {
  if n > 2 {
    break
  }
  print n
}
""",
    ),
    (
        "F5009",
        "E",
        "empty `parallel`",
        """\
A `parallel { … }` block has no branches, so it would do nothing and produce an
empty object. Add at least one `name: expression` branch, or remove the block.""",
        """\
let results = parallel {}
print results
""",
        """\
let results = parallel { total: sum([1, 2]) }
print results
""",
    ),
    (
        "F5010",
        "E",
        "duplicate `parallel` branch name",
        """\
Two branches of one `parallel` block have the same name. The result of
`parallel` is an object with one field per branch, and JSON objects have unique
keys, so one of the results would be lost. Give every branch its own name.""",
        """\
agent reviewer {
  model: "scripted"
  script: ["Fine"]
}
let reviews = parallel {
  review: reviewer("Review the style")
  review: reviewer("Review the facts")
}
print reviews
""",
        """\
agent reviewer {
  model: "scripted"
  script: ["Fine"]
}
let reviews = parallel {
  style: reviewer("Review the style")
  facts: reviewer("Review the facts")
}
print reviews
""",
    ),
    (
        "F5011",
        "E",
        "`approve` / `ask` inside `parallel` or `parallelMap`",
        """\
`approve` or `ask` appears in a `parallel` branch or a `parallelMap` lambda.
Operator questions pause the run for a person, and asking several at once from
concurrent branches would be confusing and nondeterministic. Ask before the
parallel part (once, or in a sequential `for` loop) and use the answers inside it.""",
        """\
agent writer {
  model: "scripted"
  script: ["A draft"]
}
let results = parallel {
  draft: writer("Write a draft")
  ok: approve "Publish the draft?"
}
print results
""",
        """\
agent writer {
  model: "scripted"
  script: ["A draft"]
}
let ok = approve "Publish the draft?"
let results = parallel {
  draft: writer("Write a draft")
}
print ok ? results.draft : "not published"
""",
    ),
    (
        "F5012",
        "E",
        "`emit` of a kind other than `progress`",
        """\
`emit KIND E` sends an event, and `progress` is the only kind a workflow may emit
(it drives the progress bars of the run view). Other event kinds are produced by
the runtime itself. Use `emit progress { done: n, total: m, message: "…" }`, or
`log`/`print` for other information.""",
        """\
emit status { done: 1, total: 2 }
""",
        """\
emit progress { done: 1, total: 2 }
""",
    ),
    (
        "F5013",
        "E",
        "`progress` payload is not an object, or `done`/`total` not numbers",
        """\
The payload of `emit progress` must be an object `{done: n, total: m, message:
"…"}` whose fields are all optional, with `done` and `total` numbers. The run view
draws progress bars from these fields, so other shapes cannot be shown. Pass an
object with numeric `done`/`total` and put any text in `message`.""",
        """\
emit progress "halfway there"
""",
        """\
emit progress { done: 1, total: 2, message: "halfway there" }
""",
    ),
    (
        "F5014",
        "E",
        "`run`: executable not a string, or an argument that is not a scalar or can be null",
        """\
`run P P` starts a process directly, with no shell: the first operand is the
executable and must be a `string`, the second an array of scalar arguments
(strings, numbers, booleans). Nested arrays or objects have no meaning on a
command line, and neither has `null`: an argument whose type can be `null` (an
optional such as `string?`) is refused too. Pass the executable as a string,
flatten the arguments into one array of scalars, and give a possibly-null value
a default with `??` (or leave it out).""",
        """\
let listing = run "ls" [["-l", "-a"]]
print listing.stdout
""",
        """\
let listing = run "ls" ["-l", "-a"]
print listing.stdout
""",
    ),
    (
        "F5015",
        "E",
        "duplicate stage name in one pipeline",
        """\
Two stages of one `pipeline` have the same name. Stage names identify the steps
in events, the run view and the journal, so within one pipeline they must be
unique. Rename one of the stages.""",
        """\
pipeline "report" {
  stage "collect" { print "collecting" }
  stage "collect" { print "summarising" }
}
""",
        """\
pipeline "report" {
  stage "collect" { print "collecting" }
  stage "summarise" { print "summarising" }
}
""",
    ),
    (
        "F5016",
        "E",
        "empty stage or pipeline name",
        """\
A `stage` or `pipeline` has an empty name `""`. The name is how the step appears
in events, the run view and error reports, so it must say something. Give the
stage or pipeline a short, non-empty name.""",
        """\
stage "" {
  print "collecting"
}
""",
        """\
stage "collect" {
  print "collecting"
}
""",
    ),
    (
        "F5017",
        "E",
        "`catch` of an unknown code or of a fatal one (`limit-exceeded`, `workflow-timeout`, `cancelled`, `isolate`, `worker-crashed`)",
        """\
A `catch` clause names a code that is not a runtime error code, or one of the
fatal codes `limit-exceeded`, `workflow-timeout`, `cancelled`, `isolate` and
`worker-crashed`. Fatal errors are never caught, so that budgets, deadlines and
cancellation always stop the run; a clause for them, or for an unknown code, would
never run. Catch a catchable code such as `agent-invocation`, or omit the code list
to catch every catchable error.""",
        """\
agent helper {
  model: "scripted"
  script: ["Done"]
}
try {
  print helper("Do the task")
} catch "limit-exceeded" as err {
  print err.message
}
""",
        """\
agent helper {
  model: "scripted"
  script: ["Done"]
}
try {
  print helper("Do the task")
} catch "agent-invocation" as err {
  print err.message
}
""",
    ),
    (
        "F5018",
        "E",
        "`return` inside an `async` body (in a lambda block, `return` gives the lambda's value)",
        """\
An `async` body contains `return`. A task runs alongside the workflow, so it
cannot end the workflow; its results are the bindings at its top level, read as
`task.field` after `await task`. Bind the value with `let` inside the task and use
it after the `await` (inside a lambda block, by contrast, `return` is how the
lambda gives its value).""",
        """\
agent checker {
  model: "scripted"
  script: ["All good"]
}
workflow check_build() -> string {
  async check { return checker("Check the build") }
  await check
  return "checked"
}
print check_build()
""",
        """\
agent checker {
  model: "scripted"
  script: ["All good"]
}
workflow check_build() -> string {
  async check { let report = checker("Check the build") }
  await check
  return check.report
}
print check_build()
""",
    ),
    (
        "F5019",
        "E",
        "`limits` not first in the workflow body",
        """\
A `limits { … }` block is not the first statement of its workflow body (or of a
cell's top-level statements). Limits apply to the whole run, so they must be set
before anything else happens. Move the `limits` block to the top of the body.""",
        """\
workflow greet(name: string) -> string {
  let greeting = "Hello, ${name}"
  limits { steps: 50 }
  return greeting
}
print greet("Ada")
""",
        """\
workflow greet(name: string) -> string {
  limits { steps: 50 }
  let greeting = "Hello, ${name}"
  return greeting
}
print greet("Ada")
""",
    ),
    (
        "F5020",
        "E",
        "effect (agent/team/workflow call, `approve`, `ask`, `run`, `print`, `log`, `emit`, `publish`) inside a lambda given to a pure builtin",
        """\
A lambda given to a builtin such as `map`, `filter` or `sortBy` performs an
effect: it calls an agent, team or workflow, talks to the operator, runs a
process, or prints, logs, emits or publishes. Builtins are pure and deterministic,
and their lambdas must be too. Use `parallelMap` to call an agent for every item
(it may do all effects except `approve`/`ask`), or a `for` loop.""",
        """\
agent greeter {
  model: "scripted"
  script: ["Hi!"]
}
let greetings = map(["Ada", "Grace"], n => greeter("Greet ${n}"))
print greetings
""",
        """\
agent greeter {
  model: "scripted"
  script: ["Hi!"]
}
let greetings = parallelMap(["Ada", "Grace"], n => greeter("Greet ${n}"))
print greetings
""",
    ),
    # ------------------------------------------------------------------ F6xxx limits and durations
    (
        "F6001",
        "E",
        "unknown key in `limits`",
        """\
A `limits` block has a key that is not one of `agent_runs`, `duration`,
`concurrency` and `steps`. An unknown key would be silently ignored, leaving the
limit you meant unset. Fix the key's spelling, or use the limit that fits (token
budgets, for example, are not a workflow limit).""",
        """\
workflow greet(name: string) -> string {
  limits { step: 50 }
  return "Hello, ${name}"
}
print greet("Ada")
""",
        """\
workflow greet(name: string) -> string {
  limits { steps: 50 }
  return "Hello, ${name}"
}
print greet("Ada")
""",
    ),
    (
        "F6002",
        "E",
        "limit value not a positive integer (or duration for `duration`)",
        """\
A limit's value is not of the right form: `agent_runs`, `concurrency` and `steps`
take a positive integer literal, and `duration` a positive duration such as `2m`.
A zero or negative limit would stop the run before it starts, and a bare number
for `duration` has no unit. Write a positive integer, or a duration with a unit.""",
        """\
workflow greet(name: string) -> string {
  limits { steps: 0 }
  return "Hello, ${name}"
}
print greet("Ada")
""",
        """\
workflow greet(name: string) -> string {
  limits { steps: 50 }
  return "Hello, ${name}"
}
print greet("Ada")
""",
    ),
    (
        "F6003",
        "E",
        "more than one `limits` block",
        """\
A workflow body (or a cell's top-level statements) has a second `limits` block.
All limits of one workflow belong in its single `limits` block at the top of the
body, so that they can be read in one place. Merge the keys into the first block.""",
        """\
workflow greet(name: string) -> string {
  limits { steps: 50 }
  limits { duration: 1m }
  return "Hello, ${name}"
}
print greet("Ada")
""",
        """\
workflow greet(name: string) -> string {
  limits { steps: 50, duration: 1m }
  return "Hello, ${name}"
}
print greet("Ada")
""",
    ),
    (
        "F6004",
        "W",
        "a `timeout` longer than the enclosing `duration`",
        """\
A `timeout` (an agent's own, a call's `timeout:` option or a `run … timeout`) is
longer than the `duration` of the enclosing workflow. The run deadline always
applies, so the longer timeout can never take effect: the run ends with
`workflow-timeout` first. Shorten the timeout, or raise the workflow's `duration`.""",
        """\
agent helper {
  model: "scripted"
  script: ["Done"]
  timeout: 2m
}
workflow quick(task: string) -> string {
  limits { duration: 30s }
  return helper(task)
}
print quick("Do the task")
""",
        """\
agent helper {
  model: "scripted"
  script: ["Done"]
  timeout: 20s
}
workflow quick(task: string) -> string {
  limits { duration: 30s }
  return helper(task)
}
print quick("Do the task")
""",
    ),
    (
        "F6005",
        "W",
        "`concurrency` larger than `agent_runs`",
        """\
The workflow allows more agent calls in flight (`concurrency`) than agent runs in
total (`agent_runs`), so the concurrency limit can never be reached. This usually
means one of the two numbers is wrong. Lower `concurrency` to at most
`agent_runs`, or raise `agent_runs`.""",
        """\
workflow greet(name: string) -> string {
  limits { agent_runs: 2, concurrency: 8 }
  return "Hello, ${name}"
}
print greet("Ada")
""",
        """\
workflow greet(name: string) -> string {
  limits { agent_runs: 8, concurrency: 4 }
  return "Hello, ${name}"
}
print greet("Ada")
""",
    ),
    (
        "F6006",
        "W",
        "a literal fan-out that needs more agent runs than `agent_runs` allows",
        """\
Counted from the text, some paths of the workflow (or cell) make more agent calls
than its `agent_runs` budget allows — calls under `if`, `?:` or `try`, in `parallel`
branches or in a `parallelMap` or `for` over an array literal or `range(N)` — while
the paths that make fewest stay within it. A run that takes such a path fails with
`limit-exceeded` partway through. The message gives the most calls the text allows:
set `agent_runs` to that (leaving room for repairs and retries) if every path can be
taken, or make fewer calls. When every path makes too many calls it is F6008, an
error.""",
        """\
agent reviewer {
  model: "scripted"
  script: ["Fine"]
}
workflow review(deep: bool) -> string[] {
  limits { agent_runs: 2 }
  let summary = reviewer("Review the summary")
  if deep {
    return parallelMap(["a", "b"], f => reviewer("Review ${f}"))
  }
  return [summary]
}
print review(false)
""",
        """\
agent reviewer {
  model: "scripted"
  script: ["Fine"]
}
workflow review(deep: bool) -> string[] {
  limits { agent_runs: 3 }
  let summary = reviewer("Review the summary")
  if deep {
    return parallelMap(["a", "b"], f => reviewer("Review ${f}"))
  }
  return [summary]
}
print review(false)
""",
    ),
    # ------------------------------------------------------------------ F7xxx hints
    (
        "F7001",
        "W",
        "binding never used",
        """\
A `let`/`var` binding, loop variable or parameter-like binding inside a workflow
body, block or lambda is never read. Usually the value was meant to be used (a
typo elsewhere, or an old variable left behind). Use it, or remove it. Top-level
bindings of a file or cell are session values and are not reported.""",
        """\
workflow greet(name: string) -> string {
  let shout = upper(name)
  return "Hello, ${name}"
}
print greet("Ada")
""",
        """\
workflow greet(name: string) -> string {
  let shout = upper(name)
  return "Hello, ${shout}"
}
print greet("Ada")
""",
    ),
    (
        "F7002",
        "W",
        "declaration never used (files only, not notebooks)",
        """\
A type, tool, agent or team declared in a file is never used by another
declaration or by the file's top-level statements. It may be dead code, or a call
or type annotation may be missing. Use the declaration or remove it. Workflows
are not reported, since `flow run FILE WORKFLOW` can run any of them, and neither
are notebook cells, because a later cell may still use what an earlier cell
declared.""",
        """\
agent greeter {
  model: "scripted"
  script: ["Hello!"]
}
print "Hello!"
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
        "F7003",
        "I",
        "redefinition of a declaration from an earlier cell",
        """\
A notebook cell declares a name that an earlier cell already declared. This is
allowed, since it is how you iterate on a declaration in a notebook, and the new
definition replaces the old one for later cells; the info notes it so that an
accidental name clash does not go unnoticed. Choose a new name if you meant a
separate declaration (a redefinition in the same cell is F2002).""",
        """\
workflow greet(name: string) -> string {
  return "Hello, ${name}"
}
print greet("Ada")
# %% cell
workflow greet(name: string) -> string {
  return "Hi, ${name}"
}
print greet("Ada")
""",
        """\
workflow greet(name: string) -> string {
  return "Hello, ${name}"
}
print greet("Ada")
# %% cell
workflow greet_casually(name: string) -> string {
  return "Hi, ${name}"
}
print greet_casually("Ada")
""",
    ),
    (
        "F7004",
        "W",
        "redefinition changes a type that other declarations use",
        """\
A cell redefines a type from an earlier cell, and declarations from earlier cells
use that type. Those declarations were checked against the old definition, so
they may no longer fit the new one. Re-run (or redefine) the cells that declare
the users of the type, or give the new type a different name. The redefinition
itself is also noted as F7003.""",
        """\
type Item = { name: string }
workflow names(items: Item[]) -> string[] {
  return items[*].name
}
# %% cell
type Item = { name: string, price: number }
""",
        """\
type Item = { name: string }
workflow names(items: Item[]) -> string[] {
  return items[*].name
}
# %% cell
type PricedItem = { name: string, price: number }
""",
    ),
    (
        "F7005",
        "W",
        "`verify` / `require` condition is constant",
        """\
The condition of a `verify` or `require` is a constant (`true` or `false`), so the
check always passes or always fails and records nothing useful about the run.
It is often a placeholder that was never filled in. Write a condition on the
values the check is about, or remove the statement (use `print`/`log` for a
plain message).""",
        """\
workflow total(xs: int[]) -> int {
  verify true : "the list is not empty"
  return sum(xs)
}
print total([1, 2])
""",
        """\
workflow total(xs: int[]) -> int {
  verify len(xs) > 0 : "the list is not empty"
  return sum(xs)
}
print total([1, 2])
""",
    ),
    (
        "F7006",
        "W",
        "empty stage",
        """\
A `stage "name" { }` has no statements. It would still appear in events and the
run view, suggesting work that does not happen. Put the statements of that step
inside the stage, or remove it.""",
        """\
pipeline "report" {
  stage "collect" { print "collecting" }
  stage "summarise" { }
}
""",
        """\
pipeline "report" {
  stage "collect" { print "collecting" }
  stage "summarise" { print "summarising" }
}
""",
    ),
    (
        "F7007",
        "I",
        "interpolating an object or array renders JSON",
        """\
An object or array is interpolated into a string with `${…}`. This is well
defined (the value is rendered as JSON, e.g. `["a", "b"]`), but it is often not
the text you want in a prompt or a message. Use `join(xs, ", ")`, pick the fields
you need, or call `json(v)` to make the JSON rendering explicit.""",
        """\
let tags = ["billing", "urgent"]
print "Tags: ${tags}"
""",
        """\
let tags = ["billing", "urgent"]
print "Tags: ${join(tags, ", ")}"
""",
    ),
    (
        "F7008",
        "W",
        "agent result never used",
        """\
An agent or team call stands as a statement of its own and its result is thrown
away. Agent calls cost time and budget, and the answer is usually what you wanted,
so this is most often a forgotten `let`. Bind the result and use it, or `print`
it.""",
        """\
agent summariser {
  model: "scripted"
  script: ["A summary"]
}
summariser("Summarise the ticket")
print "done"
""",
        """\
agent summariser {
  model: "scripted"
  script: ["A summary"]
}
let summary = summariser("Summarise the ticket")
print summary
""",
    ),
)

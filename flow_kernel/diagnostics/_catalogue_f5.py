"""The catalogue of F5xxx (control flow, concurrency, effects), in the shape `catalogue.py` describes."""

from __future__ import annotations

ENTRIES: tuple[tuple[str, str, str, str, str, str], ...] = (
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
)

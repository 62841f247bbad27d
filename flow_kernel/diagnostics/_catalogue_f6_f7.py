"""The catalogue of F6xxx (limits and durations) and F7xxx (hints), in the shape `catalogue.py` describes."""

from __future__ import annotations

ENTRIES: tuple[tuple[str, str, str, str, str, str], ...] = (
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

"""The catalogue of F2xxx (names and scope), in the shape `catalogue.py` describes."""

from __future__ import annotations

ENTRIES: tuple[tuple[str, str, str, str, str, str], ...] = (
    # ------------------------------------------------------------ F2xxx names and scope
    (
        "F2001",
        "E",
        "undefined name (hint: closest known name)",
        """\
A name is used that is not bound in this scope and is not a declaration or a
builtin; the hint suggests the closest known name. Note that a workflow body sees
only its parameters, the declarations and the builtins, never top-level bindings:
pass those as arguments. `it` is defined only inside an `expect` condition. Fix
the spelling, bind the name first, or pass it in.""",
        """\
let greeting = "hello"
print greting
""",
        """\
let greeting = "hello"
print greeting
""",
    ),
    (
        "F2002",
        "E",
        "duplicate declaration in one file or cell",
        """\
Two `type`, `tool`, `agent`, `team` or `workflow` declarations in the same file
or cell have the same name. All declarations share one namespace and are
resolved as a group, so only one may own a name; the related span points at the
first one. Remove or rename one of them. (In a notebook, redefining a declaration
from an *earlier* cell is allowed and reported as F7003, info.)""",
        """\
type Id = string
type Id = string
let ticket: Id = "T1"
print ticket
""",
        """\
type Id = string
let ticket: Id = "T1"
print ticket
""",
    ),
    (
        "F2003",
        "E",
        "duplicate binding in one scope",
        """\
A `let`/`var` binding or a parameter uses a name already bound in the same
scope. Flow does not allow rebinding a name within one scope, because readers
could not tell which value is meant. Use a new name for the new value, or declare
the first binding with `var` and assign to it.""",
        """\
workflow total(a: int, b: int) -> int {
  let result = a + b
  let result = result * 2
  return result
}
print total(1, 2)
""",
        """\
workflow total(a: int, b: int) -> int {
  let result = a + b
  let doubled = result * 2
  return doubled
}
print total(1, 2)
""",
    ),
    (
        "F2004",
        "E",
        "assignment to a `let` binding",
        """\
A name bound with `let` (or a `for` loop variable) is assigned with `=`. `let`
bindings are immutable; only `var` bindings can be reassigned. Declare the
binding with `var` if it must change, or bind the new value to a new name.""",
        """\
workflow count_up(n: int) -> int {
  let total = 0
  total = total + n
  return total
}
print count_up(3)
""",
        """\
workflow count_up(n: int) -> int {
  var total = 0
  total = total + n
  return total
}
print count_up(3)
""",
    ),
    (
        "F2005",
        "E",
        "assignment to an undeclared variable",
        """\
`name = value` assigns to an existing `var`, but no binding of that name is
visible here. Flow never creates a variable by assignment, so that a typo cannot
silently introduce a new one. Declare it first with `var name = …`, or fix the
spelling of the variable you meant.""",
        """\
workflow double(n: int) -> int {
  var result = 0
  reslt = n * 2
  return result
}
print double(4)
""",
        """\
workflow double(n: int) -> int {
  var result = 0
  result = n * 2
  return result
}
print double(4)
""",
    ),
    (
        "F2006",
        "E",
        "binding shadows a declaration or a builtin",
        """\
A binding, parameter or declaration uses the name of a declaration or a builtin
function (`len`, `count`, `sum`, `map`, …). Shadowing would make the builtin or
declaration unreachable in that scope and make code hard to read, so Flow
rejects it. Rename the binding, e.g. `words` instead of `count`.""",
        """\
workflow word_count(text: string) -> int {
  let count = len(split(text, " "))
  return count
}
print word_count("a b c")
""",
        """\
workflow word_count(text: string) -> int {
  let words = len(split(text, " "))
  return words
}
print word_count("a b c")
""",
    ),
    (
        "F2007",
        "E",
        "unknown type name",
        """\
A type expression names a type that is neither a built-in type (`string`,
`number`, `int`, `bool`, `null`, `any`, `duration`, `external`) nor a declared
`type` alias, or names something that is not a type (an agent, a workflow). The
hint suggests the closest known type. Fix the spelling or declare the type with
`type Name = …`.""",
        """\
let n: integer = 3
print n
""",
        """\
let n: int = 3
print n
""",
    ),
    (
        "F2008",
        "E",
        "unknown agent, team or tool named in a declaration",
        """\
A declaration refers by name to an agent, team or tool that is not declared, for
example a team whose `main` or `members` lists an undeclared agent. Every name a
declaration points at must resolve statically, so that calls through it can be
checked. Declare the missing agent or fix the name. (An unknown tool in an
agent's `tools` list is F4007.)""",
        """\
agent writer { model: "scripted", script: ["Dear customer, ..."] }
team support { main: writer, members: [reviewer] }
print support.main("Draft a reply")
""",
        """\
agent writer { model: "scripted", script: ["Dear customer, ..."] }
agent reviewer { model: "scripted", script: ["Looks good"] }
team support { main: writer, members: [reviewer] }
print support.main("Draft a reply")
""",
    ),
    (
        "F2009",
        "E",
        "recursive workflow call (direct or indirect)",
        """\
A workflow calls itself, directly or through other workflows. Flow forbids
recursion so that every run is bounded and its limits (`agent_runs`, `steps`,
`duration`) nest predictably; the message shows the call chain. Rewrite the
recursion as a `for` or `while` loop, or split the work into non-recursive
workflows.""",
        """\
workflow countdown(n: int) -> int {
  if n <= 0 {
    return 0
  }
  return countdown(n - 1)
}
print countdown(3)
""",
        """\
workflow countdown(n: int) -> int {
  var i = n
  while i > 0 {
    i = i - 1
  }
  return i
}
print countdown(3)
""",
    ),
    (
        "F2010",
        "E",
        "recursive type alias",
        """\
A `type` alias refers to itself, directly or through other aliases. Every Flow
type must map to a finite JSON Schema and be expandable for checking, so type
aliases may not be recursive. Flatten the structure, limit its depth explicitly,
or use `any`/`external` for the nested part.""",
        """\
type Node = { name: string, children: Node[] }
let root: Node = { name: "root", children: [] }
print root
""",
        """\
type Node = { name: string, children: string[] }
let root: Node = { name: "root", children: [] }
print root
""",
    ),
    (
        "F2011",
        "E",
        "`use`: file not found",
        """\
A `use "path.flow"` names a file that does not exist. Paths are relative to the
importing file (or to the notebook's directory). Check the spelling and the
location of the file, or create it. A file outside the notebook's (or the
program's) folder is not read until the person grants it; the message then says
how (`--allow-path`, `FLOW_ALLOW="path:…"`, `flow trust`, or the notebook's prompt).""",
        """\
use "greeting.flow"
print "greetings loaded"
# %% file greetings.flow
workflow greet(name: string) -> string {
  return "Hello, ${name}"
}
""",
        """\
use "greetings.flow"
print "greetings loaded"
# %% file greetings.flow
workflow greet(name: string) -> string {
  return "Hello, ${name}"
}
""",
    ),
    (
        "F2012",
        "E",
        "`use`: import cycle",
        """\
Files import each other in a cycle, directly or through other files; the message
shows the chain. Imports load declarations as a group, and a cycle has no order
in which they could be loaded. Move the shared declarations into a file that
both can `use`, or remove the import that closes the cycle.""",
        """\
use "greetings.flow"
print greet("Ada")
# %% file greetings.flow
use "names.flow"
workflow greet(name: Name) -> string {
  return "Hello, ${name}"
}
# %% file names.flow
use "greetings.flow"
type Name = string
""",
        """\
use "greetings.flow"
print greet("Ada")
# %% file greetings.flow
use "names.flow"
workflow greet(name: Name) -> string {
  return "Hello, ${name}"
}
# %% file names.flow
type Name = string
""",
    ),
    (
        "F2013",
        "E",
        "unknown named argument",
        """\
A call passes a named argument that the callee does not take: a workflow
parameter that does not exist, or an agent call option other than `context`,
`label`, `output`, `tools`, `timeout`, `repair`, `choice` and `fallback`. Named
arguments are checked so that a misspelt option is not silently ignored. Fix the
name (the hint suggests the closest one) or remove the argument.""",
        """\
agent triager { model: "scripted", script: ["high"] }
print triager("Classify: the printer is on fire", labl: "classify")
""",
        """\
agent triager { model: "scripted", script: ["high"] }
print triager("Classify: the printer is on fire", label: "classify")
""",
    ),
    (
        "F2014",
        "E",
        "duplicate argument",
        """\
The same argument is given twice in one call, either as two named arguments of
the same name or positionally and again by name. Each parameter takes exactly
one value, as in Python. Remove one of the two.""",
        """\
workflow greet(name: string) -> string {
  return "Hello, ${name}"
}
print greet(name: "Ada", name: "Grace")
""",
        """\
workflow greet(name: string) -> string {
  return "Hello, ${name}"
}
print greet(name: "Ada")
""",
    ),
    (
        "F2015",
        "E",
        "unknown task in `await` or task access",
        """\
`await name` (or a task access `name.x`) names no `async` task of this workflow
or cell. Tasks are known statically, so awaiting an unknown task is a mistake,
usually a typo. Use the name given in `async name { … }`.""",
        """\
agent reviewer { model: "scripted", script: ["Looks good"] }
async review { let verdict = reviewer("Review the diff") }
await reveiw
""",
        """\
agent reviewer { model: "scripted", script: ["Looks good"] }
async review { let verdict = reviewer("Review the diff") }
await review
""",
    ),
    (
        "F2016",
        "E",
        "task name collides with a binding",
        """\
An `async` task has the same name as a `let`/`var` binding or parameter in scope
(or a later binding reuses a task's name). A task name is used like a value in
`task.x` accesses, so it must not be ambiguous with a binding. Rename the task or
the binding.""",
        """\
agent reviewer { model: "scripted", script: ["Looks good"] }
async review { let verdict = reviewer("Review the diff") }
await review
let review = review.verdict
print review
""",
        """\
agent reviewer { model: "scripted", script: ["Looks good"] }
async review { let verdict = reviewer("Review the diff") }
await review
let verdict = review.verdict
print verdict
""",
    ),
)

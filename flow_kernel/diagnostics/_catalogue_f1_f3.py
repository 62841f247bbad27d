"""Catalogue entries for the families F1xxx (syntax), F2xxx (names and scope) and
F3xxx (types): code, severity letter, summary, explanation, failing example and
fixed example (see `diagnostics.md`, which is normative for codes and severities)."""

from __future__ import annotations

# (code, severity letter E/W/I, one-line summary, explanation, failing example, fixed example)
ENTRIES: tuple[tuple[str, str, str, str, str, str], ...] = (
    # ------------------------------------------------------------------ F1xxx syntax
    (
        "F1001",
        "E",
        "unexpected character",
        """\
The source contains a character that cannot start any Flow token outside a string
or comment, such as `$`, `@`, `!`, `&` or a single quote. Flow has a small, fixed
set of operators: use `not` for negation, `!=` for inequality, `and`/`or` for
logic, and double quotes for strings. Remove the character or replace it with the
operator you meant.""",
        """\
let total = 3 $ 4
print total
""",
        """\
let total = 3 * 4
print total
""",
    ),
    (
        "F1002",
        "E",
        "unterminated string literal",
        """\
A `"…"` string reached the end of its line without a closing `"`. Plain strings
cannot span lines, so Flow reports this as F1002 (rather than F1007, unexpected
end of input) at the line where the string was cut. Close the string on the same
line, or use a triple-quoted `\"\"\"…\"\"\"` string for text over several lines.""",
        """\
print "Hello, world
""",
        """\
print "Hello, world"
""",
    ),
    (
        "F1003",
        "E",
        "unterminated `${` interpolation",
        """\
An interpolation `${` inside a string was opened but never closed with `}` before
the end of the string's line. The expression inside `${…}` may contain strings
and braces of its own, so the compiler cannot guess where you meant it to end.
Close the interpolation with `}` before the closing quote.""",
        """\
let name = "Ada"
print "Hello, ${name"
""",
        """\
let name = "Ada"
print "Hello, ${name}"
""",
    ),
    (
        "F1004",
        "E",
        "invalid number literal",
        """\
A number is malformed, for example an exponent without digits (`3.5e`), a second
fraction (`1.2.3`), or a fractional number glued to letters. A number immediately
followed by letters is read as one bad token: F1004 when it has a fraction or an
exponent, F1005 when it is an integer with a bad duration unit. Write a complete
number such as `3.5e2`, or a string such as `"1.2.3"` for version-like text.""",
        """\
let rate = 3.5e
print rate
""",
        """\
let rate = 3.5e2
print rate
""",
    ),
    (
        "F1005",
        "E",
        "invalid duration literal (unknown unit, fraction, missing number)",
        """\
A duration is an integer immediately followed by one of the units `ms`, `s`, `m`
or `h` (`250ms`, `30s`, `5m`, `2h`). An integer glued to any other letters (`5x`,
`2min`) or a fraction with a unit (`1.5s`) is not a valid duration; Flow reports
F1005 for it rather than a generic unexpected token (F1006). Use one of the four
units, and a smaller unit instead of a fraction (`1500ms` for `1.5s`).""",
        """\
let pause = 2min
print pause
""",
        """\
let pause = 2m
print pause
""",
    ),
    (
        "F1006",
        "E",
        "unexpected token (says what was expected)",
        """\
The parser found a token that cannot appear at this point; the message says what
it expected instead. A common case is a chained comparison: comparisons do not
chain in Flow, so `a < b < c` is rejected rather than silently meaning
`(a < b) < c`. Combine separate comparisons with `and`, or fix the token the
message points at.""",
        """\
let low = 1
let mid = 2
let high = 3
print low < mid < high
""",
        """\
let low = 1
let mid = 2
let high = 3
print low < mid and mid < high
""",
    ),
    (
        "F1007",
        "E",
        "unexpected end of input (unclosed block, bracket or triple-quoted string)",
        """\
The file or cell ended while a block `{`, a bracket `(` / `[` or a triple-quoted
string was still open. The related span points at the opener that was never
closed. Add the missing closing `}`, `)`, `]` or `\"\"\"`. (A plain `"…"` string cut
by the end of its line is F1002 instead.)""",
        """\
let names = ["Ada", "Grace"]
for name in names {
  print "Hello, ${name}"
""",
        """\
let names = ["Ada", "Grace"]
for name in names {
  print "Hello, ${name}"
}
""",
    ),
    (
        "F1008",
        "E",
        "unmatched closing bracket",
        """\
A closing `)`, `]` or `}` has no matching opening bracket. This usually comes
from one bracket too many, or from a bracket left over after editing. Remove the
extra bracket, or add the opener it was meant to close.""",
        """\
print len([1, 2, 3]))
""",
        """\
print len([1, 2, 3])
""",
    ),
    (
        "F1009",
        "E",
        "invalid escape sequence",
        r"""A backslash in a string is followed by a character that is not a valid
escape. Flow accepts only `\n`, `\t`, `\"`, `\\`, `\$` and `\uXXXX` (four hex
digits), so that a typo never silently changes the text. Use one of these
escapes, or write `\\` for a literal backslash.""",
        r"""print "first line\qsecond line"
""",
        r"""print "first line\nsecond line"
""",
    ),
    (
        "F1010",
        "E",
        "reserved word used as a name",
        """\
A reserved word (`type`, `run`, `agent`, `limits`, `it`, `schema`, …) was used
where a binding, parameter or declaration name is expected. Reserved words are
accepted as plain names only after `.` and `?.`, inside a pick, as object keys,
type fields and named-argument names (`err.stage`, `{type: "x"}`). Choose a
different name, such as `kind` instead of `type`.""",
        """\
let type = "bug"
""",
        """\
let kind = "bug"
""",
    ),
    (
        "F1011",
        "E",
        "`return` outside a workflow",
        """\
`return` ends a workflow (or gives a lambda block its value), but top-level
statements of a file or cell are not inside one. The value of a cell or script
is its last top-level expression statement, so write the value on its own line
instead; or move the code into a `workflow` and call it.""",
        """\
let answer = 6 * 7
return answer
""",
        """\
let answer = 6 * 7
answer
""",
    ),
    (
        "F1012",
        "E",
        "declaration inside a workflow body (declarations are top level only)",
        """\
`type`, `tool`, `agent`, `team` and `workflow` declarations, and `use`, may only
appear at the top level of a file or cell. Declarations are resolved as a group
before any code runs, which would be impossible if they could appear inside a
workflow body. Move the declaration out of the workflow; it is visible everywhere
in the file, in any order.""",
        """\
workflow tally(xs: int[]) -> int {
  type Count = int
  return len(xs)
}
print tally([1, 2])
""",
        """\
type Count = int

workflow tally(xs: int[]) -> int {
  return len(xs)
}
print tally([1, 2])
""",
    ),
    (
        "F1013",
        "E",
        "invalid assignment target",
        """\
The left side of `=` is not a plain variable name. Flow values are immutable JSON:
you cannot assign to an element (`xs[0] = …`), a field (`t.status = …`) or any
other expression, only to a name bound with `var`. Build a new value and assign it
to the variable, e.g. with an array or object literal, `merge(…)` or `map(…)`.""",
        """\
var counts = [0, 0]
counts[0] = 1
print counts
""",
        """\
var counts = [0, 0]
counts = [1, counts[1]]
print counts
""",
    ),
    (
        "F1014",
        "E",
        "duplicate key in an object literal or object type",
        """\
The same key appears twice in one object literal (`{id: 1, id: 2}`) or the same
field twice in one object type. JSON objects have unique keys, and silently
keeping the last one would hide a mistake. Remove one of the two, or rename it.""",
        """\
let ticket = { id: "T1", id: "T2" }
print ticket
""",
        """\
let ticket = { id: "T1", title: "Printer jam" }
print ticket
""",
    ),
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
    # ------------------------------------------------------------------- F3xxx types
    (
        "F3001",
        "E",
        "type mismatch (expected X, found Y)",
        """\
A value's type is not compatible with the type expected where it is used (an
annotated binding, a parameter, an argument of a builtin). Typing is structural,
`int` is a subtype of `number` (but not the reverse) and `any` fits everything.
More specific codes win where they apply: F3017/F3018 for object literals, F3014
when only a constraint is violated, F3007 for returned values. Convert the value
(`str`, `num`, `int`) or fix the annotation.""",
        """\
let total: int = "three"
print total
""",
        """\
let total: int = 3
print total
""",
    ),
    (
        "F3002",
        "E",
        "unknown field on an object type",
        """\
A field is read (with `.`, `?.` or a pick) that the value's object type does not
have; the hint suggests the closest field. Typed objects are closed unless their
type ends with `...`, so a missing field is always a mistake, usually a typo. Fix
the field name or add the field to the type.""",
        """\
type Ticket = { id: string, title: string }

workflow show(t: Ticket) -> string {
  return t.titel
}
print show({ id: "T1", title: "Printer jam" })
""",
        """\
type Ticket = { id: string, title: string }

workflow show(t: Ticket) -> string {
  return t.title
}
print show({ id: "T1", title: "Printer jam" })
""",
    ),
    (
        "F3003",
        "W",
        "optional field used where a value is required (may be null)",
        """\
A value that may be `null`, such as an optional field `body?: string` (read as
`string | null`), is used where a non-null value is required. At run time a
`null` there is an `evaluation` error. Give a default with `??` or `default()`,
test for `null` first, or use `?.` to propagate the `null`.""",
        """\
type Ticket = { id: string, body?: string }

workflow body_of(t: Ticket) -> string {
  return t.body
}
print body_of({ id: "T1", body: "It broke" })
""",
        """\
type Ticket = { id: string, body?: string }

workflow body_of(t: Ticket) -> string {
  return t.body ?? ""
}
print body_of({ id: "T1", body: "It broke" })
""",
    ),
    (
        "F3004",
        "E",
        "operator not applicable to these operand types",
        """\
An operator is applied to operands it does not accept: `+` on a string and a
number, arithmetic on strings, `and`/`or`/`not` on non-`bool` values, ordering
comparisons on unrelated types, or a call of something that is not callable.
Flow performs no implicit conversions. Convert explicitly (`str(n)`, `num(s)`)
or use interpolation: `"Items: ${items}"`.""",
        """\
let items = 3
print "Items: " + items
""",
        """\
let items = 3
print "Items: " + str(items)
""",
    ),
    (
        "F3005",
        "E",
        "wrong number of arguments",
        """\
A builtin, workflow or agent is called with more (or fewer) positional arguments
than it takes; for instance `len` takes one argument and an agent call takes one
prompt, with everything else passed as named options. Positional arguments must
also come before named ones. Check the signature and fix the call.""",
        """\
print len([1, 2], [3])
""",
        """\
print len([1, 2, 3])
""",
    ),
    (
        "F3006",
        "E",
        "missing required argument",
        """\
A call omits a parameter that has no `?` (every workflow parameter is required
unless declared `param?: T`), or an agent call has no prompt. Flow checks
arguments statically so that a run never starts with missing input. Pass the
argument, or make the parameter optional in the workflow's signature.""",
        """\
workflow greet(name: string, greeting: string) -> string {
  return "${greeting}, ${name}"
}
print greet(name: "Ada")
""",
        """\
workflow greet(name: string, greeting: string) -> string {
  return "${greeting}, ${name}"
}
print greet(name: "Ada", greeting: "Hello")
""",
    ),
    (
        "F3007",
        "E",
        "returned value does not match the workflow's return type",
        """\
A `return` gives a value whose type does not fit the workflow's declared return
type, or returns no value where one is required. The return type is the
workflow's output schema and is checked again at run time, so a mismatch is
caught here first. Return a value of the declared type or change the declared
type. (An object literal returned with a missing or extra field is F3017/F3018.)""",
        """\
workflow count_words(text: string) -> int {
  return split(text, " ")
}
print count_words("a b c")
""",
        """\
workflow count_words(text: string) -> int {
  return len(split(text, " "))
}
print count_words("a b c")
""",
    ),
    (
        "F3008",
        "E",
        "not every path returns a value",
        """\
A workflow with a declared return type can reach the end of its body without a
`return`, for example after an `if` without an `else`. Its result would be
undefined, so Flow requires a `return` on every path. Add a final `return` or an
`else` branch that returns.""",
        """\
workflow grade(score: int) -> string {
  if score >= 50 {
    return "pass"
  }
}
print grade(70)
""",
        """\
workflow grade(score: int) -> string {
  if score >= 50 {
    return "pass"
  }
  return "fail"
}
print grade(70)
""",
    ),
    (
        "F3009",
        "E",
        "condition is not `bool`",
        """\
The condition of an `if`, `while`, `? :`, `verify`, `require`, `expect` or of a
predicate lambda (`filter`, `all`, …) is not a `bool`. Flow has no truthiness in
conditions: numbers, strings, arrays and `null` are not implicitly true or false.
Write an explicit comparison such as `len(items) > 0`, or use `bool(x)` for JSON
truthiness.""",
        """\
workflow describe(items: string[]) -> string {
  if len(items) {
    return "some"
  }
  return "none"
}
print describe(["a"])
""",
        """\
workflow describe(items: string[]) -> string {
  if len(items) > 0 {
    return "some"
  }
  return "none"
}
print describe(["a"])
""",
    ),
    (
        "F3010",
        "E",
        "`for` / `parallelMap` over a non-array",
        """\
A `for` loop or `parallelMap` iterates over a value that is not an array, such as
a string or an object. Flow iterates only over arrays and never implicitly over
characters or keys. Convert first: `split(s, " ")` for words, `keys(o)` or
`entries(o)` for an object.""",
        """\
let sentence = "hello flow world"
for word in sentence {
  print word
}
""",
        """\
let sentence = "hello flow world"
for word in split(sentence, " ") {
  print word
}
""",
    ),
    (
        "F3011",
        "E",
        "indexing a value that is not an array or object, or index of the wrong type",
        """\
`x[i]` or `x[a:b]` is applied to a value that cannot be indexed (a number, a
`bool`), or the index has the wrong type: arrays take an `int` index (negative
counts from the end), objects a `string` key. Flow never converts the index
implicitly. Use an `int` for arrays, a string key for objects.""",
        """\
let names = ["Ada", "Grace"]
print names["0"]
""",
        """\
let names = ["Ada", "Grace"]
print names[0]
""",
    ),
    (
        "F3012",
        "E",
        "constraint keyword not valid for this type",
        """\
A constraint is applied to a base type that does not support it. Constraints map
1:1 to JSON Schema keywords: `string` takes `minLength`, `maxLength`, `pattern`
and `format`; `number`/`int` take `minimum`, `maximum`, `exclusiveMinimum`,
`exclusiveMaximum` and `multipleOf`; arrays take `minItems`, `maxItems` and
`uniqueItems`. Use the keyword that belongs to the type.""",
        """\
type Name = string(minimum: 1)
let who: Name = "Ada"
print who
""",
        """\
type Name = string(minLength: 1)
let who: Name = "Ada"
print who
""",
    ),
    (
        "F3013",
        "E",
        "invalid constraint value (negative length, min > max, bad regex)",
        """\
A constraint has a value that cannot work: a negative length or item count, a
minimum greater than its maximum, a non-positive `multipleOf`, or a `pattern`
that is not a regular expression Flow can run. Such a schema would reject every
value or fail at run time. Fix the value.

Flow runs every regular expression a program supplies (a `pattern` constraint, a
raw schema's `pattern` and `patternProperties` — F3016 there —, a script's
`when("/re/", …)` — F4017 there) on RE2, whose matching time is linear in the
text, so that no pattern and input can stall a check or a run (a backtracking
engine takes tens of seconds for `^(a+)+$` against 30 characters). JSON Schema
patterns are ECMA-262 regexes; Flow accepts the part of that syntax RE2 runs: no
back-references (`\\1`), no lookahead or lookbehind (`(?=…)`, `(?!…)`, `(?<=…)`,
`(?<!…)`), no `\\uXXXX` escapes (write `\\x{41}`) and repetition counts up to
1000. Rewrite the pattern without them, or check the rest with `expect` in the
program.""",
        """\
type Code = string(pattern: "[A-Z")
let code: Code = "ABC"
print code
""",
        """\
type Code = string(pattern: "[A-Z]+")
let code: Code = "ABC"
print code
""",
    ),
    (
        "F3014",
        "E",
        "literal value of the right base type violates a constraint",
        """\
A literal has the right base type for a constrained type but violates one of its
constraints (too short, out of range, not matching the pattern). Constraints are
checked statically only on literals, and F3014 is reported instead of F3001 when
the base type fits but a constraint does not. Change the literal or relax the
constraint.""",
        """\
type Title = string(minLength: 3)
let title: Title = "Hi"
print title
""",
        """\
type Title = string(minLength: 3)
let title: Title = "Hello"
print title
""",
    ),
    (
        "F3015",
        "W",
        "comparison between unrelated types is always false",
        """\
`==` (or `!=`) compares two values whose types can never be equal, such as an
`int` and a string; `==` is deep JSON equality, so `3 == "3"` is always false
(and `!=` always true). This is almost always a mistake. Compare values of the
same type, converting one side with `str`, `num` or `int` if needed.""",
        """\
let answer = 3
if answer == "3" {
  print "three"
}
""",
        """\
let answer = 3
if answer == 3 {
  print "three"
}
""",
    ),
    (
        "F3016",
        "E",
        "`schema { … }` is not a valid JSON Schema",
        """\
The body of a `schema { … }` type is not a valid JSON Schema (draft 2020-12), for
example an unknown `"type"` name or a keyword with a value of the wrong kind, or
it is not an object of literal values. The schema is sent to providers and used
for validation, so it is checked at compile time. A Flow schema is also one
self-contained document, and nothing in it is ever fetched: a `$ref` or
`$dynamicRef` must be a local fragment (`#`, a pointer such as `#/$defs/item` to a
schema that exists in it, or `#name` for one of its `$anchor`s), never an address
(`http://…`, `file://…`, `other.json`); `$id` is not allowed (it changes what
references mean), and `$schema`, if given, must be draft 2020-12's, at the root.
A reference may not lead back to itself without going into the value (through
`allOf`, `anyOf`, `not`… only): validating would never end. Fix the schema; copy
what a remote reference pointed to under `$defs`.""",
        """\
type Payload = schema { "type": "strng" }
let p: Payload = "hello"
print p
""",
        """\
type Payload = schema { "type": "string" }
let p: Payload = "hello"
print p
""",
    ),
    (
        "F3017",
        "E",
        "object literal misses a required field of the expected type",
        """\
An object literal is used where an object type is expected but lacks one of its
required (non-`?`) fields. This code wins over F3001/F3007 for object literals in
any position (bindings, arguments, returns), so the message can name the missing
fields. Add the fields, or mark them optional (`field?: T`) in the type.""",
        """\
type Ticket = { id: string, title: string }
let ticket: Ticket = { id: "T1" }
print ticket
""",
        """\
type Ticket = { id: string, title: string }
let ticket: Ticket = { id: "T1", title: "Printer jam" }
print ticket
""",
    ),
    (
        "F3018",
        "E",
        "object literal has a field the expected closed type does not",
        """\
An object literal has a field that the expected object type does not declare.
Object types are closed unless they end with `...`, so the extra field would be
rejected by the JSON Schema at run time. This code wins over F3001/F3007 for
object literals in any position. Remove the field, add it to the type, or make
the type open with `...`.""",
        """\
type Ticket = { id: string, title: string }
let ticket: Ticket = { id: "T1", title: "Printer jam", priority: 2 }
print ticket
""",
        """\
type Ticket = { id: string, title: string, priority: int }
let ticket: Ticket = { id: "T1", title: "Printer jam", priority: 2 }
print ticket
""",
    ),
    (
        "F3019",
        "E",
        "lambda has the wrong number of parameters for this builtin",
        """\
A lambda given to a builtin takes a number of parameters the builtin does not
pass. Most builtins pass one element (`x => …`); `map`, `filter` and `find` may
also pass the index (`(x, i) => …`). In particular `sortBy` takes a key function
of one parameter, not a two-argument comparator. Adjust the lambda's
parameters.""",
        """\
let scores = [3, 1, 2]
print sortBy(scores, (a, b) => a - b)
""",
        """\
let scores = [3, 1, 2]
print sortBy(scores, s => s)
""",
    ),
    (
        "F3020",
        "E",
        "`choice` values must be unique, non-empty strings",
        """\
The `choice` option of an agent call (or `ask … choice`) must be a list of
distinct, non-empty string literals: they become the `enum` of the output schema
and the literal union type of the result. Remove duplicates and empty strings,
and quote every choice.""",
        """\
agent reviewer { model: "scripted", script: ["accept"] }
print reviewer("Accept this draft?", choice: ["accept", "accept"])
""",
        """\
agent reviewer { model: "scripted", script: ["accept"] }
print reviewer("Accept this draft?", choice: ["accept", "revise"])
""",
    ),
)

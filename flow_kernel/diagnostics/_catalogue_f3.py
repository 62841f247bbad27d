"""The catalogue of F3xxx (types), in the shape `catalogue.py` describes."""

from __future__ import annotations

ENTRIES: tuple[tuple[str, str, str, str, str, str], ...] = (
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
pass. Most builtins pass one element (`x => …`); `map`, `filter`, `find` and
`flatMap` may also pass the index (`(x, i) => …`); `reduce` passes exactly two,
the accumulator and the element (`(acc, x) => …`). In particular `sortBy` takes a
key function of one parameter, not a two-argument comparator. Adjust the lambda's
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

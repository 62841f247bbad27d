"""The catalogue of F1xxx (syntax), in the shape `catalogue.py` describes."""

from __future__ import annotations

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
)

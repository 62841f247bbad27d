"""F5014 for `run` arguments that can be `null`: a command line has no `null`, so a literal
`null`, an optional value or an array whose items may be `null` is refused at check time,
on the argument itself; a default with `??` makes it a plain string again."""

from __future__ import annotations

from flow_kernel.diagnostics.model import Diagnostic
from flow_kernel.lang import check
from flow_kernel.source import SourceFile

HINT = "give a default with `??`, or leave the argument out when the value is `null`"


def f5014(source: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """Each F5014 as (the text it points at, its message, its hints)."""
    found: list[Diagnostic] = check(SourceFile("main.flow", source)).diagnostics
    return [(source[d.span.start:d.span.end], d.message, tuple(d.hints)) for d in found if d.code == "F5014"]


def test_a_null_literal_argument_is_f5014() -> None:
    assert f5014('let out = run "ls" ["-l", null]\nprint out.stdout') == [
        ("null", "`run` arguments must be strings, numbers or booleans, but this argument is `null`: "
                 "a command line has no `null`", (HINT,))]


def test_an_optional_argument_is_f5014_naming_its_type() -> None:
    source = 'workflow w(flag: string?) {\n  let out = run "ls" ["-l", flag]\n  print out.stdout\n}'
    assert f5014(source) == [
        ("flag", "`run` arguments must be strings, numbers or booleans, but this argument can be `null` "
                 "(`string?`): a command line has no `null`", (HINT,))]


def test_an_array_whose_items_can_be_null_is_f5014_on_the_array() -> None:
    source = 'let xs: (string | null)[] = ["-a", null]\nlet out = run "ls" xs\nprint out.stdout'
    assert f5014(source) == [
        ("xs", "`run` arguments must be strings, numbers or booleans, but an item of these arguments can be "
               "`null` (`(string?)[]`): a command line has no `null`", (HINT,))]


def test_a_default_with_coalesce_and_plain_scalars_pass() -> None:
    source = ('workflow w(flag: string?, n: int, on: bool) {\n'
              '  let out = run "ls" [flag ?? "-l", n, on, 1.5]\n  print out.stdout\n}')
    result = check(SourceFile("main.flow", source))
    assert result.ok and f5014(source) == []


def test_a_nested_array_keeps_its_own_message() -> None:
    assert [m for _, m, _ in f5014('let out = run "ls" [["-l"], null]\nprint out.stdout')] == [
        "`run` arguments must be scalars, found `string[]`",
        "`run` arguments must be strings, numbers or booleans, but this argument is `null`: "
        "a command line has no `null`"]

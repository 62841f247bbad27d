"""One mistake, one diagnostic: what a syntax error or a wrong lambda arity already says is
not said again by the checks that follow from it."""

from __future__ import annotations

from flow_kernel.lang.check import check
from flow_kernel.source import SourceFile


def codes(source: str) -> list[str]:
    return sorted(d.code for d in check(SourceFile("main.flow", source)).diagnostics if d.is_error)


def test_a_statement_that_did_not_parse_is_not_also_a_missing_return() -> None:
    assert codes("workflow w(x: string) -> string {\n  return team\n}\n") == ["F1006"]
    assert codes("fn answer(team: string) -> string {\n  return team\n}\n") == ["F1006", "F1010"]


def test_a_body_without_a_return_and_without_syntax_errors_is_still_f3008() -> None:
    assert codes("workflow w(x: string) -> string {\n  print x\n}\n") == ["F3008"]
    # A syntax error elsewhere in the file does not hide it.
    assert codes("workflow w(x: string) -> string {\n  print x\n}\nworkflow v() -> int {\n  return team\n}\n") \
        == ["F1006", "F3008"]


def test_a_lambda_of_the_wrong_arity_is_one_error() -> None:
    assert codes("workflow w() -> int {\n  return reduce([1, 2], 0, t => t.minutes)\n}\n") == ["F3019"]
    assert codes("workflow w() -> string[] {\n  return flatMap([1], (a, b, c) => a.x)\n}\n") == ["F3019"]

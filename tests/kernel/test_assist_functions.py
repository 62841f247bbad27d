"""Completion and inspection of user functions (`fn`): a cell's own and an earlier cell's,
offered as functions, inspected with their signature and `##` doc, their parameters
completed inside their bodies even while the cell does not parse yet."""

from __future__ import annotations

from flow_kernel.kernel.assist import complete, inspect
from flow_kernel.lang import check
from flow_kernel.lang.session_scope import SessionScope
from flow_kernel.source import SourceFile

EARLIER = '''## Names a score.
fn grade(score: int, strict?: bool) -> string {
  return score > 8 ? "high" : "low"
}'''


def session_with_earlier_cell() -> SessionScope:
    scope = SessionScope()
    result = check(SourceFile("<cell-1>", EARLIER), session=scope)
    assert result.diagnostics == []
    scope.commit(result)
    return scope


def offered(code: str, scope: SessionScope) -> dict[str, str]:
    reply = complete(code, len(code), scope)
    return {m["text"]: m["type"] for m in reply["metadata"]["_jupyter_types_experimental"]}


def test_an_earlier_cells_function_completes_as_a_function() -> None:
    assert offered("print gra", session_with_earlier_cell()) == {"grade": "function"}


def test_a_function_of_the_cell_completes_and_so_do_its_parameters_in_its_body() -> None:
    assert offered("fn half(amount: int) -> int {\n  return amo", SessionScope()) == {"amount": "variable"}
    assert offered("fn half(value: int) -> int {\n  return value / 2\n}\nprint ha", SessionScope()) == {"half": "function"}


def test_inspect_shows_the_signature_the_doc_and_where_it_runs() -> None:
    code = "print grade(9)"
    reply = inspect(code, code.index("grade") + 2, session_with_earlier_cell(), 0)
    assert reply["found"]
    assert reply["data"]["text/plain"] == (
        "fn grade(score: int, strict?: bool) -> string\n\nNames a score.\n\n"
        "A function: `grade(…)` runs in its caller's workflow or cell, within its limits.")
    detailed = inspect(code, code.index("grade") + 2, session_with_earlier_cell(), 1)
    assert "return score > 8" in detailed["data"]["text/plain"]  # detail level 1 adds the source


def test_the_folding_builtins_are_inspected_with_their_signatures() -> None:
    for name, signature in (("reduce", "reduce(xs: T[], init: A, f: (acc: A, x: T) => A) -> A"),
                            ("flatMap", "flatMap(xs: T[], f: (x: T, i?: int) => U[]) -> U[]")):
        reply = inspect(f"{name}(", 2, SessionScope(), 0)
        assert reply["data"]["text/plain"].startswith(signature + "\n\nBuiltin. ")

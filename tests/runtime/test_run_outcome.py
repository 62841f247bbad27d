"""`RunOutcome` as the one place front ends read a run from: the program it ran, the failing
Flow line (`source_line`, from the sources the run kept — an earlier cell's too) and the
error as data (`error_json`). The kernel, `%%flow` and `flow run` all print from these."""

from __future__ import annotations

import asyncio
from pathlib import Path

from flow_kernel import Session
from flow_kernel.runtime.events.failure_report import describe_error
from flow_kernel.runtime.run import RunOutcome

FAILING_WORKFLOW = "workflow nth(i: int) -> int {\n  let xs = [1, 2]\n  return xs[i]\n}"


def cells(tmp_path: Path, *sources: str) -> list[RunOutcome]:
    async def go() -> list[RunOutcome]:
        async with Session(directory=tmp_path, operator="none", journal_dir=None) as session:  # the real sandbox
            return [await session.run_async(source, name=f"<cell {n}>") for n, source in enumerate(sources, 1)]

    return asyncio.run(go())


def test_the_failing_line_of_an_earlier_cell_and_the_error_as_data(tmp_path: Path) -> None:
    declared, failed, ok = cells(tmp_path, FAILING_WORKFLOW, "let n = 7\nnth(n)", "nth(1)")
    assert declared.ok and ok.ok and ok.result == 2
    assert ok.error_json() is None and ok.source_line() is None
    error = failed.error
    assert error is not None and error.code == "evaluation"
    assert error.span is not None and error.span["file"] == "<cell 1>" and error.span["line"] == 3
    assert failed.source_line() == "  return xs[i]"  # the declaring cell's text, kept by the session
    assert declared.sources is failed.sources is ok.sources  # the session's, not a copy a run in its history
    assert failed.source_line("<cell 2>", 2) == "nth(n)"
    assert failed.source_line("<cell 2>", 3) is None and failed.source_line("<nowhere>", 1) is None
    assert failed.compiled is not None and failed.compiled.check.source.name == "<cell 2>"
    assert failed.error_json() == {"code": "evaluation", "message": error.message, "stage": error.stage,
                                   "span": error.span, "details": error.details}
    assert failed.to_json() == {"ok": False, "run": failed.run_id, "error": failed.error_json()}
    report = describe_error(error, failed.source_line)
    assert report[2:4] == ["   |   return xs[i]", "   |          " + "^" * (int(error.span["end_column"]) - 10)]


def test_a_file_shown_under_another_name_keeps_its_lines(tmp_path: Path) -> None:
    (failed,) = cells(tmp_path, "let xs = [1]\nxs[3]")
    assert failed.error is not None and failed.source_line() == "xs[3]"
    failed.show_file_as("<cell 1>", "prog.flow")
    assert failed.error.span is not None and failed.error.span["file"] == "prog.flow"
    assert failed.source_line() == "xs[3]" and failed.error_json()["span"]["file"] == "prog.flow"  # type: ignore[index]

"""`LiveView`: a run view's whole life, as the kernel and `%%flow` use it — opened at the
first event worth showing (with what came before), fed, then finished from the run's
outcome into the static bundle the cell keeps (the widget closed), or dropped."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from flow_kernel import Session
from flow_kernel.runtime.run import RunOutcome
from flow_kernel.views.live import LiveView

pytest.importorskip("ipywidgets")

PROGRAM = 'log "starting"\nlet xs = [1]\nxs[4]'


def run_with_view(tmp_path: Path, source: str) -> tuple[LiveView, list[Any], RunOutcome]:
    from flow_kernel.views.run_view import RunView

    opened: list[Any] = []

    def open_view() -> RunView:
        opened.append(RunView("<cell 1>"))
        return opened[-1]

    async def go() -> tuple[LiveView, RunOutcome]:
        live = LiveView(open_view)
        async with Session(directory=tmp_path, operator="none", journal_dir=None) as session:
            return live, await session.run_async(source, name="<cell 1>", sinks=[live.sink])

    live, outcome = asyncio.run(go())
    return live, opened, outcome


def test_finish_turns_the_view_into_the_static_summary(tmp_path: Path) -> None:
    live, opened, outcome = run_with_view(tmp_path, PROGRAM)
    assert len(opened) == 1 and live.view is opened[0]  # the log opened it
    assert opened[0].box.comm is not None  # open until finished
    bundle = live.finish(outcome)
    assert bundle is not None and live.view is None
    # The failure once, on the scope where it happened; its source line is the error output's.
    assert "✗ workflow <cell>: evaluation index 4 is out of range" in bundle["text/plain"]
    assert "error[" not in bundle["text/plain"] and "xs[4]" not in bundle["text/plain"]
    assert "starting" in bundle["text/html"]
    assert opened[0].box.comm is None  # the widget is closed
    live.sink({"type": "log", "data": {"message": "late"}, "span": {}})  # a straggler opens nothing
    assert len(opened) == 1 and live.finish(outcome) is None


def test_a_cell_that_only_computes_gets_no_view(tmp_path: Path) -> None:
    live, opened, outcome = run_with_view(tmp_path, "let n = 40 + 2\nn")
    assert outcome.result == 42 and opened == [] and live.finish(outcome) is None


def test_drop_closes_without_a_summary(tmp_path: Path) -> None:
    live, opened, _ = run_with_view(tmp_path, PROGRAM)
    assert opened[0].box.comm is not None
    live.drop()
    assert live.view is None and opened[0].box.comm is None

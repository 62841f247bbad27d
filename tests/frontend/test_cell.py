"""The cell runner (frontend/cell.py) through a small real port: real sessions, real
sandbox runs, a person whose answers are scripted. What each front end relies on: a cell's
magics, capabilities asked or refused before anything applies, compile errors with nothing
run, a run's events, result, failure, waiting and background, and the summary at the end."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.frontend import CellEnd, CellRunner
from flow_kernel.frontend.cell import cell_name
from flow_kernel.frontend.outputs import waiting_text
from flow_kernel.frontend.port import HeadlessPort
from flow_kernel.runtime.policy.trust import Trust
from flow_kernel.runtime.session import Session


class NotebookPort(HeadlessPort):
    """A notebook as a list: what was shown, warned, printed; a person (when `answers` is
    given) who types the next answer at each prompt."""

    summaries = True

    def __init__(self, answers: list[str] | None = None) -> None:
        self.person_present = answers is not None
        self.answers = list(answers or [])
        self.shown: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.printed: list[str] = []
        self.asked: list[str] = []
        self.summaries_shown: dict[str, dict[str, Any] | None] = {}

    def show(self, bundle: dict[str, Any]) -> None:
        self.shown.append(bundle)

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def on_event(self, event: dict[str, Any]) -> None:
        if event.get("type") == "print":
            self.printed.append(str((event.get("data") or {}).get("text")))

    def close_view(self, run_id: str, bundle: dict[str, Any] | None) -> None:
        self.summaries_shown[run_id] = bundle

    async def read_line(self, prompt: str) -> str:
        self.asked.append(prompt)
        return self.answers.pop(0)

    def texts(self) -> list[str]:
        return [str(b.get("text/plain")) for b in self.shown]


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CellRunner]:
    monkeypatch.delenv("FLOW_ALLOW", raising=False)
    monkeypatch.setenv("FLOW_CONFIG_HOME", str(tmp_path / "home"))  # no trusted folders of the machine's person
    session = Session(directory=tmp_path, allow=Trust(tmp_path, environ={}, asker="This notebook"))
    yield CellRunner(session)
    asyncio.run(session.aclose())


def run(runner: CellRunner, code: str, port: NotebookPort) -> CellEnd:
    async def go() -> CellEnd:
        try:
            return await runner.run_cell(code, port)
        finally:
            await runner.session.aclose()  # the sandbox belongs to this loop
    return asyncio.run(go())


def test_a_cell_prints_and_gives_its_value_and_its_bindings_stay(runner: CellRunner) -> None:
    port = NotebookPort()
    end = run(runner, 'let n = 20 + 1\nprint("n is ${n}")\nn * 2', port)
    assert end.error is None and end.value == 42 and not end.waiting
    assert port.printed == ["n is 21"]
    assert run(runner, "n + 1", NotebookPort()).value == 22


def test_compile_errors_run_nothing(runner: CellRunner) -> None:
    port = NotebookPort()
    end = run(runner, 'print("never")\nlet x: int = "text"', port)
    assert end.error is not None and end.error.name == "CompileError"
    assert end.diagnostics and end.error.message.startswith("1 error(s); first: F")
    assert port.printed == [] and runner.session.history == []


def test_a_failed_run_is_the_cells_error_with_its_flow_line(runner: CellRunner) -> None:
    end = run(runner, "let xs = [1, 2]\nxs[5]", NotebookPort())
    assert end.error is not None and end.outcome is not None and end.outcome.error is not None
    assert end.error.name == end.outcome.error.code
    assert any("xs[5]" in line for line in end.error.lines)


def test_headless_a_magic_that_asks_is_refused_and_nothing_applies(runner: CellRunner) -> None:
    port = NotebookPort()
    end = run(runner, "%allow run sort\n%input n = 3\nn", port)
    assert end.error is not None and end.error.name == "CapabilityDenied"
    assert "--allow-run sort" in end.error.message and "sort" not in runner.session.allow_run
    assert "n" not in runner.session.values and port.shown == []


def test_a_person_allows_once_then_the_magics_apply(runner: CellRunner) -> None:
    port = NotebookPort(answers=["o"])
    end = run(runner, "%allow run sort\n%input n = 3\nn", port)
    assert end.error is None and end.value == 3
    assert "sort" in runner.session.allow_run
    assert len(port.asked) == 1 and "run the executable `sort`" in port.asked[0]
    assert port.texts()[0] == "allowed once (this kernel): run the executable `sort`"
    assert any("may start sort with any arguments" in w for w in port.warnings)


def test_a_person_denies_and_nothing_applies(runner: CellRunner) -> None:
    end = run(runner, "%allow run sort\n1", NotebookPort(answers=["d"]))
    assert end.error is not None and end.error.message.startswith("you denied: run the executable `sort`")
    assert "sort" not in runner.session.allow_run


def test_check_mode_shows_diagnostics_and_runs_nothing(runner: CellRunner) -> None:
    port = NotebookPort()
    end = run(runner, '%check\nprint("never")', port)
    assert end.error is None and end.outcome is None
    assert port.texts() == ["no diagnostics"] and port.printed == []


def test_a_deferred_approval_waits_and_says_how_to_answer(runner: CellRunner) -> None:
    end = run(runner, '%operator defer\nlet ok = approve "Ship it?"\nok', NotebookPort())
    assert end.error is None and end.waiting and end.value is None
    assert end.outcome is not None
    text = waiting_text(end.outcome, "answer {id} of {run} with {value}", "TEXT")
    pending = end.outcome.pending[0]
    assert text.splitlines() == [f"run {end.outcome.run_id} is waiting for an answer:",
                                 f"  {pending['id']}  approve: Ship it?",
                                 f"answer {pending['id']} of {end.outcome.run_id} with true"]


def test_a_background_run_goes_on_and_wait_awaits_it(runner: CellRunner) -> None:
    port = NotebookPort()

    async def go() -> tuple[CellEnd, CellEnd]:
        try:
            started = await runner.run_cell("%background\nlet x = 6 * 7\nx", port)
            waited = await runner.run_cell(f"%wait {next(iter(runner.background))}", port)
            return started, waited
        finally:
            await runner.session.aclose()

    started, waited = asyncio.run(go())
    run_id = next(iter(runner.background))
    assert started.error is None and started.outcome is None and waited.error is None
    texts = port.texts()
    assert texts[0].startswith(f"run {run_id} goes on in the background")
    assert f"run {run_id}: completed" in texts and '42' in texts  # the result, shown when it ended
    assert runner.live == {} and runner.interactive == {}


def test_a_run_worth_watching_ends_with_its_summary(runner: CellRunner) -> None:
    port = NotebookPort()
    end = run(runner, 'agent w { model: "mock" }\nw("hello")', port)
    assert end.error is None and end.outcome is not None
    summary = port.summaries_shown[end.outcome.run_id]
    assert summary is not None and "Flow run: completed" in summary["text/plain"]
    quiet = NotebookPort()
    plain = run(runner, "1 + 1", quiet)
    assert plain.outcome is not None and quiet.summaries_shown == {plain.outcome.run_id: None}


def test_runner_magics_are_refused_where_no_runner_is(runner: CellRunner) -> None:
    from flow_kernel.frontend.magics import MagicError, plan_cell

    with pytest.raises(MagicError, match="works in the Flow kernel"):
        plan_cell("%background\n1", runner.session)


def test_a_cells_name_is_its_text() -> None:
    assert cell_name("let n = 1") == cell_name("let n = 1\n") != cell_name("let n = 2")
    assert cell_name("x", "flow cell").startswith("<flow cell ")

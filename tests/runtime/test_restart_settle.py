"""A kernel restart interrupts the running cell and then, at once, asks the kernel to shut
down (jupyter_client's order, also under Kernel ▸ Restart). A run an interrupt request
stopped waits up to `RESTART_SETTLE` after it for the shutdown before its journal says the
person cancelled it: with the shutdown inside that time it ends `interrupted` (resumable),
without one `failed: cancelled`. A run cancelled with no interrupt request (an MCP client's
cancel) does not wait. The reopened twin records at once, as before, and a shutdown that
comes a moment after the stop leaves the run `failed` for good."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from pathlib import Path

import pytest

from flow_kernel.runtime import run as run_module
from flow_kernel.runtime.durable import journal as journal_module
from flow_kernel.runtime.session import Session

# A run that is under way when it is stopped: its agent's answer takes 30 s.
PROGRAM = 'agent slowpoke {\n  model: "scripted"\n  script: [slow(30s, "done")]\n}\nslowpoke("go")\n'


def end_of(folder: Path, run_id: str) -> dict[str, object]:
    lines = [json.loads(line) for line in (folder / ".flow" / "runs" / f"{run_id}.jsonl").read_text().splitlines()]
    return lines[-1]


def stop_then_shut_down(folder: Path, run_id: str, shutdown_after: float | None,
                        interrupt: bool = True) -> dict[str, object]:
    """Start a run, cancel it once it runs (after a kernel's interrupt request, or not), and
    say the process is ending `shutdown_after` seconds after the cancel (None: never); the
    journal's end record."""
    async def go() -> None:
        session = Session(directory=folder)
        try:
            await session.warm_up()
            run = asyncio.ensure_future(session.run_async(PROGRAM, run_id=run_id))
            await asyncio.sleep(0.5)
            assert not run.done()
            if interrupt:
                journal_module.interrupt_requested()
            run.cancel()
            if shutdown_after is not None:
                asyncio.get_running_loop().call_later(shutdown_after, journal_module.process_ending)
            with contextlib.suppress(asyncio.CancelledError):  # or its outcome says `cancelled`
                await run
        finally:
            await session.aclose()

    asyncio.run(go())
    return end_of(folder, run_id)


@pytest.fixture(autouse=True)
def a_fresh_ending(monkeypatch: pytest.MonkeyPatch) -> None:
    """`process_ending` is for the life of the process: each test gets its own flag."""
    monkeypatch.setattr(journal_module, "_ending", threading.Event())
    monkeypatch.setattr(journal_module, "_interrupt_at", 0.0)


def test_a_shutdown_right_after_the_interrupt_leaves_the_run_interrupted(tmp_path: Path) -> None:
    end = stop_then_shut_down(tmp_path, "rrestartsettle1", 0.1)
    assert (end["status"], end.get("error")) == ("interrupted", "cancelled")


def test_an_interrupt_with_no_shutdown_is_the_person_cancelling(tmp_path: Path) -> None:
    end = stop_then_shut_down(tmp_path, "rrestartsettle2", None)
    assert (end["status"], end.get("error")) == ("failed", "cancelled")


def test_a_cancel_without_an_interrupt_request_does_not_wait(tmp_path: Path) -> None:
    end = stop_then_shut_down(tmp_path, "rrestartsettle4", 0.3, interrupt=False)
    assert (end["status"], end.get("error")) == ("failed", "cancelled")


def test_reopened_twin_recording_at_once_a_restart_ends_the_run_for_good(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_module, "RESTART_SETTLE", 0.0)
    end = stop_then_shut_down(tmp_path, "rrestartsettle3", 0.1)
    assert (end["status"], end.get("error")) == ("failed", "cancelled")

"""SIGTERM (or SIGINT) ends `flow serve` cleanly (docs/protocols.md "Bounds and shutdown"): a
run waiting on its caller's question is journaled `interrupted`, the sandboxes are killed, the
process exits, and `flow resume` goes on with the run. The real command as a child, the run
started by the official A2A client and by the MCP client; the exit time is printed, never
asserted beyond a generous bound."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from a2a.types import TaskState

from tests.protocols.helpers import HERE
from tests.protocols.serving import FLOW, NeverAnswers, a2a, a2a_send, flow_serve_child, mcp


@pytest.fixture
def waiting(tmp_path: Path) -> Path:
    shutil.copy(HERE / "waiting.flow", tmp_path / "waiting.flow")
    return tmp_path / "waiting.flow"


def _node_children(pid: int) -> list[psutil.Process]:
    return [p for p in psutil.Process(pid).children(recursive=True) if Path(p.exe()).name == "node"]


def _gone(process: psutil.Process) -> bool:
    try:
        return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _flow(folder: Path, *args: str) -> Any:
    done = subprocess.run([FLOW, *args, "--format", "json"], cwd=folder, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    return json.loads(done.stdout)


def _stop_and_check(child: Any, folder: Path, sig: int) -> tuple[str, list[psutil.Process]]:
    """Send `sig` to the server while a run waits; its exit, its sandboxes gone, the run id it named."""
    sandboxes = _node_children(child.process.pid)
    assert sandboxes, "the waiting run has a sandbox"
    sent = time.monotonic()
    child.process.send_signal(sig)
    code = child.process.wait(60)  # generous: it exits at once
    print(f"flow serve exited {time.monotonic() - sent:.2f} s after {signal.Signals(sig).name}")
    assert code == 0
    deadline = time.monotonic() + 30
    while not all(_gone(p) for p in sandboxes) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(p) for p in sandboxes)
    said = next(line for line in child.lines if "stopped by" in line)
    run = said.rsplit(": ", 1)[1]
    return run, sandboxes


def test_sigterm_journals_a_waiting_a2a_run_interrupted_and_resume_finishes_it(waiting: Path) -> None:
    async def park(url: str) -> Any:
        async with a2a(url) as client:
            return await a2a_send(client, "remove", {"item": "x"})

    with flow_serve_child(waiting, "a2a") as child:
        asked = asyncio.run(park(child.url))
        assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        run, _ = _stop_and_check(child, waiting.parent, signal.SIGTERM)
    assert f"flow serve: stopped by SIGTERM; interrupted 1 run(s), each resumable with `flow resume RUN`: {run}" in child.lines
    listed = {info["run"]: info["status"] for info in _flow(waiting.parent, "runs")}
    assert listed == {run: "interrupted"}
    resumed = _flow(waiting.parent, "resume", run, "--operator", "auto-approve")
    assert resumed["ok"] is True and resumed["result"] == "deleted x" and resumed["run"] == run
    assert {info["run"]: info["status"] for info in _flow(waiting.parent, "runs")} == {run: "completed"}


def test_sigint_stops_an_mcp_server_whose_client_never_answers(waiting: Path) -> None:
    never = NeverAnswers()

    async def park_then_stop(url: str, child: Any) -> str:
        async with mcp(url, elicitation_callback=never, mode="legacy") as client:
            call = asyncio.ensure_future(client.call_tool("ship", {}))
            await asyncio.wait_for(never.asked.wait(), 60)
            run, _ = await asyncio.to_thread(_stop_and_check, child, waiting.parent, signal.SIGINT)
            call.cancel()
            return run

    with flow_serve_child(waiting, "mcp") as child:
        try:
            run = asyncio.run(park_then_stop(child.url, child))
        except BaseExceptionGroup:  # the client's stream broke as the server went: expected here
            run = next(line for line in child.lines if "stopped by" in line).rsplit(": ", 1)[1]
    assert {info["run"]: info["status"] for info in _flow(waiting.parent, "runs")} == {run: "interrupted"}
    assert _flow(waiting.parent, "resume", run, "--operator", "auto-deny")["result"] == "kept"

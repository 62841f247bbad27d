"""What MCP clients of `flow serve --mcp --http` meet (docs/protocols.md): an error result whose
words are in `content` and no structured content, progress notifications with `emit progress`'s
numbers that always increase, and a call the client cancels that stops its run and leaves no
task behind. The official Python SDK client against the real command (with `--token-env`), and
the same command in this process for the twin that takes the cancellation guard away."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.serve import mcp as serve_mcp
from flow_kernel.serve.mcp import ProgressClock
from tests.protocols.helpers import HERE
from tests.protocols.serving import InProcess, flow_serve_child, journals, mcp

# asyncio's log line for a task's or a future's error nobody retrieved
NEVER_RETRIEVED = "exception was never retrieved"


def served(tmp_path: Path) -> Path:
    shutil.copy(HERE / "served.flow", tmp_path / "served.flow")
    return tmp_path / "served.flow"


def progress(kind: str, **data: Any) -> Any:
    return {"type": kind, "data": data}


def test_the_progress_clock_sends_emit_progress_numbers_and_never_goes_back() -> None:
    clock = ProgressClock()
    sent = [clock.read(progress("stage.started", name="s")),        # a tick before any number
            clock.read(progress("progress", done=0, total=100)),    # not above the tick: a tick, with its total
            clock.read(progress("progress", done=1, total=100)),
            clock.read(progress("agent.started", agent="a")),
            clock.read(progress("progress", done=2)),               # the total is kept
            clock.read(progress("progress", done=1, total=100)),    # backwards: a tick
            clock.read(progress("progress", done=100, total=100)),
            clock.read(progress("artifact.published", name="x"))]   # past the total: no total
    assert sent == [(0.5, None), (2 / 3, 100), (1, 100), (1.5, 100), (2, 100), (2.5, 100), (100, 100), (100.5, None)]
    ticks = [clock.read(progress("agent.completed", agent="a"))[0] for _ in range(100_000)]
    assert all(b > a for a, b in zip([100.5, *ticks], ticks, strict=False))  # strictly increasing...
    assert ticks[-1] < 101  # ...and short of the next whole number, which still arrives exactly
    assert clock.read(progress("progress", done=101))[0] == 101


def test_errors_and_progress_over_http(tmp_path: Path) -> None:
    with flow_serve_child(served(tmp_path), "mcp") as child:
        async def go() -> tuple[Any, Any, list[tuple[float, float | None, str | None]]]:
            seen: list[tuple[float, float | None, str | None]] = []

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                seen.append((done, total, message))

            async with mcp(child.url) as client:
                failed = await client.call_tool("words", {"text": ""})
                greeted = await client.call_tool("greet", {"name": "Ada"}, progress_callback=on_progress)
                return failed, greeted, seen

        failed, greeted, seen = asyncio.run(go())
    assert failed.is_error and failed.structured_content is None
    run = failed.meta["flow/run"]
    assert failed.content[0].text == f"assertion: the text is empty (run {run})"
    assert failed.meta["flow/error"] == {"code": "assertion", "message": "the text is empty"}
    assert any(p.stem == run for p in journals(tmp_path))
    assert greeted.structured_content == {"to": "Ada", "text": "Hello, Ada!"}
    # greet: stage, emit 1/2, the agent's two events, emit 2/2, publish
    assert seen == [(0.5, None, "stage compose"), (1, 2, "composing"), (1.5, 2, "agent greeter started"),
                    (1 + 2 / 3, 2, "agent greeter answered"), (2, 2, "done"), (2.5, None, "published greeting.txt")]


async def cancel_then_call_again(url: str) -> Any:
    """Once the sandbox is up, give up on a long call twice, by `notifications/cancelled` (the
    handshake era's client) and by closing the call's stream (the current one's), then make one
    more call."""
    async with mcp(url) as client:
        assert (await client.call_tool("words", {"text": "warm"})).structured_content == {"result": 1}
    for mode in ("legacy", "auto"):
        async with mcp(url, mode=mode) as client:
            with pytest.raises(Exception, match=r"(?i)timed out|timeout"):
                await client.call_tool("wait_long", {}, read_timeout_seconds=2)
    async with mcp(url) as client:
        return await client.call_tool("words", {"text": "a b c"})


def cancelled_runs(folder: Path) -> list[tuple[str, str | None]]:
    """How each journaled wait_long run ended: its status and error code."""
    ends = []
    for path in journals(folder):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if lines[0].get("workflow") == "wait_long":
            end = [line for line in lines if line.get("journal") == "end"][-1]
            ends.append((end["status"], end.get("error")))
    return ends


def test_a_cancelled_call_stops_its_run_and_leaves_no_task_behind(tmp_path: Path) -> None:
    """The real command: after both cancels and the next call, its stderr (to its exit) never
    says an error went unretrieved."""
    with flow_serve_child(served(tmp_path), "mcp") as child:
        counted = asyncio.run(cancel_then_call_again(child.url))
        child.process.terminate()
        child.process.wait(30)
    assert counted.structured_content == {"result": 3}  # the server took the next call
    assert cancelled_runs(tmp_path) == [("failed", "cancelled")] * 2  # stopped, and journaled so
    assert not any(NEVER_RETRIEVED in line for line in child.lines), child.lines


@pytest.mark.parametrize("guarded", [True, False], ids=["guarded", "reopened"])
def test_cancelled_calls_in_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                    guarded: bool) -> None:
    """The same command in this process, where garbage collection can be forced: with the run
    awaited straight in the SDK's handler (the guard taken away), the cancel scope cuts the run's
    own stopping short and an error is left unretrieved."""
    if not guarded:
        monkeypatch.setattr(serve_mcp, "run_to_its_end", lambda run: run)
    server = InProcess(monkeypatch, served(tmp_path), "mcp")
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            counted = asyncio.run(cancel_then_call_again(server.url))
            server.stop()
            gc.collect()
    finally:
        if server.thread.is_alive():
            server.stop()
    assert counted.structured_content == {"result": 3}
    unretrieved = [r for r in caplog.records if NEVER_RETRIEVED in r.getMessage()]
    assert (unretrieved == []) is guarded, [r.getMessage() for r in unretrieved]

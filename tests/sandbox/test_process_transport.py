"""A sandbox process that ends (killed by the host, dead by itself, killed for breaking the
protocol) leaves no subprocess transport for the garbage collector to close after its event
loop is gone: the collector's close would schedule a callback on the closed loop,
'RuntimeError: Event loop is closed' in `BaseSubprocessTransport.__del__` (an unraisable
exception, reported by pytest at whatever later test the collector ran in)."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.errors import FlowWorkerCrashedError
from flow_kernel.sandbox.install import ensure_snapshot
from flow_kernel.sandbox.node import find_node
from flow_kernel.sandbox.process import SandboxProcess


@pytest.fixture(scope="module")
def snapshot() -> Path:
    return ensure_snapshot(find_node())


def _after_the_loop(scenario: Callable[[], Awaitable[SandboxProcess]]) -> tuple[bool, list[str]]:
    """Runs `scenario` in a loop of its own, closes the loop at once (no shutdown turns, as
    a caller's loop may end), then collects: whether the transport was closed, and what the
    collector reported (unraisable exceptions, ResourceWarnings)."""
    seen: list[str] = []
    gc.collect()  # what earlier tests of this process left (their sockets) is theirs, not the scenario's
    hook = sys.unraisablehook

    def record(unraisable: Any) -> None:
        seen.append(f"{unraisable.exc_type.__name__}: {unraisable.exc_value} ({unraisable.object!r})")

    sys.unraisablehook = record
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loop = asyncio.new_event_loop()
            try:
                sandbox = loop.run_until_complete(scenario())
            finally:
                loop.close()
            transport = getattr(sandbox.proc, "_transport", None)
            assert transport is not None  # started by SandboxProcess.start, not adopted
            closed = transport.is_closing()
            del sandbox, transport
            gc.collect()
        seen += [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    finally:
        sys.unraisablehook = hook
    return closed, seen


def test_a_sandbox_killed_by_the_host_leaves_its_transport_closed(snapshot: Path) -> None:
    async def scenario() -> SandboxProcess:
        sandbox = await SandboxProcess.start(snapshot=snapshot)
        await sandbox.kill()
        return sandbox

    assert _after_the_loop(scenario) == (True, [])


def test_a_sandbox_dead_by_itself_leaves_its_transport_closed(snapshot: Path) -> None:
    async def scenario() -> SandboxProcess:
        sandbox = await SandboxProcess.start(snapshot=snapshot)
        assert sandbox.pid is not None
        request = asyncio.ensure_future(sandbox.request("run", {
            "run": "sleep", "unrestricted": True, "args": {},
            "module": "async def main(rt, args):\n    import asyncio\n    await asyncio.sleep(30)\n"}))
        await asyncio.sleep(0.2)
        os.kill(sandbox.pid, signal.SIGKILL)  # not through `kill`: the reader sees the end
        with pytest.raises(FlowWorkerCrashedError):
            await request
        return sandbox  # and the caller's loop ends at once, nobody calls kill()

    assert _after_the_loop(scenario) == (True, [])


def test_a_sandbox_killed_for_a_bad_line_leaves_its_transport_closed(snapshot: Path) -> None:
    async def scenario() -> SandboxProcess:
        sandbox = await SandboxProcess.start(snapshot=snapshot)
        module = ("async def main(rt, args):\n    import flowbox.bridge as b, asyncio\n"
                  "    b._bridge.io.write('this is not json')\n    await asyncio.sleep(5)\n")
        with pytest.raises(FlowWorkerCrashedError, match="not a JSON object"):
            await sandbox.request("run", {"run": "bad", "module": module, "args": {}, "unrestricted": True})
        return sandbox

    assert _after_the_loop(scenario) == (True, [])

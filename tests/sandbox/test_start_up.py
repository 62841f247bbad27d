"""Start-up of a sandbox (issue 23): the warm-up run a spare makes before it is handed out,
and the kernel's first sandbox started before the kernel's imports and taken over by the
pool. Real Node + Pyodide processes."""

from __future__ import annotations

import asyncio
import subprocess
from typing import Any

import pytest

from flow_kernel.errors import FlowIsolateError
from flow_kernel.runtime.executors import WARM_UP_SOURCE, warm_up_payload
from flow_kernel.sandbox import early, pool
from flow_kernel.sandbox.install import ensure_snapshot
from flow_kernel.sandbox.node import find_node
from flow_kernel.sandbox.pool import SandboxPool
from flow_kernel.sandbox.process import SandboxProcess, start_early

RESULT = "async def main(rt, args):\n    return 7\n"


def _payload(module: str) -> dict[str, Any]:
    return {**warm_up_payload(), "module": module}


def test_the_warm_up_cell_compiles_and_runs_in_a_sandbox() -> None:
    async def go() -> Any:
        process = await SandboxProcess.start(snapshot=ensure_snapshot(find_node()))
        try:
            return await process.request("run", warm_up_payload())
        finally:
            await process.close()

    assert "main" in warm_up_payload()["module"] and "print" in WARM_UP_SOURCE
    reply = asyncio.run(go())
    assert reply["result"] == 3  # o.a + len(o.b): it ran to the end, not into an error


def _unrestricted(module: str) -> dict[str, Any]:
    return {**_payload(module), "unrestricted": True}  # the door tests' verifier bypass: a marker in `sys`


MARK = "import sys\nasync def main(rt, args):\n    sys.flow_warmed = getattr(sys, 'flow_warmed', 0) + 1\n"
PROBE = "import sys\nasync def main(rt, args):\n    return getattr(sys, 'flow_warmed', 0)\n"


def test_a_pool_warms_its_spares_up_but_not_a_process_a_run_waits_for() -> None:
    async def go() -> None:
        pool = SandboxPool(warm=1, warm_up=_unrestricted(MARK))
        try:
            first = await pool.acquire()  # nothing idle: spawned for this run, which does not wait for a warm-up
            assert (await first.request("run", _unrestricted(PROBE)))["result"] == 0
            assert not pool._starting and not pool.idle  # the running process is the one kept warm: no spare
            pool.release(first, recycle=True)  # retired: a spare replaces it, in the background
            await asyncio.wait(set(pool._starting))
            await asyncio.sleep(0)
            (spare,) = pool.idle
            assert spare is not first
            assert (await spare.request("run", _unrestricted(PROBE)))["result"] == 1  # warmed up once, before idle
        finally:
            await pool.close()

        failing = SandboxPool(warm=0, warm_up=_payload("async def main(rt, args):\n    raise ValueError('x')\n"))
        try:
            process = await failing._spawn(warm_up=True)  # a warm-up that fails leaves a usable process
            assert process.alive and (await process.request("run", _payload(RESULT)))["result"] == 7
            failing.release(process, recycle=True)
        finally:
            await failing.close()

    asyncio.run(go())


def test_a_warm_up_that_never_ends_fails_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool, "WARM_UP_TIMEOUT", 1.0)
    hanging = "import asyncio\nasync def main(rt, args):\n    await asyncio.sleep(3600)\n"

    async def go() -> None:
        stuck = SandboxPool(warm=0, warm_up=_unrestricted(hanging))
        with pytest.raises(FlowIsolateError, match="warm-up"):
            await stuck._spawn(warm_up=True)
        await stuck.close()

    asyncio.run(go())


def test_the_kernels_early_sandbox_is_taken_over_by_the_first_start() -> None:
    snapshot = ensure_snapshot(find_node())
    assert snapshot is not None
    start_early()  # what `python -m flow_kernel -f …` does before its imports
    assert early._early is not None
    pid = early._early[1].pid

    async def go() -> None:
        process = await SandboxProcess.start(snapshot=snapshot)
        try:
            assert process.pid == pid  # no second process: the early one answered
            assert process.ready.get("snapshot") is True
            assert (await process.request("run", _payload(RESULT)))["result"] == 7
        finally:
            await process.close()
        assert not process.alive
        assert early._early is None  # handed over once

    asyncio.run(go())


def test_an_early_sandbox_for_another_command_is_killed_not_used() -> None:
    stand_in = subprocess.Popen(["sleep", "60"])  # what launch() keeps: the command and the process
    early._early = (["node", "runner.mjs", "--memory-mb", "256"], stand_in)
    assert early.take(["node", "runner.mjs", "--memory-mb", "512"]) is None
    assert stand_in.poll() is not None  # killed
    assert early._early is None

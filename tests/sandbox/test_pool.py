"""The pool's lifecycle through real runs: warm reuse, crashes, deadlines, steps."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.executors import SandboxExecutor
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.pool import SandboxPool


@pytest.fixture(scope="module")
def env() -> Iterator[tuple[SandboxPool, asyncio.AbstractEventLoop]]:
    loop = asyncio.new_event_loop()
    pool = SandboxPool()
    yield pool, loop
    loop.run_until_complete(pool.close())
    loop.close()


def run(env: tuple[SandboxPool, asyncio.AbstractEventLoop], source: str) -> RunOutcome:
    pool, loop = env
    compiled = compile_source(SourceFile("pool.flow", source))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    return loop.run_until_complete(run_compiled(compiled, SandboxExecutor(pool)))


def test_warm_sandbox_is_reused(env: tuple[SandboxPool, asyncio.AbstractEventLoop]) -> None:
    pool, loop = env
    loop.run_until_complete(pool.prestart())
    assert len(pool.idle) == 1 and pool.idle[0].alive
    assert 50 * 2**20 < pool.idle[0].rss_bytes() < 2**31  # a real Node + Pyodide process
    assert run(env, "1 + 1").result == 2
    started = env[0].started
    for i in range(3):
        assert run(env, f"{i} * 2").result == i * 2
    assert env[0].started == started  # no new process for ordinary runs


def test_killed_sandbox_is_worker_crashed_and_the_next_run_works(env: tuple[SandboxPool, asyncio.AbstractEventLoop]) -> None:
    pool, loop = env
    compiled = compile_source(SourceFile("pool.flow", 'agent slow { model: "scripted", script: [slow(5s, "late")] }\nslow("go")'))
    executor = SandboxExecutor(pool)
    original = executor.pool.run

    async def run_and_kill(*a: Any, **kw: Any) -> Any:
        bind = kw["bind"]

        def bind_and_kill(process: Any) -> None:
            bind(process)
            loop.call_later(0.5, os.kill, process.pid, signal.SIGKILL)  # mid-run: the agent takes 5 s

        kw["bind"] = bind_and_kill
        return await original(*a, **kw)

    executor.pool = type("P", (), {"run": staticmethod(run_and_kill)})()  # type: ignore[assignment]
    started = time.monotonic()
    outcome = loop.run_until_complete(run_compiled(compiled, executor))
    assert time.monotonic() - started < 4
    assert outcome.error is not None and outcome.error.code == "worker-crashed", outcome.to_json()
    assert [e["type"] for e in outcome.events][:2] == ["workflow.started", "agent.started"]
    assert run(env, '"alive"').result == "alive"


def test_the_run_request_is_written_before_bind_and_within_the_call(env: tuple[SandboxPool, asyncio.AbstractEventLoop]) -> None:
    """`bind` sees the run's request already written (its reply pending): the run needs no
    loop turn of its own before Node has it."""
    pool, loop = env
    compiled = compile_source(SourceFile("pool.flow", "1 + 1"))
    executor = SandboxExecutor(pool)
    original = executor.pool.run
    seen: list[int] = []

    async def run_and_look(*a: Any, **kw: Any) -> Any:
        bind = kw["bind"]

        def bind_and_look(process: Any) -> None:
            seen.append(len(process.pending))
            bind(process)

        kw["bind"] = bind_and_look
        return await original(*a, **kw)

    executor.pool = type("P", (), {"run": staticmethod(run_and_look)})()  # type: ignore[assignment]
    outcome = loop.run_until_complete(run_compiled(compiled, executor))
    assert outcome.result == 2 and seen == [1]
    assert all(not p.pending for p in pool.idle)  # the reply's future left `pending`


def test_busy_loop_meets_the_steps_limit(env: tuple[SandboxPool, asyncio.AbstractEventLoop]) -> None:
    outcome = run(env, "var i = 0\nwhile true { i = i + 1 }")
    assert outcome.error is not None and outcome.error.code == "limit-exceeded"
    assert outcome.error.span is not None and outcome.error.span["line"] == 2
    assert outcome.bindings == {"i": outcome.bindings["i"]} and outcome.bindings["i"] > 100


def test_busy_loop_meets_the_deadline_and_the_host_stays_responsive(env: tuple[SandboxPool, asyncio.AbstractEventLoop]) -> None:
    pool, loop = env
    ticks: list[float] = []

    async def heartbeat() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.05)

    compiled = compile_source(SourceFile("pool.flow", "limits { duration: 800ms, steps: 100000000 }\nvar i = 0\nwhile true { i = i + 1 }"))

    async def both() -> RunOutcome:
        beat = asyncio.ensure_future(heartbeat())
        try:
            return await run_compiled(compiled, SandboxExecutor(pool))
        finally:
            beat.cancel()

    started = time.monotonic()
    outcome = loop.run_until_complete(both())
    assert outcome.error is not None and outcome.error.code == "workflow-timeout", outcome.to_json()
    assert time.monotonic() - started < 5
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert gaps and max(gaps) < 0.5  # the host's loop kept running while the sandbox spun
    assert run(env, "[1][0]").result == 1


def test_nested_workflow_deadline(env: tuple[SandboxPool, asyncio.AbstractEventLoop]) -> None:
    source = ("limits { steps: 100000000 }\nworkflow spin() -> int {\n  limits { duration: 300ms, steps: 100000000 }\n  var i = 0\n"
              "  while true { i = i + 1 }\n  return i\n}\nspin()")
    outcome = run(env, source)
    assert outcome.error is not None and outcome.error.code == "workflow-timeout"
    assert outcome.error.span is not None and outcome.error.span["line"] == 5


def test_memory_bomb_in_flow_is_isolate_and_recycled(env: tuple[SandboxPool, asyncio.AbstractEventLoop]) -> None:
    source = 'limits { steps: 100000000 }\nvar s = "xxxxxxxxxxxxxxxx"\nvar xs: string[] = []\nwhile true { s = s + s\nxs = xs + [s] }'
    outcome = run(env, source)
    assert outcome.error is not None and outcome.error.code in ("isolate", "evaluation"), outcome.to_json()
    assert run(env, "2 + 2").result == 4


def test_a_first_run_that_grew_the_heap_is_recycled_and_a_spare_takes_over() -> None:
    # Growth is measured from the fresh heap the sandbox reports when ready: a baseline
    # taken from the first run's reply would let a process keep a heap its first run
    # blew up (wasm memory never shrinks). A pool of its own, so the growing run is the
    # first of its process.
    grow = "async def main(rt, args):\n    x = [bytearray(10**6) for _ in range(150)]\n    del x\n    return 1\n"
    small = "async def main(rt, args):\n    return 2\n"

    async def nothing(op: str, payload: dict[str, Any]) -> Any:
        return None

    async def go() -> tuple[list[int | None], int | None, int]:
        pool = SandboxPool()
        pids: list[int | None] = []

        async def run_one(i: int, module: str) -> None:
            await pool.run(module, {"run": f"g{i}", "unrestricted": True, "args": {}}, handler=nothing,
                           on_notify=lambda op, payload: None, bind=lambda p: pids.append(p.pid))

        try:
            await run_one(0, grow)
            # The recycled process is replaced in the background, before anyone asks.
            async with asyncio.timeout(30):
                while not pool.idle:
                    await asyncio.sleep(0.05)
            spare, started = pool.idle[0].pid, pool.started
            await run_one(1, small)
            return pids, spare, pool.started - started
        finally:
            await pool.close()

    pids, spare, spawned_later = asyncio.run(go())
    assert pids[1] != pids[0]  # the first run grew the heap by 150 MB: its process retired
    assert pids[1] == spare  # the spare started after the recycle ran the next run
    assert spawned_later == 0  # the running process is the warm one: no spare at the hand-out, none on demand

"""The pool starts sandboxes only as the work needs them, reuses them, and closes the ones
beyond `warm` that sit idle. Fake processes (no Node): these tests are about the pool's
bookkeeping; test_pool.py and test_start_up.py run the real thing."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from flow_kernel.errors import FlowIsolateError
from flow_kernel.sandbox import pool as pool_module
from flow_kernel.sandbox.pool import SandboxPool

_pids = itertools.count(1000)


class FakeProcess:
    def __init__(self) -> None:
        self.pid = next(_pids)
        self.alive = True
        self.closed = False

    async def close(self) -> None:
        self.alive, self.closed = False, True


class FakePool(SandboxPool):
    """A pool whose processes start in `start_s` and are fakes; `fail` makes starts fail."""

    def __init__(self, start_s: float = 0.01, fail: bool = False, **options: Any) -> None:
        super().__init__(use_snapshot=False, **options)
        self.start_s, self.fail = start_s, fail
        self.spawned: list[FakeProcess] = []

    async def _spawn(self, *, warm_up: bool = False) -> Any:
        await asyncio.sleep(self.start_s)
        if self.fail:
            raise FlowIsolateError("the sandbox did not start: no node")
        process = FakeProcess()
        self.spawned.append(process)
        self.started += 1
        return process


def test_short_runs_at_once_share_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    # Eight runs at once that each give their process back at once: the waiting ones take
    # the released process instead of starting seven more (nothing here waits SPAWN_AFTER).
    monkeypatch.setattr(pool_module, "SPAWN_AFTER", 60.0)  # (a fake's start does not measure it)

    async def go() -> FakePool:
        pool = FakePool(max_processes=8)

        async def one_run() -> int:
            process = await pool.acquire()
            await asyncio.sleep(0)
            pool.release(process, recycle=False)
            return int(process.pid)

        try:
            pids = await asyncio.gather(*(one_run() for _ in range(8)))
            assert len(set(pids)) == 1
            return pool
        finally:
            await pool.close()

    pool = asyncio.run(go())
    assert pool.started == 1


def test_runs_that_hold_their_process_grow_the_pool_to_the_cap_and_no_further(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool_module, "SPAWN_AFTER", 0.01)

    async def go() -> tuple[FakePool, list[int]]:
        pool = FakePool(max_processes=3)
        held: list[Any] = []
        all_held = asyncio.Event()

        async def one_run() -> None:
            process = await pool.acquire()
            held.append(process)
            if len(held) == 3:
                all_held.set()
            await all_held.wait()  # each run holds its process until all three run at once
            pool.release(process, recycle=False)

        try:
            await asyncio.gather(*(one_run() for _ in range(3)))
            return pool, [p.pid for p in held]
        finally:
            await pool.close()

    pool, pids = asyncio.run(go())
    assert len(set(pids)) == 3 and pool.started == 3


def test_one_start_at_a_time_while_runs_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    # Five runs waiting for a slow start: their waits past SPAWN_AFTER do not each start one.
    monkeypatch.setattr(pool_module, "SPAWN_AFTER", 0.01)

    async def go() -> int:
        pool = FakePool(start_s=0.2, max_processes=8)

        async def one_run() -> None:
            process = await pool.acquire()
            assert len(pool._starting) <= 1
            pool.release(process, recycle=False)

        try:
            await asyncio.gather(*(one_run() for _ in range(5)))
            return pool.started
        finally:
            await pool.close()

    assert asyncio.run(go()) <= 2  # the first start, and at most one asked as it finished


def test_a_run_waits_as_long_as_a_start_takes_before_it_starts_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # A run behind the only process, held 0.2 s: with starts that took 60 s it waits for
    # the release; with starts that took 0.01 s it starts its own.
    async def go(spawn_after: float) -> tuple[int, bool]:
        pool = FakePool(max_processes=4)
        pool.spawn_after = spawn_after  # as a real start would have measured it
        try:
            first = await pool.acquire()
            second = asyncio.ensure_future(pool.acquire())
            await asyncio.sleep(0.2)
            pool.release(first, recycle=False)
            return pool.started, (await second) is first
        finally:
            await pool.close()

    assert asyncio.run(go(60.0)) == (1, True)
    assert asyncio.run(go(0.01)) == (2, False)


def test_a_failed_start_reaches_the_waiting_run() -> None:
    async def go() -> None:
        pool = FakePool(fail=True, max_processes=2)
        try:
            with pytest.raises(FlowIsolateError, match="no node"):
                await asyncio.wait_for(pool.acquire(), 10)
            assert not pool._waiters
        finally:
            await pool.close()

    asyncio.run(go())


def test_a_process_beyond_warm_that_sits_idle_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool_module, "SPAWN_AFTER", 0.0)

    async def go() -> tuple[list[FakeProcess], list[FakeProcess]]:
        pool = FakePool(warm=1, idle_release_s=0.05)
        try:
            first, second = await pool.acquire(), await pool.acquire()  # two at once: two processes
            pool.release(first, recycle=False)
            pool.release(second, recycle=False)
            assert len(pool.idle) == 2
            async with asyncio.timeout(10):
                while len(pool.idle) > 1:
                    await asyncio.sleep(0.02)
            await asyncio.sleep(0)  # let the close run
            return list(pool.idle), pool.spawned
        finally:
            await pool.close()

    idle, spawned = asyncio.run(go())
    (kept,) = idle
    assert kept is spawned[1]  # the most recently used stays; the one idle longer is closed
    assert spawned[0].closed


def test_the_warm_process_is_kept_however_long_it_sits_idle() -> None:
    async def go() -> FakePool:
        pool = FakePool(warm=1, idle_release_s=0.01)
        try:
            process = await pool.acquire()
            pool.release(process, recycle=False)
            await asyncio.sleep(0.1)
            assert pool.idle == [process] and not process.closed
            return pool
        finally:
            await pool.close()

    pool = asyncio.run(go())
    assert pool._trim_timer is None


def test_a_cancelled_run_does_not_lose_the_process_handed_to_it() -> None:
    async def go() -> None:
        pool = FakePool(max_processes=2)
        try:
            waiting = asyncio.ensure_future(pool.acquire())
            await asyncio.sleep(0)
            (waiter,) = pool._waiters
            process = FakeProcess()
            waiter.set_result(process)  # handed over in the same tick as the cancel
            waiting.cancel()
            try:
                got = await waiting
            except asyncio.CancelledError:
                assert process in pool.idle  # given back to the pool
            else:
                assert got is process  # the run got it after all (it returns it when it ends)
        finally:
            await pool.close()

    asyncio.run(go())

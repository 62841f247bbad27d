"""When the step check looks at the clock (`Runtime._look_at_clock`): every STEP_CLOCK_EVERY
steps near a deadline, CLOCK_SPARSE times as rarely while every running frame's deadline is
far at the recent pace, and at the next check after a workflow starts. The clock here is
fake and moves with the step count, so every figure is exact."""

from __future__ import annotations

import asyncio
import contextvars
import importlib
from typing import Any

import pytest

import tests.sandbox.bootstrap_import  # noqa: F401 - makes `flowbox` importable

runtime = importlib.import_module("flowbox.runtime")
FlowError = importlib.import_module("flowbox.errors").FlowError

EVERY = runtime.STEP_CLOCK_EVERY
SPARSE = EVERY * runtime.CLOCK_SPARSE
LIMITS = {"agent_runs": 1, "duration": 600_000, "concurrency": 1, "steps": 10**9}


class Bridge:
    unflushed = False

    def notify(self, method: str, params: Any) -> None:
        pass


class Clock:
    """`time` for the runtime: `per_step` seconds a step, and the step counts it was read at."""

    last_reads: list[int] = []

    def __init__(self, rt: Any, per_step: float) -> None:
        self.rt, self.per_step = rt, per_step
        self.reads: list[int] = []
        self.offset = 0.0

    def monotonic(self) -> float:
        self.reads.append(self.rt.steps)
        Clock.last_reads = self.reads
        return float(self.offset + self.rt.steps * self.per_step)


def in_frame(deadline: float, per_step: float, body: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Clock]:
    """Run `body(rt)` in a fresh context whose frame has `deadline`, as `_frame` sets one up."""
    rt = runtime.Runtime(Bridge(), {})
    clock = Clock(rt, per_step)
    monkeypatch.setattr(runtime, "time", clock)
    frame = runtime.Frame("w", "s1", 10**9, "w", 10**9, deadline, 1)
    rt.caps.append(frame.cap)
    rt._set_lowest_cap(frame.cap)
    rt.deadlines.append(deadline)

    def run() -> None:
        runtime._frame.set(frame)
        body(rt)

    contextvars.Context().run(run)
    return rt, clock


def steps(n: int) -> Any:
    def body(rt: Any) -> None:
        for _ in range(n):
            rt.step()
    return body


def test_far_from_the_deadline_the_clock_is_read_every_sparse_stretch(monkeypatch: pytest.MonkeyPatch) -> None:
    _, clock = in_frame(1000.0, 1e-6, steps(64 * 100), monkeypatch)
    assert clock.reads == list(range(EVERY, 64 * 100 + 1, SPARSE))


def test_a_passed_deadline_is_noticed_within_every_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 1 µs a step a 50 ms deadline is step 50,000: looked at every 64 steps near it."""
    with pytest.raises(FlowError) as failed:
        in_frame(0.05, 1e-6, steps(10**6), monkeypatch)
    assert failed.value.code == "workflow-timeout"
    reads = Clock.last_reads
    assert 50_000 < reads[-1] <= 50_000 + EVERY
    assert reads[-1] - reads[-2] == EVERY


def test_steps_that_suddenly_slow_down_are_late_by_one_sparse_stretch_at_most(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pace was 1 µs a step; from step 10,000 a step takes 10 ms, so the 1 s deadline
    passes at step ~10,099: it is noticed within SPARSE steps of that, not later."""

    def body(rt: Any) -> None:
        clock = runtime.time
        for _ in range(10**6):
            if rt.steps == 10_000:
                clock.offset, clock.per_step = 10_000 * (1e-6 - 1e-2), 1e-2
            rt.step()

    with pytest.raises(FlowError):
        in_frame(1.0, 1e-6, body, monkeypatch)
    passed = 10_000 + (1.0 - 0.01) / 1e-2
    assert passed < Clock.last_reads[-1] <= passed + SPARSE


def test_a_workflow_that_starts_is_looked_at_the_next_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Far from the outer deadline the looks are sparse; a nested workflow with a near
    deadline makes the next check look, and every check after it while it is near."""
    rt = runtime.Runtime(Bridge(), {})
    clock = Clock(rt, 1e-6)
    monkeypatch.setattr(runtime, "time", clock)

    async def inner(rt: Any) -> int:
        start: int = rt.steps
        for _ in range(3 * EVERY):
            rt.step()
        return start

    async def outer(rt: Any) -> Any:
        for _ in range(EVERY * 3 + 5):
            rt.step()
        return await rt._frame("inner", inner, [], dict(LIMITS, duration=1))  # 1 ms: 1,000 steps

    start = asyncio.run(rt._frame("outer", outer, [], LIMITS))
    first = (start // EVERY + 1) * EVERY
    assert clock.reads[:2] == [0, EVERY]  # the outer frame's start, then its first check
    assert [r for r in clock.reads if r > start] == [first, first + EVERY, first + 2 * EVERY]

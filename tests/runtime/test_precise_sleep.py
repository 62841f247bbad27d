"""runtime/providers/timer.py: the scripted provider's latency ends at its deadline (never
before it), sleeps end in deadline order, and the timerfd behind them lives only while a
sleep is pending, cancelled ones included. No timed assertion: only "not before"."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys

import pytest

from flow_kernel.lang.ast import AgentDecl
from flow_kernel.lang.check import check
from flow_kernel.runtime.providers.base import ProviderRequest
from flow_kernel.runtime.providers.local import ScriptedProvider, parse_script
from flow_kernel.runtime.providers.timer import precise_sleep
from flow_kernel.source import SourceFile

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the timerfd is Linux's")


def timer_fds() -> int:
    """This process's open timerfds."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own fd, closed already
            count += os.readlink(f"/proc/self/fd/{name}") == "anon_inode:[timerfd]"
    return count


def test_a_sleep_never_ends_before_its_deadline() -> None:
    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        overshoot = []
        for delay in (0.001, 0.0025, 0.004):
            start = loop.time()
            await precise_sleep(delay)
            overshoot.append(loop.time() - (start + delay))
        return overshoot

    assert all(late >= 0 for late in asyncio.run(main()))


def test_sleeps_end_in_the_order_of_their_deadlines() -> None:
    async def main() -> list[int]:
        ended: list[int] = []

        async def one(n: int, delay: float) -> None:
            await precise_sleep(delay)
            ended.append(n)

        await asyncio.gather(one(3, 0.012), one(1, 0.004), one(2, 0.008), one(0, 0))
        return ended

    assert asyncio.run(main()) == [0, 1, 2, 3]


@linux
def test_the_timer_is_closed_when_no_sleep_is_pending() -> None:
    before = timer_fds()

    async def main() -> tuple[int, int, int]:
        sleeping = asyncio.ensure_future(asyncio.gather(precise_sleep(0.002), precise_sleep(0.003)))
        await asyncio.sleep(0)
        during = timer_fds()
        await sleeping
        await asyncio.sleep(0)  # the last sleep's end lets the fd go
        after = timer_fds()
        long = asyncio.ensure_future(precise_sleep(60))
        await asyncio.sleep(0)
        long.cancel()
        with pytest.raises(asyncio.CancelledError):
            await long
        await asyncio.sleep(0)
        return during, after, timer_fds()

    during, after, after_cancel = asyncio.run(main())
    assert (during, after, after_cancel) == (before + 1, before, before)


def test_a_scripted_agent_waits_its_latency() -> None:
    decl = check(SourceFile("a.flow", 'agent a { model: "scripted", script: [slow(5ms, "done")] }\n')).decls["a"].node
    assert isinstance(decl, AgentDecl)
    provider = ScriptedProvider({"a": parse_script(decl)})

    async def main() -> tuple[object, float]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        reply = await provider.attempt(ProviderRequest("a", "scripted", "", "hi", {}, call_prompt="hi"))
        return reply.output, loop.time() - start

    value, waited = asyncio.run(main())
    assert value == "done" and waited >= 0.005


def test_a_cancelled_earlier_sleep_does_not_hold_up_a_later_one() -> None:
    async def main() -> tuple[bool, bool]:
        early = asyncio.ensure_future(precise_sleep(0.002))
        late = asyncio.ensure_future(precise_sleep(0.004))
        await asyncio.sleep(0)
        early.cancel()
        await late
        return early.cancelled(), late.done()

    assert asyncio.run(main()) == (True, True)


def test_a_latency_past_what_a_timespec_holds_waits_without_an_error() -> None:
    # A script's `slow(…)` takes any duration literal: 10^22 ms is ~10^19 s, past a C long's
    # seconds in the fd's `timespec` (refused with EINVAL before the fd was armed at most a day ahead).
    decl = check(SourceFile("a.flow", 'agent a { model: "scripted", script: [slow(10000000000000000000000ms, "x")] }\n'))
    node = decl.decls["a"].node
    assert isinstance(node, AgentDecl) and all(d.severity.name != "ERROR" for d in decl.diagnostics)
    provider = ScriptedProvider({"a": parse_script(node)})

    async def main() -> None:
        request = ProviderRequest("a", "scripted", "", "hi", {}, call_prompt="hi")
        for waiting in (provider.attempt(request), precise_sleep(float("inf"))):
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(waiting, 0.01)

    asyncio.run(main())


@linux
def test_a_deadline_beyond_the_fds_reach_is_met_by_arming_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("flow_kernel.runtime.providers.timer.MAX_ARM", 0.001)

    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await precise_sleep(0.005)  # five or more arms of at most 1 ms
        return loop.time() - start

    assert asyncio.run(main()) >= 0.005

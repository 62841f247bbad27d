"""`journal.ending_after_interrupt`: a run an interrupt request stopped waits for the
process's shutdown (`process_ending`, perhaps on another thread: a kernel's control thread)
until a deadline — woken by it, not polling for it. The journal records that follow are
tests/runtime/test_restart_settle.py's."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from flow_kernel.runtime.durable import journal as journal_module


@pytest.fixture(autouse=True)
def a_fresh_ending(monkeypatch: pytest.MonkeyPatch) -> None:
    """`process_ending` is for the life of the process: each test gets its own flag."""
    monkeypatch.setattr(journal_module, "_ending", threading.Event())
    monkeypatch.setattr(journal_module, "_interrupt_at", 0.0)


def timers_while(coroutine: Any) -> tuple[Any, int]:
    """Run `coroutine` on a fresh loop; its result, and how many timers the loop was asked
    for meanwhile (a poll asks for one each turn)."""
    async def go() -> tuple[Any, int]:
        loop = asyncio.get_running_loop()
        count = 0
        call_at = loop.call_at

        def counting(when: float, callback: Any, *args: Any, context: Any = None) -> asyncio.TimerHandle:
            nonlocal count
            count += 1
            return call_at(when, callback, *args, context=context)

        loop.call_at = counting  # type: ignore[assignment]
        return await coroutine, count

    return asyncio.run(go())


def test_with_no_shutdown_it_waits_out_the_deadline_on_one_timer() -> None:
    journal_module.interrupt_requested()
    ending, timers = timers_while(journal_module.ending_after_interrupt(1.0))
    assert ending is False
    assert timers == 1, timers  # the deadline's; the poll it replaced asked for ~50


def test_a_shutdown_on_another_thread_wakes_it() -> None:
    journal_module.interrupt_requested()

    async def shut_down_once_waiting() -> bool:
        waiting = asyncio.ensure_future(journal_module.ending_after_interrupt(600))
        for _ in range(100):  # until it waits (a few turns of the loop)
            if journal_module._ending_waiters:
                break
            await asyncio.sleep(0)
        assert journal_module._ending_waiters, "it never waited for the shutdown"
        threading.Thread(target=journal_module.process_ending).start()
        ending = await asyncio.wait_for(waiting, 120)  # woken: nowhere near its 600 s deadline
        assert not journal_module._ending_waiters
        return ending

    ending, timers = timers_while(shut_down_once_waiting())
    assert ending is True and timers <= 2, timers  # the deadline's and the guard's


def test_no_recent_interrupt_or_an_ending_already_answers_at_once() -> None:
    assert timers_while(journal_module.ending_after_interrupt(600)) == (False, 0)  # no interrupt request
    journal_module.interrupt_requested()
    journal_module.process_ending()
    assert timers_while(journal_module.ending_after_interrupt(600)) == (True, 0)

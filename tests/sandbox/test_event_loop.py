"""The sandbox's event loop (flowbox/loop.py): ready callbacks queue in Python and run in
one `setImmediate` a turn, the ones a turn makes ready wait for the next turn."""

from __future__ import annotations

import textwrap

from tests.sandbox.sandbox_helpers import Sandbox, sandbox

__all__ = ["sandbox"]


def with_wakes_counted(body: str) -> str:
    """Sandbox code that runs `body` (which sets `value`; `asyncio` and `loop` are there)
    with the loop's requests for a turn counted, and returns `[value, wake-ups]`."""
    return textwrap.dedent("""
        import asyncio
        loop = asyncio.get_running_loop()
        wakes = [0]
        wake = loop._wake
        def counting():
            wakes[0] += 1
            wake()
        loop._wake = counting
        try:
    """) + textwrap.indent(textwrap.dedent(body), "    ") + textwrap.dedent("""
        finally:
            loop._wake = wake
        return [value, wakes[0]]
    """)


def test_a_burst_of_ready_callbacks_wakes_node_once_a_turn(sandbox: Sandbox) -> None:
    # 200 futures completed in one go, and the tasks waiting on them: with WebLoop every
    # callback was a setImmediate of its own (400+ here); now it is one per turn.
    result = sandbox.raw(with_wakes_counted("""
        futures = [loop.create_future() for _ in range(200)]
        async def waiter(f):
            return await f
        tasks = [asyncio.ensure_future(waiter(f)) for f in futures]
        await asyncio.sleep(0)
        for f in futures:
            f.set_result(1)
        value = sum(await asyncio.gather(*tasks))
    """))
    assert isinstance(result, list), result
    total, wakes = result
    assert total == 200
    assert 1 <= wakes <= 8, wakes


def test_callbacks_run_in_the_order_they_were_made_ready(sandbox: Sandbox) -> None:
    result = sandbox.raw("""
        import asyncio
        loop = asyncio.get_running_loop()
        seen = []
        done = loop.create_future()
        for i in range(50):
            loop.call_soon(seen.append, i)
        loop.call_later(0, seen.append, 50)  # due now: queued like call_soon
        loop.call_soon(lambda: 1 / 0)  # an error goes to the loop's handler; the rest still run
        loop.call_soon(done.set_result, None)
        await done
        return seen
    """)
    assert result == list(range(51))


def test_a_task_that_never_stops_yielding_leaves_node_its_turns(sandbox: Sandbox) -> None:
    # A turn runs only what was ready when it began: a spinning task re-queued in a turn waits
    # for the next one, so Node still fires its timers in between (asyncio.sleep(0.05) here).
    # Run to exhaustion inside one turn, the timer would never fire and the run would end at
    # its deadline.
    result = sandbox.raw("""
        import asyncio
        stop = [False]
        async def spin():
            n = 0
            while not stop[0]:
                n += 1
                await asyncio.sleep(0)
            return n
        task = asyncio.ensure_future(spin())
        await asyncio.sleep(0.05)
        stop[0] = True
        return await task
    """, deadline_ms=5000)
    assert isinstance(result, int) and result > 0, result


def test_a_reply_wakes_its_task_in_the_read_that_brought_it(sandbox: Sandbox) -> None:
    # The runner hands a read's lines to Python (bridge.on_lines) and the tasks their replies
    # wake run in that same call (FlowLoop.run_after): no `setImmediate` turn of their own,
    # so a round trip to the host asks Node for no wake-up. With the turn asked for after
    # the read, each of these round trips woke Node once.
    async def echo(op: str, payload: dict[str, object]) -> object:
        return payload

    sandbox.ensure_alive().handler = echo
    result = sandbox.raw(with_wakes_counted("""
        from flowbox import bridge
        value = [await bridge._bridge.invoke("echo", {"n": n}) for n in range(5)]
    """))
    assert result == [[{"n": n} for n in range(5)], 0], result


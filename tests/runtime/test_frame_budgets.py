"""A run's frame budgets (runtime/budgets.py): `Frames` keeps each frame's chain until the
frames change, and `Gate.take` takes a free concurrency slot exactly when `acquire` would
without waiting."""

from __future__ import annotations

import asyncio

import pytest

from flow_kernel.errors import LimitExceededError
from flow_kernel.runtime.budgets import (
    FrameBudget,
    Frames,
    Gate,
    charge_agent_run,
    cost_limited,
    enclosing,
)


def test_a_chain_follows_the_frames_as_they_change() -> None:
    frames = Frames()
    frames["inner"] = FrameBudget("outer", 5, name="inner")
    assert [b.name for b in enclosing(frames, "inner")] == ["inner"]  # its parent not announced yet
    frames["outer"] = FrameBudget(None, 1, name="outer", cost=1.0)
    assert [b.name for b in enclosing(frames, "inner")] == ["inner", "outer"]
    assert [b.name for b in cost_limited(frames, "inner")] == ["outer"]
    charge_agent_run(frames, "inner", "a")
    with pytest.raises(LimitExceededError):  # the outer frame's one run is spent
        charge_agent_run(frames, "inner", "a")
    frames["outer"] = FrameBudget(None, 1, name="outer again")  # announced again: a new budget
    charge_agent_run(frames, "inner", "a")
    assert frames["outer"].used == 1 and cost_limited(frames, "inner") == []
    frames.update(inner=FrameBudget(None, 3, name="alone"))
    assert [b.name for b in enclosing(frames, "inner")] == ["alone"]
    del frames["inner"]
    assert enclosing(frames, "inner") == [] and enclosing(frames, ["not", "a", "key"]) == []


def test_a_plain_dict_of_frames_gives_the_same_chains() -> None:
    plain = {"inner": FrameBudget("outer", 5, name="inner"), "outer": FrameBudget(None, 1, name="outer", cost=2.0)}
    kept = Frames(plain)
    assert enclosing(plain, "inner") == enclosing(kept, "inner")
    assert cost_limited(plain, "inner") == cost_limited(kept, "inner")


def test_take_is_acquire_without_a_wait() -> None:
    async def main() -> list[bool]:
        gate = Gate(2)
        seen = []
        for _ in range(3):
            locked = gate.locked()
            taken = gate.take()
            seen.append(taken)
            assert taken is not locked
        waiter = asyncio.ensure_future(gate.acquire())  # full: it waits
        await asyncio.sleep(0)
        gate.release()  # handed to the waiter, not to `take`
        seen.append(gate.take())
        await waiter
        gate.release()
        cancelled = asyncio.ensure_future(gate.acquire())
        gate.release()
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.sleep(0)
        locked = gate.locked()
        seen.append(gate.take() is not locked)
        return seen

    assert asyncio.run(main()) == [True, True, False, False, True]

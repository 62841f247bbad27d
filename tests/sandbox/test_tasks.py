"""flowbox/tasks.py: how a run's concurrent code runs — tasks that turn the watchdog's
KeyboardInterrupt into an ordinary error inside them, coroutines side by side whose first
failure cancels the rest, and a failure that names where it happened."""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import pytest

import tests.sandbox.bootstrap_import  # noqa: F401 - makes `flowbox` importable

tasks = importlib.import_module("flowbox.tasks")
FlowError = importlib.import_module("flowbox.errors").FlowError


def test_where_puts_each_enclosing_place_in_front_outermost_first() -> None:
    async def fails() -> None:
        raise FlowError("evaluation", "boom", {"kept": 1, "where": [{"item": 2, "of": "parallelMap"}]})

    async def go() -> None:
        await tasks.where({"branch": "b", "of": "parallel"}, fails())

    with pytest.raises(FlowError) as failed:
        asyncio.run(go())
    assert failed.value.details == {"kept": 1, "where": [{"branch": "b", "of": "parallel"},
                                                         {"item": 2, "of": "parallelMap"}]}


def test_add_where_on_details_that_are_not_an_object() -> None:
    error = FlowError("evaluation", "boom")
    error.details = "odd"
    tasks.add_where(error, {"task": "t"})
    assert error.details == {"where": [{"task": "t"}]}


def test_other_errors_pass_where_untouched() -> None:
    async def fails() -> None:
        raise ValueError("not a Flow error")

    with pytest.raises(ValueError):
        asyncio.run(tasks.where({"task": "t"}, fails()))


def test_the_first_failure_cancels_the_rest_and_is_raised() -> None:
    cancelled: list[str] = []

    async def slow(name: str) -> str:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(name)
            raise
        return name

    async def fails() -> None:
        await asyncio.sleep(0)
        raise FlowError("evaluation", "first")

    async def go() -> Any:
        return await tasks.fail_closed([slow("a"), fails(), slow("b")])

    with pytest.raises(FlowError, match="first"):
        asyncio.run(go())
    assert sorted(cancelled) == ["a", "b"]


def test_results_come_in_the_order_given() -> None:
    async def after(turns: int, value: int) -> int:
        for _ in range(turns):
            await asyncio.sleep(0)
        return value

    assert asyncio.run(tasks.fail_closed([after(3, 1), after(0, 2), after(1, 3)])) == [1, 2, 3]


def test_a_keyboard_interrupt_inside_a_task_is_an_ordinary_error_there() -> None:
    async def interrupted() -> None:
        raise KeyboardInterrupt

    async def go() -> None:
        await tasks.spawn(interrupted())

    with pytest.raises(tasks.Interrupted):
        asyncio.run(go())


class CapFrame:
    cap_name = "w"
    cap = 1000
    cap_limit = 1000


def test_a_steps_limit_in_a_fan_out_says_how_many_steps_it_needs_once() -> None:
    error = FlowError("limit-exceeded", "the `steps` limit of 1000 of `w` is exceeded",
                      {"limit": "steps", "value": 1000, "workflow": "w"})
    tasks.steps_hint(error, CapFrame(), 100, 10, 1001, 33)  # 991 steps for 33 items: 31 an item
    assert error.details["needed"] == 10 + 31 * 100
    assert error.message.endswith("set `steps: 3110` in the `limits` of `w`")
    tasks.steps_hint(error, CapFrame(), 5, 0, 10, 1)  # an enclosing parallelMap leaves it as it is
    assert error.details["needed"] == 3110


def test_no_hint_for_another_limit_or_frame() -> None:
    other = FlowError("limit-exceeded", "x", {"limit": "agent_runs", "workflow": "w"})
    tasks.steps_hint(other, CapFrame(), 100, 0, 50, 5)
    assert "needed" not in other.details
    elsewhere = FlowError("limit-exceeded", "x", {"limit": "steps", "workflow": "outer"})
    tasks.steps_hint(elsewhere, CapFrame(), 100, 0, 50, 5)
    assert "needed" not in elsewhere.details

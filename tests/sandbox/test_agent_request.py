"""The sandbox's side of an agent call (flowbox/runtime.py `agent`, `team`, `_agent`): the
request it sends, its step and checks made when called, and an `expect` check that the host
can ask for exactly while the request is pending — on the host's CPython, with a bridge that
records requests and lets the test answer them."""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import pytest

import tests.sandbox.bootstrap_import  # noqa: F401 - makes `flowbox` importable

runtime = importlib.import_module("flowbox.runtime")
FlowError = importlib.import_module("flowbox.errors").FlowError

LIMITS = {"steps": 1000, "duration": 60_000, "concurrency": 4, "agent_runs": 10}
OPTIONS = {"schema": {"type": "string"}, "label": "a@1:1"}


class Bridge:
    """Records each request; the test answers them through `answer`/`fail`."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any], asyncio.Future[Any]]] = []
        self.events: list[dict[str, Any]] = []
        self.unflushed = False

    def invoke(self, op: str, payload: dict[str, Any]) -> asyncio.Future[Any]:
        future = asyncio.get_running_loop().create_future()
        self.requests.append((op, payload, future))
        return future

    def notify(self, op: str, payload: dict[str, Any]) -> None:
        self.events.append(payload)


def run(cell: Any) -> tuple[Any, Bridge]:
    bridge = Bridge()
    rt = runtime.Runtime(bridge, {"run": "r1"})

    async def go() -> Any:
        return await rt.start({}, lambda rt: cell(rt, bridge), LIMITS, {})

    return asyncio.run(go()), bridge


async def answered(bridge: Bridge, value: Any) -> None:
    """Answer the next request once it has been sent."""
    while not bridge.requests or bridge.requests[-1][2].done():
        await asyncio.sleep(0)
    bridge.requests[-1][2].set_result(value)


def test_the_request_names_the_call_its_place_and_the_run() -> None:
    async def cell(rt: Any, bridge: Bridge) -> Any:
        answer = asyncio.ensure_future(answered(bridge, "ok"))
        result = await rt.agent("a", "hello", OPTIONS, None)
        await answer
        return result

    result, bridge = run(cell)
    assert result == "ok"
    [(op, payload, _)] = bridge.requests
    assert op == "agent"
    frame = bridge.events[0]["span"]["id"]  # the cell's frame (its id and `workflow.started` come first)
    assert payload == {"agent": "a", "team": None, "member": None, "prompt": "hello", "options": OPTIONS,
                       "call": "c3", "expect": False, "order": [[3]], "run": "r1", "span": frame,
                       "stage": None, "frame": frame}


def test_a_team_member_named_at_run_time_is_the_member() -> None:
    async def cell(rt: Any, bridge: Bridge) -> Any:
        answer = asyncio.ensure_future(answered(bridge, "ok"))
        result = await rt.team("t", "member", "b", "hi", OPTIONS, None)
        await answer
        return result

    _, bridge = run(cell)
    payload = bridge.requests[0][1]
    assert (payload["agent"], payload["team"], payload["member"]) == (None, "t", "b")


def test_a_bad_prompt_fails_at_the_call_after_its_step_and_sends_nothing() -> None:
    async def cell(rt: Any, bridge: Bridge) -> Any:
        before = rt.steps
        with pytest.raises(FlowError) as failed:
            rt.agent("a", 42, OPTIONS, None)
        assert failed.value.code == "evaluation"
        assert "the prompt must be a string" in failed.value.message
        return rt.steps - before

    counted, bridge = run(cell)
    assert counted == 1
    assert bridge.requests == []


@pytest.mark.parametrize("fails", [False, True])
def test_an_expect_check_is_known_exactly_while_its_request_is_pending(fails: bool) -> None:
    async def check(output: Any) -> list[tuple[bool, str]]:
        return [(output == "good", "must be good")]

    async def cell(rt: Any, bridge: Bridge) -> Any:
        request = rt.agent("a", "hello", OPTIONS, check)
        assert list(rt.expectations) == ["c3"]  # registered at the call, before it is awaited
        call = asyncio.ensure_future(request)
        while not bridge.requests:
            await asyncio.sleep(0)
        assert bridge.requests[0][1]["expect"] is True
        assert await rt.expect("c3", "bad") == ["must be good"]
        assert await rt.expect("c3", "good") == []
        if fails:
            bridge.requests[0][2].set_exception(FlowError("agent-invocation", "no"))
        else:
            bridge.requests[0][2].set_result("good")
        try:
            outcome = await call
        except FlowError as exc:
            outcome = exc.code
        assert rt.expectations == {}
        assert await rt.expect("c3", "bad") == []  # asked after the call ended: nothing to check
        return outcome

    outcome, _ = run(cell)
    assert outcome == ("agent-invocation" if fails else "good")


def test_a_failed_parallel_map_item_is_named_in_where() -> None:
    async def cell(rt: Any, bridge: Bridge) -> Any:
        async def item(x: Any, i: Any) -> Any:
            if i == 2:
                raise FlowError("evaluation", "boom", {"kept": True})
            return x

        with pytest.raises(FlowError) as failed:
            await rt.parallel_map([10, 20, 30, 40], item, 1)
        return failed.value.details

    details, _ = run(cell)
    assert details == {"kept": True, "where": [{"item": 3, "of": "parallelMap"}]}

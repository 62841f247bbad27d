"""guard.py: a remote provider's attempt passes its guard (a `429` sent again after its
Retry-After, not past the deadline, not after a tool ran); a local one passes by; the
agent's own timeout."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flow_kernel.errors import AgentInvocationError
from flow_kernel.runtime.agents import Attempt
from flow_kernel.runtime.agents.guard import GuardLayer, TimeoutLayer
from flow_kernel.runtime.events.vocabulary import Event
from flow_kernel.runtime.providers.base import ProviderReply, ProviderRequest
from flow_kernel.runtime.providers.resilience import Resilience
from tests.runtime.agents.making import Inner, make_call
from tests.runtime.test_resilience import FakeClock

RATE_LIMITED = AgentInvocationError("the provider answered 429", details={"status": 429, "retry_after": 2})


def guard(remaining: float | None = None, **options: Any) -> tuple[GuardLayer, list[Event], Resilience]:
    events: list[Event] = []
    resilience = Resilience(lambda name: options, FakeClock())
    return GuardLayer(resilience, lambda: remaining, events.append), events, resilience


def attempt(provider: str = "openai") -> Attempt:
    return Attempt(make_call(provider=provider), 1, request=ProviderRequest("writer", "m", "s", "p", {}))


def test_a_429_is_sent_again_after_its_retry_after() -> None:
    layer, events, resilience = guard()
    inner = Inner(RATE_LIMITED, "x")
    first = attempt()
    assert asyncio.run(layer(first, inner)).output == "x" and len(inner.seen) == 2
    assert first.request is not None and first.request.before_request is not None  # a tool loop's rounds wait too
    waits = [e["data"] for e in events if e["type"] == "provider.waiting"]
    assert waits == [{"provider": "openai", "reason": "retry-after", "wait_ms": 2000}]
    assert resilience.guards["openai"].state == "closed"


def test_a_retry_after_past_the_deadline_fails_at_once() -> None:
    layer, _, _ = guard(remaining=1.0)
    inner = Inner(RATE_LIMITED, "never")
    with pytest.raises(AgentInvocationError, match="after the run's deadline") as info:
        asyncio.run(layer(attempt(), inner))
    assert info.value.details["rate_limited"] == "retry-after" and len(inner.seen) == 1


def test_a_429_after_a_tool_ran_is_not_sent_again() -> None:
    layer, _, _ = guard()

    async def inner(attempt: Attempt) -> ProviderReply:
        attempt.call.tool_calls.append({"tool": "refund"})
        raise RATE_LIMITED

    with pytest.raises(AgentInvocationError, match="429"):
        asyncio.run(layer(attempt(), inner))


def test_failures_open_the_breaker() -> None:
    layer, events, _ = guard(breaker_failures=2)
    for _ in range(2):
        with pytest.raises(AgentInvocationError):
            asyncio.run(layer(attempt(), Inner(AgentInvocationError("unreachable"))))
    inner = Inner("never")
    with pytest.raises(AgentInvocationError, match="circuit breaker"):
        asyncio.run(layer(attempt(), inner))
    assert inner.seen == [] and [e["data"]["state"] for e in events if e["type"] == "provider.breaker"] == ["open"]


@pytest.mark.parametrize("provider", ["mock", "scripted", "an-embedders-own"])
def test_a_provider_that_is_not_remote_needs_no_guard(provider: str) -> None:
    layer, events, resilience = guard(breaker_failures=1)
    for _ in range(3):
        with pytest.raises(AgentInvocationError):
            asyncio.run(layer(attempt(provider), Inner(AgentInvocationError("down"))))
    assert resilience.guards == {} and events == []


def test_an_attempt_runs_within_the_agents_timeout() -> None:
    async def slow(attempt: Attempt) -> ProviderReply:
        await asyncio.sleep(5)
        return ProviderReply("late")

    timed = Attempt(make_call(), 1, timeout_ms=10)
    with pytest.raises(AgentInvocationError, match="`writer` timed out after 10 ms"):
        asyncio.run(TimeoutLayer()(timed, slow))
    assert asyncio.run(TimeoutLayer()(Attempt(make_call(), 1, timeout_ms=None), Inner("x"))).output == "x"

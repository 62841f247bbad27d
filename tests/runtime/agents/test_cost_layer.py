"""cost.py: every reply counted on its call; under a `cost` limit, an attempt's worst case
reserved before it and settled after; a refusal refuses the call."""

from __future__ import annotations

import asyncio

import pytest

from flow_kernel.errors import AgentInvocationError, LimitExceededError
from flow_kernel.lang.prices import Price
from flow_kernel.runtime.agents import Attempt, CallRefused
from flow_kernel.runtime.agents.cost import CostLayer
from flow_kernel.runtime.budgets import FrameBudget
from flow_kernel.runtime.config import FlowConfig
from flow_kernel.runtime.providers.base import ProviderReply
from tests.runtime.agents.making import Inner, make_call

PRICE = Price(1.0, 2.0)  # per million tokens
USAGE = {"input_tokens": 1000, "output_tokens": 500}


def frames(cost: float | None) -> dict[str, FrameBudget]:
    return {"outer": FrameBudget(None, 10, name="outer", cost=cost), "f": FrameBudget("outer", 10, name="inner")}


def test_a_reply_is_counted_without_a_limit() -> None:
    call = make_call(price=PRICE)
    layer = CostLayer(frames(None), FlowConfig())
    asyncio.run(layer(Attempt(call, 1), Inner(ProviderReply("x", dict(USAGE), raw="x"))))
    assert call.usage == USAGE and call.raw == ["x"] and call.cost == pytest.approx(0.002)
    assert call.output_cap is None  # no limit: no cap


def test_the_worst_case_is_held_while_the_attempt_runs_and_settled_at_its_cost() -> None:
    budgets = frames(1.0)
    call = make_call(price=PRICE)
    layer = CostLayer(budgets, FlowConfig())

    async def main() -> None:
        seen: list[float] = []

        async def inner(attempt: Attempt) -> ProviderReply:
            seen.append(budgets["outer"].reserved)
            attempt.call.sent = True
            return ProviderReply("x", dict(USAGE))

        await layer(Attempt(call, 1), inner)
        assert seen[0] > 0.002  # the worst case: the prompt and max_tokens of output
        assert call.output_cap is not None and call.output_cap > 0

    asyncio.run(main())
    assert budgets["outer"].reserved == 0 and budgets["outer"].spent == pytest.approx(0.002)


@pytest.mark.parametrize(("sent", "error", "billed"), [
    (False, AgentInvocationError("unreachable"), False),  # nothing went out
    (True, AgentInvocationError("429", details={"status": 429}), False),  # an error status is not billed
    (True, AgentInvocationError("timed out"), True),  # the provider may have done the work
])
def test_an_attempt_without_a_reply_settles_at_nothing_or_its_worst_case(sent: bool, error: Exception,
                                                                         billed: bool) -> None:
    budgets = frames(1.0)
    call = make_call(price=PRICE)

    async def inner(attempt: Attempt) -> ProviderReply:
        attempt.call.sent = sent
        raise error

    with pytest.raises(AgentInvocationError):
        asyncio.run(CostLayer(budgets, FlowConfig())(Attempt(call, 1), inner))
    assert budgets["outer"].reserved == 0 and (budgets["outer"].spent > 0) is billed


def test_a_model_without_a_price_under_a_cost_limit_refuses_the_call() -> None:
    inner = Inner("x")
    with pytest.raises(CallRefused) as refused:
        asyncio.run(CostLayer(frames(1.0), FlowConfig())(Attempt(make_call(price=None), 1), inner))
    assert isinstance(refused.value.error, LimitExceededError) and "no price" in refused.value.error.message
    assert inner.seen == []


def test_a_worst_case_over_the_limit_refuses_the_call() -> None:
    inner = Inner("x")
    with pytest.raises(CallRefused) as refused:
        asyncio.run(CostLayer(frames(1e-9), FlowConfig())(Attempt(make_call(price=PRICE), 1), inner))
    assert refused.value.error.details["limit"] == "cost" and inner.seen == []

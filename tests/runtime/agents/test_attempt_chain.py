"""attempt.py: the chain's order, and `send` marking the call as sent."""

from __future__ import annotations

import asyncio
from typing import Any

from flow_kernel.runtime.agents import Attempt, Invoke
from flow_kernel.runtime.agents.attempt import chain, send
from flow_kernel.runtime.providers.base import ProviderReply, ProviderRequest
from tests.runtime.agents.making import Inner, make_call


class Tag:
    def __init__(self, name: str, order: list[str]) -> None:
        self.name, self.order = name, order

    async def __call__(self, attempt: Attempt, invoke: Invoke) -> ProviderReply:
        self.order.append(f"{self.name} before")
        reply = await invoke(attempt)
        self.order.append(f"{self.name} after")
        return reply


def test_the_first_layer_is_the_outermost() -> None:
    order: list[str] = []
    inner = Inner("x")
    invoke = chain([Tag("a", order), Tag("b", order)], inner)
    reply = asyncio.run(invoke(Attempt(make_call(), 1)))
    assert reply.output == "x" and len(inner.seen) == 1
    assert order == ["a before", "b before", "b after", "a after"]


def test_without_layers_the_chain_is_its_last_step() -> None:
    inner = Inner("y")
    assert chain([], inner) is inner


def test_send_marks_the_call_sent_when_the_request_is_made() -> None:
    class Provider:
        async def attempt(self, request: ProviderRequest) -> ProviderReply:
            return ProviderReply(request.prompt)

    call = make_call()
    attempt = Attempt(call, 1, provider=Provider(), request=ProviderRequest("writer", "m", "s", "the prompt", {}))
    pending: Any = send(attempt)
    assert call.sent  # before the provider ran: the request may have gone
    assert asyncio.run(pending).output == "the prompt"

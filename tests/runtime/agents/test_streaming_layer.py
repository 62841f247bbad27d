"""streaming.py: a streaming provider's pieces become the call's `agent.delta` events; a
provider with `stream = false` gets no sink; a cut stream leaves its text in the trace."""

from __future__ import annotations

import asyncio

import pytest

from flow_kernel.errors import AgentInvocationError
from flow_kernel.runtime.agents import Attempt
from flow_kernel.runtime.agents.streaming import StreamingLayer
from flow_kernel.runtime.config import parse_config
from flow_kernel.runtime.events.vocabulary import Event
from flow_kernel.runtime.providers.base import ProviderReply, ProviderRequest
from flow_kernel.runtime.providers.streaming import Delta
from tests.runtime.agents.making import make_call


def attempt(number: int = 1) -> Attempt:
    return Attempt(make_call(), number, request=ProviderRequest("writer", "m", "s", "p", {"type": "string"}))


async def streaming(attempt: Attempt) -> ProviderReply:
    assert attempt.request is not None and attempt.request.on_delta is not None
    for piece in ("Hel", "lo"):
        attempt.request.on_delta(Delta(text=piece))
    return ProviderReply("Hello")


def test_the_pieces_become_delta_events_flushed_when_the_attempt_ends() -> None:
    events: list[Event] = []
    layer = StreamingLayer(events.append, parse_config({}), interval=3600)
    call_attempt = attempt()
    asyncio.run(layer(call_attempt, streaming))
    texts = [e["data"]["text"] for e in events]
    assert "".join(texts) == "Hello" and all(e["type"] == "agent.delta" for e in events)
    assert events[-1]["data"]["agent"] == "writer" and "order" not in events[-1]  # live only: no order key
    assert call_attempt.call.merger is not None and call_attempt.call.merger.text == "Hello"


def test_a_provider_with_stream_false_gets_no_sink() -> None:
    layer = StreamingLayer(lambda e: None, parse_config({"providers": {"openai": {"stream": False}}}))
    seen: list[object] = []

    async def inner(attempt: Attempt) -> ProviderReply:
        assert attempt.request is not None
        seen.append(attempt.request.on_delta)
        return ProviderReply("x")

    asyncio.run(layer(attempt(), inner))
    assert seen == [None]


def test_a_cut_stream_leaves_its_text_for_the_trace() -> None:
    events: list[Event] = []
    layer = StreamingLayer(events.append, parse_config({}), interval=3600)

    async def cut(attempt: Attempt) -> ProviderReply:
        assert attempt.request is not None and attempt.request.on_delta is not None
        attempt.request.on_delta(Delta(text="half an ans"))
        raise AgentInvocationError("cut", details={"stream_cut": True})

    cut_attempt = attempt()
    with pytest.raises(AgentInvocationError):
        asyncio.run(layer(cut_attempt, cut))
    assert cut_attempt.call.partial == "half an ans" and [e["data"]["text"] for e in events] == ["half an ans"]

"""journal.py: an attempt the journal holds is answered from it (its tool calls shown, the
scripted provider's place kept); a live answer, or a provider's failure, is journaled;
an answer replayed from elsewhere is not."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flow_kernel.errors import AgentInvocationError, OutputValidationError
from flow_kernel.runtime.agents import Attempt
from flow_kernel.runtime.agents.journal import JournalLayer, attempt_request
from flow_kernel.runtime.durable.checkpoint import position
from flow_kernel.runtime.providers.base import ProviderReply
from flow_kernel.runtime.providers.local import Reply, Script, ScriptedProvider
from tests.runtime.agents.making import Inner, make_call


class Checkpoint:
    """What the layer uses of a RunCheckpoint: effects by key, and what was journaled."""

    def __init__(self, effects: dict[str, dict[str, Any]] | None = None) -> None:
        self.effects = effects or {}
        self.written: list[tuple[str, str, Any, Any]] = []

    def replayed(self, key: str, request: str) -> dict[str, Any] | None:
        return self.effects.get(key)

    def done(self, key: str, request: str, result: Any = None, error: Any = None) -> None:
        self.written.append((key, request, result, error))


def layer(checkpoint: Checkpoint, providers: dict[str, Any] | None = None) -> JournalLayer:
    return JournalLayer(checkpoint, providers or {})  # type: ignore[arg-type]


def test_a_live_answer_is_journaled_with_its_tool_calls() -> None:
    call = make_call()
    checkpoint = Checkpoint()

    async def inner(attempt: Attempt) -> ProviderReply:
        attempt.live = True
        attempt.call.tool_calls.append({"tool": "t", "arguments": {}, "result": 1})
        return ProviderReply("x", {"input_tokens": 3})

    asyncio.run(layer(checkpoint)(Attempt(call, 2), inner))
    ((key, request, result, error),) = checkpoint.written
    assert key == position("agent", call.payload, 2) and request == attempt_request(call, None) and error is None
    assert result == {"output": "x", "usage": {"input_tokens": 3}, "tool_calls": [{"tool": "t", "arguments": {},
                                                                                  "result": 1}]}


def test_a_providers_failure_is_journaled_and_another_is_not() -> None:
    checkpoint = Checkpoint()

    async def failing(attempt: Attempt) -> ProviderReply:
        attempt.live = True
        raise AgentInvocationError("down") if attempt.number == 1 else OutputValidationError("bad")

    for number in (1, 2):
        with pytest.raises((AgentInvocationError, OutputValidationError)):
            asyncio.run(layer(checkpoint)(Attempt(make_call(), number), failing))
    assert [error.code for _, _, _, error in checkpoint.written] == ["agent-invocation"]


def test_an_answer_that_is_not_live_is_not_journaled() -> None:
    checkpoint = Checkpoint()
    asyncio.run(layer(checkpoint)(Attempt(make_call(), 1), Inner("from a cassette")))
    with pytest.raises(AgentInvocationError):
        asyncio.run(layer(checkpoint)(Attempt(make_call(), 1), Inner(AgentInvocationError("a cassette miss"))))
    assert checkpoint.written == []


def test_the_journal_answers_and_the_scripted_provider_keeps_its_place() -> None:
    call = make_call(provider="scripted", model="scripted")
    key = position("agent", call.payload, 1)
    checkpoint = Checkpoint({key: {"result": {"output": "one", "usage": {"output_tokens": 2},
                                              "tool_calls": [{"tool": "t"}, "not a record"]}}})
    scripted = ScriptedProvider({"writer": Script((Reply("one"), Reply("two")), ())})
    inner = Inner("never")
    reply = asyncio.run(layer(checkpoint, {"scripted": scripted})(Attempt(call, 1), inner))
    assert (reply.output, reply.usage) == ("one", {"output_tokens": 2}) and inner.seen == []
    assert call.tool_calls == [{"tool": "t"}] and checkpoint.written == []
    assert scripted.cursors == {"writer": 1}  # the next live attempt answers "two"


def test_a_journaled_failure_is_raised_again() -> None:
    call = make_call()
    checkpoint = Checkpoint({position("agent", call.payload, 1): {"error": {"code": "agent-invocation",
                                                                            "message": "down"}}})
    with pytest.raises(AgentInvocationError, match="down"):
        asyncio.run(layer(checkpoint)(Attempt(call, 1), Inner("never")))

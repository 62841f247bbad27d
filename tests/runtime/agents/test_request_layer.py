"""request.py: past the recorded answers the attempt is live: its provider (the run's, else
built from the table and kept) and its request (prompts, repair, temperature, output cap,
the call's tools approved and recorded, the operator's questions)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flow_kernel.errors import AgentInvocationError
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.agents import Attempt
from flow_kernel.runtime.agents.request import RequestLayer, ToolUse
from flow_kernel.runtime.config import parse_config
from flow_kernel.runtime.providers.base import Provider, ProviderReply
from flow_kernel.runtime.providers.local import MockProvider
from flow_kernel.runtime.remote.mcp import McpConnections
from flow_kernel.runtime.tools import ToolRegistry
from flow_kernel.source import SourceFile
from tests.runtime.agents.making import make_call


async def never_asked(*args: Any, **kwargs: Any) -> tuple[bool, str]:
    raise AssertionError("no tool is approved here")


def request_layer(providers: dict[str, Provider], asked: list[dict[str, Any]] | None = None) -> RequestLayer:
    check = compile_source(SourceFile("r.flow", 'agent writer { model: "mock" }\n')).check
    tools = ToolUse(check, ToolRegistry(), McpConnections({}), never_asked)

    async def ask(payload: dict[str, Any]) -> str:
        (asked if asked is not None else []).append(payload)
        return "blue"

    return RequestLayer(providers, parse_config({}), {}, tools, ask)


def test_the_attempt_goes_live_with_its_request() -> None:
    provider = MockProvider()
    call = make_call(provider="mock", model="mock")
    call.output_cap = 123
    call.spec.fields["temperature"] = 0.5
    seen: list[Attempt] = []

    async def inner(attempt: Attempt) -> ProviderReply:
        seen.append(attempt)
        return ProviderReply("x")

    repair = {"previousOutput": 1, "errors": ["not a string"]}
    asyncio.run(request_layer({"mock": provider})(Attempt(call, 2, repair), inner))
    (attempt,) = seen
    request = attempt.request
    assert attempt.live and attempt.provider is provider and request is not None
    assert (request.agent, request.model, request.system, request.prompt) == ("writer", "mock", "system text", "write")
    assert (request.repair, request.temperature, request.max_output_tokens) == (repair, 0.5, 123)
    assert request.call_tool is None and request.call_prompt == "write"  # a call without tools


def test_the_operator_answers_the_providers_question() -> None:
    asked: list[dict[str, Any]] = []
    seen: list[str] = []

    async def inner(attempt: Attempt) -> ProviderReply:
        assert attempt.request is not None and attempt.request.ask_operator is not None
        seen.append(await attempt.request.ask_operator("which colour?", ["red", "blue"]))
        return ProviderReply("x")

    asyncio.run(request_layer({"mock": MockProvider()}, asked)(Attempt(make_call(provider="mock"), 1), inner))
    assert seen == ["blue"] and asked[0]["question"] == "`writer` asks: which colour?"
    assert asked[0]["choice"] == ["red", "blue"] and asked[0]["call"] == "c1"


def test_a_remote_provider_is_built_from_the_table_once(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    providers: dict[str, Provider] = {}
    layer = request_layer(providers)

    async def inner(attempt: Attempt) -> ProviderReply:
        return ProviderReply(attempt.provider)

    first = asyncio.run(layer(Attempt(make_call(), 1), inner)).output
    second = asyncio.run(layer(Attempt(make_call(), 1), inner)).output
    assert first is second is providers["openai"]


def test_a_missing_client_is_live_already(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "openai", None)
    attempt = Attempt(make_call(), 1)

    async def inner(attempt: Attempt) -> ProviderReply:
        raise AssertionError("no request without a client")

    with pytest.raises(AgentInvocationError, match="needs the `openai` package"):
        asyncio.run(request_layer({})(attempt, inner))
    assert attempt.live  # the journal keeps this failure: a resumed run does not try again


def test_the_request_carries_the_calls_tool_call_limit() -> None:
    call = make_call(provider="mock", model="mock")
    call.max_tool_calls = 3
    seen: list[Attempt] = []

    async def inner(attempt: Attempt) -> ProviderReply:
        seen.append(attempt)
        return ProviderReply("x")

    asyncio.run(request_layer({"mock": MockProvider()})(Attempt(call, 1), inner))
    assert seen[0].request is not None and seen[0].request.max_tool_calls == 3


def test_the_tool_call_limit_is_the_calls_else_the_agents_else_eight() -> None:
    from flow_kernel.errors import FlowEvaluationError
    from flow_kernel.runtime.agents.request import max_tool_calls

    assert max_tool_calls({}, {}) == 8
    assert max_tool_calls({}, {"max_tool_calls": 2}) == 2
    assert max_tool_calls({"max_tool_calls": 5}, {"max_tool_calls": 2}) == 5
    assert max_tool_calls({"max_tool_calls": 4.0}, {}) == 4  # a number the sandbox computed as a float
    for bad in (0, -1, 2.5, True):
        with pytest.raises(FlowEvaluationError, match="must be a positive integer"):
            max_tool_calls({"max_tool_calls": bad}, {})

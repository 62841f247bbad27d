"""What every provider takes and gives: one attempt of an agent call (runtime.md §4.1).

The agent pipeline in `agents.py` owns everything around an attempt — budgets, the
concurrency gate, validation, repair, retry, record/replay. A provider only turns one
`ProviderRequest` into one `ProviderReply`, running the tool loop of its API when the
call has tools: the model asks for a tool, `request.call_tool` runs it on the host (the
operator is asked first for approval-gated tools), the result goes back, until the model
answers or `MAX_TOOL_ROUNDS` is reached. A remote provider is known by its entry in
`provider_table.py`; the local ones (`mock`, `scripted`) are made in `providers.py`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from flow_kernel.errors import AgentInvocationError

# A model that keeps asking for tools without answering is an invocation failure.
MAX_TOOL_ROUNDS = 8

ToolCaller = Callable[[str, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as a provider sees it: the arguments' JSON Schema is derived from its Flow
    `tool` declaration; the description is its doc comment."""

    name: str
    description: str
    parameters: dict[str, Any]
    requires_approval: bool = False


@dataclass
class ProviderRequest:
    agent: str
    model: str  # the model name after the provider prefix ("gpt-4o-mini" of "openai/gpt-4o-mini")
    system: str  # the compiled system prompt (agent fields + output schema)
    prompt: str  # the compiled user message (the call's prompt + its context as untrusted data)
    schema: dict[str, Any]  # the output contract
    repair: dict[str, Any] | None = None  # {"previousOutput", "errors"} when this attempt is a repair
    temperature: float | None = None
    tools: tuple[ToolSpec, ...] = ()
    call_tool: ToolCaller | None = None
    call_prompt: str = ""  # the call's own prompt argument, before compilation (`when` matches it)
    # A question the model's side asks the operator mid-call (an A2A agent's input-required):
    # (question, choices or None) -> the answer. Given by the agent pipeline.
    ask_operator: Callable[[str, list[str] | None], Awaitable[str]] | None = None


@dataclass
class ProviderReply:
    output: Any
    usage: dict[str, int] = field(default_factory=dict)  # {"input_tokens", "output_tokens"}
    raw: str | None = None  # the model's final text, for traces at debug verbosity
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{"tool", "arguments", "result"}]


class Provider(Protocol):
    async def attempt(self, request: ProviderRequest) -> ProviderReply: ...


def is_plain_text(schema: dict[str, Any]) -> bool:
    """A bare `string` output is asked for as text, not as a JSON document."""
    return schema.get("type") == "string" and not (set(schema) - {"type", "description", "$schema"})


def repair_message(repair: dict[str, Any]) -> str:
    return ("Your answer did not meet the output contract:\n"
            + "\n".join(f"- {e}" for e in repair["errors"]) + "\nAnswer again, correctly.")


def decode_output(text: str, schema: dict[str, Any]) -> Any:
    """The model's text as the output value: JSON unless the contract is plain text. Text
    that is not JSON is returned as is, so the contract reports it and repair asks again."""
    import json

    if is_plain_text(schema):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def too_many_tool_rounds(agent: str) -> AgentInvocationError:
    return AgentInvocationError(f"`{agent}` kept calling tools for {MAX_TOOL_ROUNDS} rounds without answering",
                                details={"tool_rounds": MAX_TOOL_ROUNDS})


"""What every provider takes and gives: one attempt of an agent call (runtime.md §4.1).

The agent pipeline (runtime/agents/) owns everything around an attempt — budgets, the
concurrency gate, validation, repair, retry, record/replay. A provider only turns one
`ProviderRequest` into one `ProviderReply`, running the tool loop of its API when the
call has tools: the model asks for a tool, `request.call_tool` runs it on the host (the
operator is asked first for approval-gated tools), the result goes back, until the model
answers. The agent pipeline refuses a tool call beyond the call's `max_tool_calls`
(runtime/agents/request.py); a provider's loop stops after `tool_rounds(request)` requests
either way, since each round before the answer makes at least one tool call. Every provider is known by its entry in the one
provider table (table.py).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from flow_kernel.errors import AgentInvocationError
from flow_kernel.runtime.providers.streaming import DeltaSink

# Tool calls one attempt may make when neither the agent nor the call says (`max_tool_calls`).
MAX_TOOL_CALLS = 8

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
    # Given: the provider streams (its SDK's streaming API) and reports each piece here
    # (runtime/providers/streaming.py); None: it asks for the whole reply at once.
    on_delta: DeltaSink | None = None
    # Awaited before each request after the first within the attempt (a tool loop's later
    # rounds), so the provider's rate limits count them too (runtime/providers/resilience.py).
    before_request: Callable[[], Awaitable[None]] | None = None
    # The output tokens the attempt's cost reservation assumed (runtime/budgets.py): the request
    # must not allow more (`output_cap`). None: the attempt is not cost-limited.
    max_output_tokens: int | None = None
    # The tool calls this attempt may make (the call's `max_tool_calls`, else the agent's).
    max_tool_calls: int = MAX_TOOL_CALLS


@dataclass
class ProviderReply:
    output: Any
    usage: dict[str, int] = field(default_factory=dict)  # {"input_tokens", "output_tokens"}
    raw: str | None = None  # the model's final text, for traces at debug verbosity
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{"tool", "arguments", "result"}]


class Provider(Protocol):
    async def attempt(self, request: ProviderRequest) -> ProviderReply: ...


@runtime_checkable
class KeepsPlace(Protocol):
    """A provider whose replies depend on how many attempts came before (the scripted one:
    a cursor per agent). An attempt answered elsewhere (the run's journal) is passed on to
    it, so it keeps its place as the live attempt moved it."""

    def passed(self, agent: str, prompt: str) -> None: ...


@dataclass(frozen=True)
class Endpoint:
    """Where a provider's requests go and which setting said so, for the messages of a
    server that cannot be reached. `url` None: the client's own default. `source` is the
    setting, as the person would look for it: `/p/flow.toml [providers.openai] base_url`,
    `$OPENAI_BASE_URL`, or `default`."""

    provider: str
    url: str | None
    source: str
    variable: str = ""  # the environment variable that would set it (`OPENAI_BASE_URL`)
    agent: str = ""  # a remote agent's name (`a2a/NAME`): the messages name it

    def unreachable(self, used: str, error: str) -> AgentInvocationError:
        """`agent-invocation` for a request that reached no server: its URL (as set, else
        `used`, the client's default), the setting it came from and the provider, in the
        message and in `details`."""
        url = without_password(self.url or used)
        if self.source == "default":
            other = f" or ${self.variable}" if self.variable else ""
            where = f"the {self.provider} client's default; [providers.{self.provider}] base_url in flow.toml{other} sets another"
        else:
            where = f"from {self.source}"
        who = f"the A2A agent `{self.agent}`" if self.agent else f"the {self.provider} provider"
        details = {"provider": self.provider, "base_url": url, "source": self.source}
        if self.agent:
            details["agent"] = self.agent
        return AgentInvocationError(f"{who} could not be reached at {url} ({where}): {error}", details=details)


def resolve_endpoint(provider: str, base_url: str | None, origin: str, variable: str) -> Endpoint:
    """Where a provider's requests go, and which setting said so: `base_url` (read from the
    table `origin`, e.g. `/p/flow.toml [providers.openai]`; "" when given in code), else the
    environment variable `variable`, else the client's default (`url` None)."""
    if base_url:
        return Endpoint(provider, base_url, f"{origin} base_url" if origin else "the base_url given in code", variable)
    from_environment = os.environ.get(variable)
    if from_environment:
        return Endpoint(provider, from_environment, f"${variable}", variable)
    return Endpoint(provider, None, "default", variable)


def without_password(url: str) -> str:
    """`url` with the password of its user info, if any, replaced by `***`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def is_plain_text(schema: dict[str, Any]) -> bool:
    """A bare `string` output is asked for as text, not as a JSON document."""
    return schema.get("type") == "string" and not (set(schema) - {"type", "description", "$schema"})


def output_cap(configured: int | None, reserved: int | None) -> int | None:
    """The output cap a request carries: the smaller of the provider's configured `max_tokens`
    and what the attempt's cost reservation assumed, so a reply never costs more output than
    was reserved; None when neither is given (the request names no cap)."""
    caps = [cap for cap in (configured, reserved) if cap is not None]
    return min(caps) if caps else None


def cut_off(agent: str, provider: str, cap: int | None, details: dict[str, Any]) -> AgentInvocationError:
    """A reply the provider stopped at its output cap: the answer is incomplete, so it is
    no answer (`details` says how the provider said so, and the cap)."""
    if cap is None:
        return AgentInvocationError(f"`{agent}`'s answer was cut off by the provider's own output limit; "
                                    f"set `max_tokens` under [providers.{provider}] to ask for more",
                                    details=details)
    return AgentInvocationError(f"`{agent}`'s answer was cut off at max_tokens ({cap}); "
                                f"raise `max_tokens` under [providers.{provider}]", details={**details, "max_tokens": cap})


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


def retry_after_seconds(headers: Any) -> float | None:
    """How long a `429`/`503` answer asks the client to wait: `retry-after-ms`, or
    `retry-after` in seconds or as an HTTP date; None when it says nothing usable."""
    import email.utils
    import time

    try:
        millis = headers.get("retry-after-ms")
        if millis is not None:
            return max(0.0, float(millis) / 1000)
        value = headers.get("retry-after")
    except (AttributeError, TypeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


def status_error(status: int, message: str, headers: Any) -> AgentInvocationError:
    """A provider's error status as `agent-invocation`, with what the resilience layer reads:
    the status and, when the answer gave one, its Retry-After in seconds."""
    details: dict[str, Any] = {"status": status}
    wait = retry_after_seconds(headers)
    if wait is not None:
        details["retry_after"] = round(wait, 3)
    return AgentInvocationError(f"the provider answered {status}: {message}", details=details)


def transport_errors() -> tuple[type[BaseException], ...]:
    """What the clients' HTTP layer raises when a connection breaks while a stream is read
    (the SDKs wrap errors of the request, not of reading its body)."""
    found: list[type[BaseException]] = [OSError]
    for module in ("httpx2", "httpx"):
        with contextlib.suppress(ImportError, AttributeError):
            found.append(__import__(module).HTTPError)
    return tuple(found)


def stream_cut(what: str, received: int) -> AgentInvocationError:
    """A stream that ended before the reply did: the text that arrived is in the call's
    trace (`partial`), not in the error."""
    return AgentInvocationError(f"the provider's stream was cut after {received} characters: {what}",
                                details={"stream_cut": True, "received": received})


def tool_rounds(request: ProviderRequest) -> int:
    """The most requests one attempt's tool loop makes: a round per allowed tool call (each
    round before the answer makes at least one), then the answer."""
    return request.max_tool_calls + 1


def too_many_tool_calls(agent: str, limit: int) -> AgentInvocationError:
    """`agent-invocation` for a model that asks for more than `limit` tool calls in one
    attempt: it names the limit and how to raise it."""
    return AgentInvocationError(
        f"`{agent}` asked for more than {limit} tool call{'s' if limit != 1 else ''} in one attempt "
        f"(max_tool_calls: {limit}); raise it with `max_tool_calls: N` in the agent's declaration "
        f"or as an option of the call", details={"max_tool_calls": limit})


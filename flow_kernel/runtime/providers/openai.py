"""The `openai` provider: any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM,
Ollama, llama.cpp server, LM Studio) through the official `openai` client, with the
output contract as a JSON Schema response format and tools as function tools
(runtime.md §4.1).

With a delta sink on the request (the agent pipeline always gives one) the call streams:
`stream=True` with usage in the last chunk, the answer's text and each tool call's
arguments reported as they arrive (runtime/providers/streaming.py), the reply assembled from the
chunks. An endpoint that ignores `stream` and answers one JSON completion is read as one.
A stream that breaks off is `agent-invocation`; what arrived stays in the call's trace.

The output cap (`output_cap`: the configured `max_tokens`, and a cost reservation's) is sent
only when there is one, so an uncapped request is the same as ever. OpenAI's API takes it as
`max_completion_tokens` and refuses `max_tokens` for its reasoning models, so only the new
name goes there; any other endpoint gets both names with the same number, because the
compatible servers differ and ignore a name they do not know, which would leave the reply
uncapped: vLLM reads either, Ollama and LM Studio only `max_tokens`, llama.cpp's server
`max_completion_tokens` only in its 2026 releases. A reply that stops at a cap
(`finish_reason: "length"`) is cut off, no answer (`cut_off`).

The endpoint and key come from the host only — the session's provider settings
(`flow.toml`), else `OPENAI_BASE_URL` / `OPENAI_API_KEY` — and never reach the sandbox,
an event or a cassette.
"""

from __future__ import annotations

import json
import os
from typing import Any

from flow_kernel.errors import AgentInvocationError
from flow_kernel.runtime.providers.base import (
    Endpoint,
    ProviderReply,
    ProviderRequest,
    cut_off,
    decode_output,
    is_plain_text,
    output_cap,
    repair_message,
    resolve_endpoint,
    status_error,
    stream_cut,
    too_many_tool_calls,
    tool_rounds,
    transport_errors,
)
from flow_kernel.runtime.providers.streaming import Delta, DeltaSink
from flow_kernel.runtime.providers.table import PROVIDERS, ProviderSetup
from flow_kernel.short_text import shorten

_ENTRY = PROVIDERS["openai"]  # its key and endpoint variables

OPENAI_HOST = "api.openai.com"  # OpenAI's own API: the output cap goes by its new name only


def build(setup: ProviderSetup) -> OpenAIProvider:
    """The `openai` entry's provider: its key, endpoint and `max_tokens` from the setup."""
    return OpenAIProvider(api_key=setup.key, max_tokens=setup.settings.max_tokens, endpoint=setup.endpoint)


class OpenAIProvider:
    def __init__(self, base_url: str | None = None, api_key: str | None = None,
                 max_tokens: int | None = None, *, endpoint: Endpoint | None = None) -> None:
        """`endpoint`: where requests go and which setting said so (providers/table.py);
        else `base_url`, else $OPENAI_BASE_URL, else the client's default."""
        import openai  # installed: the provider table's `require_client` checked it

        self._openai = openai
        self._key = api_key or os.environ.get(_ENTRY.key_env) or "unset"
        self.endpoint = endpoint or resolve_endpoint("openai", base_url, "", _ENTRY.url_env)
        self.client = openai.AsyncOpenAI(
            base_url=self.endpoint.url,
            api_key=self._key,
            max_retries=0,  # retries are the agent's `retry`, counted against `agent_runs`
        )
        self.max_tokens = max_tokens  # `[providers.openai] max_tokens`: sent with every request

    async def attempt(self, request: ProviderRequest) -> ProviderReply:
        messages: list[dict[str, Any]] = [{"role": "system", "content": request.system},
                                          {"role": "user", "content": request.prompt}]
        if request.repair is not None:
            messages.append({"role": "assistant", "content": json.dumps(request.repair["previousOutput"], ensure_ascii=False)})
            messages.append({"role": "user", "content": repair_message(request.repair)})
        options: dict[str, Any] = {}
        if not is_plain_text(request.schema):
            options["response_format"] = {"type": "json_schema",
                                          "json_schema": {"name": "output", "schema": request.schema, "strict": False}}
        if request.temperature is not None:
            options["temperature"] = request.temperature
        if request.tools:
            options["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                                  "parameters": t.parameters}} for t in request.tools]
        cap = output_cap(self.max_tokens, request.max_output_tokens)
        if cap is not None:
            options.update(cap_fields(self.client.base_url.host, cap))
        usage = {"input_tokens": 0, "output_tokens": 0}
        tool_log: list[dict[str, Any]] = []
        for round_ in range(1, tool_rounds(request) + 1):
            if round_ > 1 and request.before_request is not None:
                await request.before_request()
            if request.on_delta is not None:
                reply = await self._stream(request.model, messages, options, request.on_delta, round_)
            else:
                reply = await self._create(request.model, messages, options)
            input_tokens, output_tokens, message, finish_reason = _parts(reply)
            usage["input_tokens"] += input_tokens
            usage["output_tokens"] += output_tokens
            if finish_reason == "length":  # before any tool runs: its arguments may be cut too
                raise cut_off(request.agent, "openai", cap, {"finish_reason": "length"})
            calls = [c for c in (message.tool_calls or []) if getattr(c, "function", None) is not None]
            if calls and request.call_tool is not None:
                messages.append({"role": "assistant", "content": message.content,
                                 "tool_calls": [{"id": c.id, "type": "function",
                                                 "function": {"name": c.function.name, "arguments": c.function.arguments}}
                                                for c in calls]})
                for c in calls:
                    arguments = _arguments(c.function.arguments)
                    result = await request.call_tool(c.function.name, arguments)
                    tool_log.append({"tool": c.function.name, "arguments": arguments, "result": result})
                    messages.append({"role": "tool", "tool_call_id": c.id, "content": json.dumps(result, ensure_ascii=False)})
                continue
            if message.content is None:
                raise AgentInvocationError("the provider's reply had no content")
            return ProviderReply(decode_output(message.content, request.schema), usage, message.content, tool_log)
        raise too_many_tool_calls(request.agent, request.max_tool_calls)

    async def _create(self, model: str, messages: list[dict[str, Any]], options: dict[str, Any]) -> Any:
        try:
            return await self.client.chat.completions.create(model=model, messages=messages, **options)  # type: ignore[arg-type]
        except self._openai.APIStatusError as exc:
            raise status_error(exc.status_code, self._clean(exc.message), exc.response.headers) from None
        except self._openai.APIError as exc:  # connection errors, timeouts, unreadable replies
            raise self._unreachable(exc) from None

    async def _stream(self, model: str, messages: list[dict[str, Any]], options: dict[str, Any],
                      on_delta: DeltaSink, round_: int) -> Any:
        """One request with `stream=True`, its chunks reported and assembled into the shape
        `_parts` reads (a completion with one choice)."""
        try:
            stream = await self.client.chat.completions.create(  # type: ignore[call-overload]
                model=model, messages=messages, stream=True, stream_options={"include_usage": True}, **options)
        except self._openai.APIStatusError as exc:
            raise status_error(exc.status_code, self._clean(exc.message), exc.response.headers) from None
        except self._openai.APIError as exc:
            raise self._unreachable(exc) from None
        if not stream.response.headers.get("content-type", "").startswith("text/event-stream"):
            return await self._whole(stream)
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage: Any = None
        received = 0
        finish_reason: str | None = None
        try:
            async for chunk in stream:
                if getattr(chunk, "usage", None) is not None:
                    usage = chunk.usage
                for choice in chunk.choices or []:
                    finish_reason = finish_reason or choice.finish_reason
                    delta = choice.delta
                    if delta is None:
                        continue
                    if delta.content:
                        text.append(delta.content)
                        received += len(delta.content)
                        on_delta(Delta(text=delta.content, round=round_))
                    for part in delta.tool_calls or []:
                        call = calls.setdefault(part.index, {"id": None, "name": "", "arguments": ""})
                        function = part.function
                        if part.id:
                            call["id"] = part.id
                        if function is not None and function.name:
                            call["name"] += function.name
                        piece = (function.arguments or "") if function is not None else ""
                        call["arguments"] += piece
                        on_delta(Delta(tool=call["name"] or None, tool_index=part.index, arguments=piece, round=round_))
        except (self._openai.APIError, *transport_errors()) as exc:  # type: ignore[misc]
            raise stream_cut(self._clean(str(exc) or type(exc).__name__), received) from None
        except (AttributeError, TypeError):  # chunks of another shape
            raise AgentInvocationError("the provider's stream is not a chat completion stream") from None
        if finish_reason is None:  # the connection closed cleanly, but before the reply said it was done
            raise stream_cut("it ended before the reply finished", received)
        message = _StreamedMessage("".join(text) if text or not calls else None,
                                   [_StreamedCall(i, c["id"] or f"call_{i}", c["name"], c["arguments"])
                                    for i, c in sorted(calls.items())])
        return _StreamedReply(usage, [_StreamedChoice(message, finish_reason)])

    async def _whole(self, stream: Any) -> Any:
        """An endpoint that answered a streaming request with one JSON document."""
        from openai.types.chat import ChatCompletion

        body = await stream.response.aread()
        try:
            data = json.loads(body)
        except ValueError:
            return body.decode("utf-8", "replace")  # `_parts` reports it as not a chat completion
        return ChatCompletion.construct(**data) if isinstance(data, dict) else data

    def _unreachable(self, exc: Exception) -> AgentInvocationError:
        return self.endpoint.unreachable(str(self.client.base_url), self._clean(str(exc)))

    def _clean(self, text: str) -> str:
        """An error's text, short, and without the key: an endpoint may repeat it ("Incorrect
        API key provided: …"), and the message goes into events, journals and outputs."""
        return shorten(text.replace(self._key, "***") if len(self._key) >= 8 else text, 300)


class _StreamedFunction:
    def __init__(self, name: str, arguments: str) -> None:
        self.name, self.arguments = name, arguments


class _StreamedCall:
    def __init__(self, index: int, id: str, name: str, arguments: str) -> None:
        self.index, self.id, self.type, self.function = index, id, "function", _StreamedFunction(name, arguments)


class _StreamedMessage:
    def __init__(self, content: str | None, tool_calls: list[_StreamedCall]) -> None:
        self.content, self.tool_calls = content, tool_calls or None


class _StreamedChoice:
    def __init__(self, message: _StreamedMessage, finish_reason: str) -> None:
        self.message, self.finish_reason = message, finish_reason


class _StreamedReply:
    """A streamed reply assembled: the attributes `_parts` reads of a chat completion."""

    def __init__(self, usage: Any, choices: list[_StreamedChoice]) -> None:
        self.usage, self.choices = usage, choices


def cap_fields(host: str, cap: int) -> dict[str, int]:
    """The output cap as the endpoint at `host` reads it (module docstring)."""
    if host == OPENAI_HOST:
        return {"max_completion_tokens": cap}
    return {"max_completion_tokens": cap, "max_tokens": cap}


def _parts(reply: Any) -> tuple[int, int, Any, Any]:
    """(input tokens, output tokens, the first choice's message, why it finished). The
    client does not validate a reply: an HTML page served with 200 comes back as a string,
    JSON of another shape as a hollow object. Either is the provider's failure, not a host
    error."""
    try:
        tokens = (reply.usage.prompt_tokens or 0, reply.usage.completion_tokens or 0) if reply.usage is not None else (0, 0)
        if not reply.choices:
            raise AgentInvocationError("the provider's reply had no choices")
        choice = reply.choices[0]
        message = choice.message
        _ = (message.content, message.tool_calls)  # a wrong shape fails here, not later
    except (AttributeError, TypeError, IndexError, KeyError):
        raise AgentInvocationError(f"the provider's reply is not a chat completion: {shorten(repr(reply), 300)}") from None
    return tokens[0], tokens[1], message, getattr(choice, "finish_reason", None)


def _arguments(text: str | None) -> dict[str, Any]:
    """Tool arguments as the model wrote them; not an object → {} and the tool's own
    argument check answers the model."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {"__unparsed__": text}
    return value if isinstance(value, dict) else {"__unparsed__": text}

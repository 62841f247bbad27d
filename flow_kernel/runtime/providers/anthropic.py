"""The `anthropic` provider: the Claude Messages API through the official `anthropic`
client, with tools as client tools and the tool-use loop run here (runtime.md §4.1).

Structured output is the API's own. `messages.create` in anthropic 2.10.0 takes
`output_config={"format": {"type": "json_schema", "schema": …}}` outside the beta
namespace: the answer is decoded under the schema and comes back as an ordinary text
block, so `raw` is the model's text as with every other provider, and the format
composes with the agent's own tools (the model may call them, then answers in the
format). A `respond` tool was the alternative and is worse here: unforced, the model
may answer in prose instead; forced with `tool_choice`, it cannot call the agent's own
tools first; and a non-object contract would need wrapping and unwrapping. The
schema sent is the SDK's `transform_schema` of the contract (every object closed with
`additionalProperties: false`, as the API requires; keywords constrained decoding
cannot express — `minimum`, `maxLength`, `pattern`… — moved into descriptions), and the
host still validates the full contract and repairs. A contract the format cannot carry
at all (recursive `$ref`s, a part with no type, as `any` is) is sent without one: the
system prompt spells the schema out, and validation and repair hold the answer to it.

With a delta sink on the request (the agent pipeline always gives one) the call streams
through the client's `messages.stream`: text and tool-use input are reported as they
arrive (runtime/providers/streaming.py) and the final message is the client's own accumulation, read
as an unstreamed reply is. An endpoint that answers the streaming request with one JSON
message is read as one. A stream that breaks off is `agent-invocation`; what arrived stays
in the call's trace.

The endpoint and key come from the host only — the session's provider settings
(`flow.toml`), else `ANTHROPIC_BASE_URL` / `ANTHROPIC_API_KEY` — and never reach the
sandbox, an event, a cassette or an error message. The key is always given to the
client, so it never goes looking for credential profiles on disk.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from flow_kernel.errors import AgentInvocationError
from flow_kernel.lang.prices import DEFAULT_MAX_OUTPUT_TOKENS
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

_ENTRY = PROVIDERS["anthropic"]  # its key and endpoint variables

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic, Omit
    from anthropic.types import (
        Message,
        MessageParam,
        OutputConfigParam,
        ToolParam,
        ToolResultBlockParam,
    )

# The API requires a cap; `[providers.anthropic] max_tokens` changes it. The same number a cost
# reservation assumes when none is configured, so an attempt sends the output it reserved.
DEFAULT_MAX_TOKENS = DEFAULT_MAX_OUTPUT_TOKENS


def build(setup: ProviderSetup) -> AnthropicProvider:
    """The `anthropic` entry's provider: its key, endpoint and `max_tokens` (when set) from
    the setup."""
    max_tokens = setup.settings.max_tokens
    if max_tokens is not None:
        return AnthropicProvider(api_key=setup.key, max_tokens=max_tokens, endpoint=setup.endpoint)
    return AnthropicProvider(api_key=setup.key, endpoint=setup.endpoint)


class AnthropicProvider:
    def __init__(self, base_url: str | None = None, api_key: str | None = None,
                 max_tokens: int = DEFAULT_MAX_TOKENS, *, endpoint: Endpoint | None = None) -> None:
        """`endpoint`: where requests go and which setting said so (providers/table.py);
        else `base_url`, else $ANTHROPIC_BASE_URL, else the client's default."""
        import anthropic  # installed: the provider table's `require_client` checked it

        self._key = api_key or os.environ.get(_ENTRY.key_env) or "unset"
        self.max_tokens = max_tokens
        self.endpoint = endpoint or resolve_endpoint("anthropic", base_url, "", _ENTRY.url_env)
        self.client: AsyncAnthropic = anthropic.AsyncAnthropic(
            base_url=self.endpoint.url,
            api_key=self._key,
            max_retries=0,  # retries are the agent's `retry`, counted against `agent_runs`
        )

    async def attempt(self, request: ProviderRequest) -> ProviderReply:
        import anthropic

        messages: list[MessageParam] = [{"role": "user", "content": request.prompt}]
        if request.repair is not None:
            messages.append({"role": "assistant", "content": json.dumps(request.repair["previousOutput"], ensure_ascii=False)})
            messages.append({"role": "user", "content": repair_message(request.repair)})
        output_config: OutputConfigParam | Omit = anthropic.omit
        if not is_plain_text(request.schema):
            schema = output_schema(request.schema)
            if schema is not None:
                output_config = {"format": {"type": "json_schema", "schema": schema}}
        tools: list[ToolParam] | Omit = anthropic.omit
        if request.tools:
            tools = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools]
        # `temperature` is no parameter of `messages.create` in this client (newer models refuse
        # it); an agent that sets one still sends it, and a model that refuses it answers 400.
        extra_body = {"temperature": request.temperature} if request.temperature is not None else None
        # Never more output than a cost reservation assumed (`output_cap`).
        max_tokens = output_cap(self.max_tokens, request.max_output_tokens) or self.max_tokens
        usage = {"input_tokens": 0, "output_tokens": 0}
        tool_log: list[dict[str, Any]] = []
        for round_ in range(1, tool_rounds(request) + 1):
            if round_ > 1 and request.before_request is not None:
                await request.before_request()
            arguments: dict[str, Any] = {"model": request.model, "max_tokens": max_tokens, "system": request.system,
                                         "messages": messages, "output_config": output_config, "tools": tools,
                                         "extra_body": extra_body}
            try:
                if request.on_delta is not None:
                    reply = await self._stream(arguments, request.on_delta, round_)
                else:
                    reply = await self.client.messages.create(**arguments)
            except anthropic.APIStatusError as exc:
                raise status_error(exc.status_code, self._clean(exc.api_message or exc.message),
                                   exc.response.headers) from None
            except anthropic.APIError as exc:  # connection errors, timeouts, unreadable replies
                raise self.endpoint.unreachable(str(self.client.base_url), self._clean(str(exc))) from None
            except json.JSONDecodeError as exc:  # the client lets this one through as it is
                raise AgentInvocationError(f"the provider's reply was not JSON: {self._clean(str(exc))}") from None
            except ValueError as exc:  # the client refuses a `max_tokens` too large to wait for unstreamed
                raise AgentInvocationError(f"the request was not sent: {self._clean(str(exc))}") from None
            try:  # the client does not validate: an HTML page or JSON of another shape comes back hollow
                _count(usage, reply)
                calls = [b for b in reply.content if b.type == "tool_use"]
                text = "".join(b.text for b in reply.content if b.type == "text")
                stop_reason = reply.stop_reason
            except (AttributeError, TypeError):
                raise AgentInvocationError(f"the provider's reply is not a message: {self._clean(repr(reply))}") from None
            if calls and request.call_tool is not None:
                # The blocks go back as the API gave them: thinking blocks keep their signatures.
                messages.append({"role": "assistant", "content": reply.content})
                results: list[ToolResultBlockParam] = []
                for c in calls:
                    arguments = dict(c.input)
                    result = await request.call_tool(c.name, arguments)
                    tool_log.append({"tool": c.name, "arguments": arguments, "result": result})
                    results.append({"type": "tool_result", "tool_use_id": c.id,
                                    "content": json.dumps(result, ensure_ascii=False)})
                messages.append({"role": "user", "content": results})
                continue
            if stop_reason == "max_tokens":
                raise cut_off(request.agent, "anthropic", max_tokens, {"stop_reason": "max_tokens"})
            if not text:
                raise AgentInvocationError(f"the provider's reply had no text (stop reason: {stop_reason})",
                                           details={"stop_reason": stop_reason})
            return ProviderReply(decode_output(text, request.schema), usage, text, tool_log)
        raise too_many_tool_calls(request.agent, request.max_tool_calls)

    async def _stream(self, arguments: dict[str, Any], on_delta: DeltaSink, round_: int) -> Message:
        """One request through `messages.stream`, its text and tool input reported."""
        import anthropic
        from anthropic.types import Message

        received = 0
        tools: dict[int, str] = {}
        async with self.client.messages.stream(**arguments) as stream:
            if not stream.response.headers.get("content-type", "").startswith("text/event-stream"):
                body = await stream.response.aread()  # an endpoint that ignored `stream`
                return Message.construct(**json.loads(body))  # not JSON: the caller's JSONDecodeError
            try:
                async for event in stream:
                    if event.type == "content_block_start" and event.content_block.type == "tool_use":
                        tools[event.index] = event.content_block.name
                        on_delta(Delta(tool=event.content_block.name, tool_index=event.index, round=round_))
                    elif event.type == "text":
                        received += len(event.text)
                        on_delta(Delta(text=event.text, round=round_))
                    elif event.type == "input_json" and tools:
                        index = max(tools)  # the block being written is the last one started
                        on_delta(Delta(tool=tools[index], tool_index=index, arguments=event.partial_json, round=round_))
                final = await stream.get_final_message()
            except anthropic.APIStatusError:
                raise
            except (anthropic.APIError, *transport_errors()) as exc:  # type: ignore[misc]
                raise stream_cut(self._clean(str(exc) or type(exc).__name__), received) from None
            except RuntimeError as exc:  # the client's accumulation: events out of order, none at all
                raise stream_cut(self._clean(str(exc)), received) from None
        if final.stop_reason is None:  # the connection closed cleanly, but before `message_delta` said why it stopped
            raise stream_cut("it ended before the reply finished", received)
        return final

    def _clean(self, text: str) -> str:
        """An error's text, short, and without the key whatever the endpoint echoed."""
        return shorten(text.replace(self._key, "***") if len(self._key) >= 8 else text, 300)


def _count(usage: dict[str, int], reply: Message) -> None:
    u = reply.usage
    # Input tokens read from or written to the prompt cache are input tokens too.
    usage["input_tokens"] += u.input_tokens + (u.cache_creation_input_tokens or 0) + (u.cache_read_input_tokens or 0)
    usage["output_tokens"] += u.output_tokens


def output_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The contract as the structured-output format takes it, or None when it cannot."""
    import anthropic

    body = {k: v for k, v in schema.items() if k != "$schema"}
    if _recursive(body):
        return None
    try:
        return anthropic.transform_schema(body)
    except (ValueError, TypeError, AssertionError):  # a part with no type; a type list
        return None


def _recursive(schema: dict[str, Any]) -> bool:
    """Whether a `$ref` reaches its own definition (or points outside `$defs`)."""
    defs = schema.get("$defs") or {}
    prefix = "#/$defs/"

    def refs(node: Any) -> set[str]:
        found: set[str] = set()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                found.add(ref)
            for key, value in node.items():
                if key != "$defs":
                    found |= refs(value)
        elif isinstance(node, list):
            for item in node:
                found |= refs(item)
        return found

    edges: dict[str, set[str]] = {}
    for ref in refs(schema) | {r for d in defs.values() for r in refs(d)}:
        if not ref.startswith(prefix) or ref[len(prefix):] not in defs:
            return True  # "#", or not a local definition: nothing the format can carry
    for name, body in defs.items():
        edges[name] = {r[len(prefix):] for r in refs(body)}
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def cycle(name: str) -> bool:
        state[name] = 1
        for nxt in edges.get(name, ()):
            if state.get(nxt) == 1 or (state.get(nxt) is None and cycle(nxt)):
                return True
        state[name] = 2
        return False

    return any(state.get(n) is None and cycle(n) for n in edges)

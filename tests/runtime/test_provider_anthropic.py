"""The `anthropic` provider driven by the official client against a loopback server that
speaks the Messages API."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from flow_kernel.errors import AgentInvocationError
from flow_kernel.runtime.config import parse_config
from flow_kernel.runtime.providers.anthropic import AnthropicProvider
from flow_kernel.runtime.providers.base import (
    MAX_TOOL_CALLS,
    ProviderReply,
    ProviderRequest,
    ToolSpec,
)
from flow_kernel.runtime.providers.table import PROVIDERS

KEY = "sk-ant-test-secret-123"
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
               500: "api_error", 529: "overloaded_error"}


class FakeAnthropic:
    """Answers POST /v1/messages from a queue and keeps the requests and their headers.

    A queued 200 reply is the answer's text, or a list of content blocks (text / tool_use),
    optionally with a stop reason: (200, blocks, "max_tokens"); bytes are sent as they are.
    Any other status answers the API's error body with the queued text as its message."""

    def __init__(self) -> None:
        self.replies: list[tuple[Any, ...]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the name http.server calls
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                fake.paths.append(self.path)
                status, content, *rest = fake.replies.pop(0) if fake.replies else (500, "no reply queued")
                if isinstance(content, bytes):
                    data = content
                elif status == 200:
                    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
                    stop = rest[0] if rest else ("tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn")
                    payload: dict[str, Any] = {
                        "id": f"msg_{len(fake.requests)}", "type": "message", "role": "assistant",
                        "model": body["model"], "content": blocks, "stop_reason": stop, "stop_sequence": None,
                        "usage": {"input_tokens": 5, "output_tokens": 3}}
                    data = json.dumps(payload).encode()
                else:
                    payload = {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": content}}
                    data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("request-id", f"req_{len(fake.requests)}")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture()
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    server = FakeAnthropic()
    thread = threading.Thread(target=server.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    yield server
    server.server.shutdown()
    server.server.server_close()
    thread.join()


TRIAGE = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": "#/$defs/Triage",
          "$defs": {"Triage": {"type": "object",
                               "properties": {"id": {"type": "string", "minLength": 1},
                                              "severity": {"type": "string", "enum": ["low", "high"]}},
                               "required": ["id", "severity"], "additionalProperties": False}}}
ANSWER = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
          "additionalProperties": False}


def request(**overrides: Any) -> ProviderRequest:
    fields: dict[str, Any] = {"agent": "t", "model": "claude-test", "system": "Constraint (always holds): Never invent ids",
                              "prompt": "Ticket T1: refund", "schema": TRIAGE}
    fields.update(overrides)
    return ProviderRequest(**fields)


def attempt(req: ProviderRequest, provider: AnthropicProvider | None = None) -> ProviderReply:
    return asyncio.run((provider or AnthropicProvider()).attempt(req))


def failure(req: ProviderRequest, provider: AnthropicProvider | None = None) -> AgentInvocationError:
    with pytest.raises(AgentInvocationError) as info:
        attempt(req, provider)
    return info.value


def test_structured_output_is_the_native_json_schema_format(fake: FakeAnthropic) -> None:
    fake.replies.append((200, '{"id": "T1", "severity": "high"}'))
    reply = attempt(request(temperature=0.2))
    assert reply.output == {"id": "T1", "severity": "high"} and reply.raw == '{"id": "T1", "severity": "high"}'
    assert reply.usage == {"input_tokens": 5, "output_tokens": 3} and reply.tool_calls == []
    (body,) = fake.requests
    assert fake.paths == ["/v1/messages"]
    assert body["model"] == "claude-test" and body["max_tokens"] == 4096 and body["temperature"] == 0.2
    assert body["system"] == "Constraint (always holds): Never invent ids"
    assert body["messages"] == [{"role": "user", "content": "Ticket T1: refund"}]
    assert "tools" not in body and "tool_choice" not in body
    fmt = body["output_config"]["format"]
    assert fmt["type"] == "json_schema" and fmt["schema"]["$ref"] == "#/$defs/Triage"
    assert "$schema" not in fmt["schema"]
    triage = fmt["schema"]["$defs"]["Triage"]
    assert triage["additionalProperties"] is False and triage["required"] == ["id", "severity"]
    # what constrained decoding cannot express goes into the description (the host validates it)
    assert "minLength" not in triage["properties"]["id"] and "minLength" in triage["properties"]["id"]["description"]
    headers = fake.headers[0]
    # anthropic 2.x sends an API key as a bearer token, no longer as `x-api-key`
    assert headers["authorization"] == f"Bearer {KEY}" and "x-api-key" not in headers
    assert "anthropic-version" in headers and headers["x-stainless-retry-count"] == "0"


def test_max_tokens_and_the_endpoint_can_be_given_to_the_constructor(fake: FakeAnthropic,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # the arguments win over the environment
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
    fake.replies.append((200, '{"id": "T1", "severity": "low"}'))
    attempt(request(), AnthropicProvider(fake.url, "sk-ant-given-key-456", max_tokens=1024))
    assert fake.requests[0]["max_tokens"] == 1024 and "temperature" not in fake.requests[0]
    assert fake.headers[0]["authorization"] == "Bearer sk-ant-given-key-456"


def test_plain_text_output_has_no_format(fake: FakeAnthropic) -> None:
    fake.replies.append((200, [{"type": "text", "text": "Hello"}, {"type": "text", "text": " there"}]))
    reply = attempt(request(schema={"type": "string"}, prompt="Say hello"))
    assert reply.output == "Hello there" and reply.raw == "Hello there"
    assert "output_config" not in fake.requests[0]


def test_a_contract_the_format_cannot_carry_is_sent_without_one(fake: FakeAnthropic) -> None:
    tree = {"$ref": "#/$defs/Tree", "$defs": {"Tree": {
        "type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
        "required": ["kids"], "additionalProperties": False}}}
    anything = {"type": "object", "properties": {"data": {}}, "required": ["data"], "additionalProperties": False}
    fake.replies += [(200, '{"kids": []}'), (200, '{"data": [1, "x"]}')]
    assert attempt(request(schema=tree)).output == {"kids": []}
    assert attempt(request(schema=anything)).output == {"data": [1, "x"]}
    assert all("output_config" not in body for body in fake.requests)


def test_text_that_is_not_json_is_returned_for_the_contract_to_report(fake: FakeAnthropic) -> None:
    fake.replies.append((200, "not json at all"))
    assert attempt(request()).output == "not json at all"


def test_a_repair_adds_the_previous_answer_and_the_errors(fake: FakeAnthropic) -> None:
    fake.replies.append((200, '{"id": "T1", "severity": "low"}'))
    previous = {"id": "T1", "severity": "urgent"}
    reply = attempt(request(repair={"previousOutput": previous, "errors": ["severity: 'urgent' is not one of ['low', 'high']"]}))
    assert reply.output == {"id": "T1", "severity": "low"}
    first, assistant, user = fake.requests[0]["messages"]
    assert first == {"role": "user", "content": "Ticket T1: refund"}
    assert assistant == {"role": "assistant", "content": json.dumps(previous)}
    assert user["role"] == "user" and user["content"].startswith("Your answer did not meet the output contract:")
    assert "- severity: 'urgent' is not one of ['low', 'high']" in user["content"]


LOOKUP = ToolSpec("lookup", "Looks an order up.", {"type": "object", "properties": {"order_id": {"type": "string"}},
                                                  "required": ["order_id"], "additionalProperties": False})
REFUND = ToolSpec("refund", "Refunds an order.", {"type": "object", "properties": {"order_id": {"type": "string"}},
                                                 "required": ["order_id"], "additionalProperties": False},
                  requires_approval=True)


def _tool_use(use_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": name, "input": arguments}


def test_tool_use_round_trip(fake: FakeAnthropic) -> None:
    fake.replies += [
        (200, [{"type": "text", "text": "Let me look."},
               _tool_use("toolu_1", "lookup", {"order_id": "A1"}), _tool_use("toolu_2", "refund", {"order_id": "A1"})]),
        (200, '{"answer": "A1 shipped; refund denied"}'),
    ]
    called: list[tuple[str, dict[str, Any]]] = []

    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        called.append((name, arguments))
        return {"status": "shipped"} if name == "lookup" else {"denied": True, "reason": "auto-deny"}

    reply = attempt(request(schema=ANSWER, prompt="Where is A1? Refund it.", tools=(LOOKUP, REFUND), call_tool=call_tool))
    assert reply.output == {"answer": "A1 shipped; refund denied"}
    assert called == [("lookup", {"order_id": "A1"}), ("refund", {"order_id": "A1"})]
    assert reply.tool_calls == [
        {"tool": "lookup", "arguments": {"order_id": "A1"}, "result": {"status": "shipped"}},
        {"tool": "refund", "arguments": {"order_id": "A1"}, "result": {"denied": True, "reason": "auto-deny"}}]
    assert reply.usage == {"input_tokens": 10, "output_tokens": 6}  # both rounds counted
    first, second = fake.requests
    assert first["tools"] == [{"name": "lookup", "description": "Looks an order up.", "input_schema": LOOKUP.parameters},
                              {"name": "refund", "description": "Refunds an order.", "input_schema": REFUND.parameters}]
    assert second["tools"] == first["tools"] and second["output_config"] == first["output_config"]
    prompt, assistant, results = second["messages"]
    assert prompt == {"role": "user", "content": "Where is A1? Refund it."}
    assert assistant["role"] == "assistant"
    assert [(b["type"], b.get("id")) for b in assistant["content"]] == [("text", None), ("tool_use", "toolu_1"), ("tool_use", "toolu_2")]
    assert assistant["content"][1]["input"] == {"order_id": "A1"} and assistant["content"][1]["name"] == "lookup"
    assert results["role"] == "user"
    assert results["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"status": "shipped"}'},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": '{"denied": true, "reason": "auto-deny"}'}]


def test_a_model_that_never_stops_calling_tools_fails_the_call(fake: FakeAnthropic) -> None:
    fake.replies += [(200, [_tool_use(f"toolu_{i}", "lookup", {"order_id": "A1"})]) for i in range(MAX_TOOL_CALLS + 2)]
    calls: list[str] = []

    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        calls.append(name)
        return {"status": "x"}

    error = failure(request(schema=ANSWER, tools=(LOOKUP,), call_tool=call_tool))
    assert error.code == "agent-invocation" and f"(max_tool_calls: {MAX_TOOL_CALLS})" in error.message
    assert error.details == {"max_tool_calls": MAX_TOOL_CALLS}
    # Alone (no pipeline counting its calls), the loop stops after a round per allowed call and one more.
    assert len(fake.requests) == MAX_TOOL_CALLS + 1


@pytest.mark.parametrize(("status", "message"), [(529, "Overloaded"), (500, "Internal server error")])
def test_error_status_is_agent_invocation(fake: FakeAnthropic, status: int, message: str) -> None:
    fake.replies.append((status, message))
    error = failure(request())
    assert error.code == "agent-invocation" and error.details == {"status": status}
    assert error.message == f"the provider answered {status}: {message}"
    assert len(fake.requests) == 1  # the client's own retries are off: `retry` decides
    assert KEY not in error.message


def test_the_key_is_never_in_an_error_message_even_when_the_endpoint_echoes_it(fake: FakeAnthropic) -> None:
    fake.replies.append((401, f"invalid x-api-key: {KEY}"))
    error = failure(request())
    assert error.details == {"status": 401} and KEY not in error.message and "***" in error.message


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # nothing listens there any more


def test_unreachable_endpoint_is_agent_invocation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    error = failure(request())
    assert error.code == "agent-invocation" and "could not be reached" in error.message
    assert KEY not in error.message and "status" not in error.details


def test_an_answer_cut_off_at_max_tokens_fails_the_call(fake: FakeAnthropic) -> None:
    fake.replies.append((200, [{"type": "text", "text": '{"id": "T'}], "max_tokens"))
    error = failure(request(), AnthropicProvider(max_tokens=16))
    assert "max_tokens (16)" in error.message and error.details == {"stop_reason": "max_tokens", "max_tokens": 16}


def test_a_reply_with_no_text_fails_the_call(fake: FakeAnthropic) -> None:
    fake.replies.append((200, [], "refusal"))
    error = failure(request())
    assert "no text" in error.message and error.details == {"stop_reason": "refusal"}


def test_a_reply_that_is_not_json_is_agent_invocation(fake: FakeAnthropic) -> None:
    fake.replies.append((200, b'{"id": "msg_1", "content": [nope'))
    error = failure(request())
    assert error.code == "agent-invocation" and "not JSON" in error.message


def test_a_max_tokens_the_client_will_not_wait_for_is_agent_invocation(fake: FakeAnthropic) -> None:
    error = failure(request(), AnthropicProvider(max_tokens=1_000_000))
    assert error.code == "agent-invocation" and "not sent" in error.message and fake.requests == []


def test_without_the_package_the_table_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)  # `import anthropic` raises ImportError
    with pytest.raises(AgentInvocationError) as info:  # the table checks the client before it builds one
        PROVIDERS["anthropic"].make_for(parse_config({}))
    assert "pip install 'flow-kernel[providers]'" in info.value.message
    with pytest.raises(ImportError):  # the client itself does not check again
        AnthropicProvider()


TOOL_AGENT = '''## Looks an order up.
tool lookup(order_id: string) -> { status: string }
tool refund(order_id: string) -> { ok: bool } requires approval
agent helper { model: "anthropic/claude-test", tools: [lookup, refund], output: { answer: string }, repair: 1 }
'''


def test_a_flow_program_through_the_session(fake: FakeAnthropic, tmp_path: Any) -> None:
    """End to end: `anthropic/…` resolves to this provider; tools run on the host, the
    approval-gated one is denied, a bad answer is repaired, and the key reaches no event."""
    from flow_kernel import Session

    fake.replies += [
        (200, [_tool_use("toolu_1", "lookup", {"order_id": "A1"}), _tool_use("toolu_2", "refund", {"order_id": "A1"})]),
        (200, "A1 shipped"),  # not the contract's JSON: repaired
        (200, '{"answer": "A1 shipped; refund denied"}'),
    ]
    s = Session(directory=tmp_path, operator="auto-deny", sandbox=False, journal_dir=None)
    looked: list[str] = []

    @s.tool
    def lookup(order_id: str) -> dict[str, str]:
        looked.append(order_id)
        return {"status": "shipped"}

    @s.tool
    def refund(order_id: str) -> dict[str, bool]:
        raise AssertionError("denied tools never run")

    outcome = s.run(TOOL_AGENT + 'helper("Where is A1? Refund it.")')
    assert outcome.error is None, outcome.to_json()
    assert outcome.result == {"answer": "A1 shipped; refund denied"} and looked == ["A1"]
    first, second, repair = fake.requests
    assert first["model"] == "claude-test" and first["tools"][0]["description"] == "Looks an order up."
    lookup_result, refund_result = second["messages"][2]["content"]
    assert lookup_result == {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"status": "shipped"}'}
    assert refund_result["tool_use_id"] == "toolu_2" and json.loads(refund_result["content"])["denied"] is True
    assert [m["role"] for m in repair["messages"]] == ["user", "assistant", "user"]
    assert "did not meet the output contract" in repair["messages"][2]["content"]
    (trace,) = outcome.traces
    assert trace["provider"] == "anthropic" and trace["tool_calls"] == 2 and trace["attempts"] == 2
    assert KEY not in json.dumps(outcome.events)

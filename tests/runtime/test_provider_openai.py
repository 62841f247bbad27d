"""The `openai` provider driven by the official client against a loopback server that
speaks the Chat Completions API."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable.cassette import CassettePlayer, CassetteRecorder
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor


class FakeOpenAI:
    """Answers POST /v1/chat/completions from a queue of (status, content) and keeps the requests."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, Any]] = []  # content text, or {"tool_calls": [...]}
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the name http.server calls
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                fake.headers.append(dict(self.headers))
                status, content = fake.replies.pop(0) if fake.replies else (500, "no reply queued")
                if status == 200:
                    message = ({"role": "assistant", "content": None, "tool_calls": content["tool_calls"]}
                               if isinstance(content, dict) else {"role": "assistant", "content": content})
                    payload = {"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                               "choices": [{"index": 0, "finish_reason": "tool_calls" if isinstance(content, dict) else "stop",
                                            "message": message}],
                               "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}
                else:
                    payload = {"error": {"message": content, "type": "server_error", "code": None}}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture()
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    thread = threading.Thread(target=server.server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-123")
    yield server
    server.server.shutdown()
    thread.join()


AGENT = '''type Triage = { id: string, severity: "low" | "high" }
agent t {
  model: "openai/gpt-test"
  role: "support triage specialist"
  constraints: ["Never invent ids"]
  output: Triage
  repair: 1
  temperature: 0.2
}
'''


def run(source: str) -> RunOutcome:
    compiled = compile_source(SourceFile("o.flow", source))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    return asyncio.run(run_compiled(compiled, InProcessExecutor()))


def test_structured_output_through_the_official_client(fake: FakeOpenAI) -> None:
    fake.replies.append((200, '{"id": "T1", "severity": "high"}'))
    outcome = run(AGENT + 't("Ticket T1: refund")')
    assert outcome.error is None, outcome.to_json()
    assert outcome.result == {"id": "T1", "severity": "high"}
    (request,) = fake.requests
    assert request["model"] == "gpt-test" and request["temperature"] == 0.2
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["schema"]["$ref"] == "#/$defs/Triage"
    system, user = request["messages"]
    assert system["role"] == "system" and system["content"].startswith("Constraint (always holds): Never invent ids")
    assert user == {"role": "user", "content": "Ticket T1: refund"}
    assert {k.lower(): v for k, v in fake.headers[0].items()}["authorization"] == "Bearer sk-test-secret-123"
    assert "sk-test-secret-123" not in json.dumps(outcome.events)


def test_invalid_output_is_repaired_with_the_errors(fake: FakeOpenAI) -> None:
    fake.replies += [(200, "not json at all"), (200, '{"id": "T1", "severity": "low"}')]
    outcome = run(AGENT + 't("Ticket T1")')
    assert outcome.result == {"id": "T1", "severity": "low"}
    repair = fake.requests[1]["messages"]
    assert repair[2]["role"] == "assistant" and repair[3]["role"] == "user"
    assert "did not meet the output contract" in repair[3]["content"]


def test_error_status_is_agent_invocation(fake: FakeOpenAI) -> None:
    fake.replies.append((503, "overloaded"))
    outcome = run(AGENT + 't("Ticket T1")')
    assert outcome.error is not None and outcome.error.code == "agent-invocation"
    assert "503" in outcome.error.message and outcome.error.details.get("status") == 503
    assert len(fake.requests) == 1  # the client's own retries are off: `retry` decides


def test_unreachable_endpoint_is_agent_invocation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    outcome = run(AGENT + 't("Ticket T1")')
    assert outcome.error is not None and outcome.error.code == "agent-invocation"
    assert "could not be reached" in outcome.error.message


def test_plain_string_output_has_no_response_format(fake: FakeOpenAI) -> None:
    fake.replies.append((200, "Hello there"))
    outcome = run('agent s { model: "openai/gpt-test" }\ns("Say hello")')
    assert outcome.result == "Hello there"
    assert "response_format" not in fake.requests[0]


TOOL_AGENT = '''## Looks an order up.
tool lookup(order_id: string) -> { status: string }
tool refund(order_id: string) -> { ok: bool } requires approval
agent helper { model: "openai/gpt-test", tools: [lookup, refund], output: { answer: string } }
'''


def _tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_tool_calls_round_trip_through_the_official_client(fake: FakeOpenAI, tmp_path: Any) -> None:
    from flow_kernel import Session

    fake.replies += [
        (200, {"tool_calls": [_tool_call("call_1", "lookup", '{"order_id": "A1"}'),
                              _tool_call("call_2", "refund", '{"order_id": "A1"}')]}),
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
    first, second = fake.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["lookup", "refund"]
    assert first["tools"][0]["function"]["description"] == "Looks an order up."
    assert first["tools"][0]["function"]["parameters"]["required"] == ["order_id"]
    assistant, lookup_reply, refund_reply = second["messages"][2:]
    assert assistant["role"] == "assistant" and [c["id"] for c in assistant["tool_calls"]] == ["call_1", "call_2"]
    assert lookup_reply == {"role": "tool", "tool_call_id": "call_1", "content": '{"status": "shipped"}'}
    denied = json.loads(refund_reply["content"])
    assert refund_reply["tool_call_id"] == "call_2" and denied["denied"] is True
    (trace,) = outcome.traces
    assert trace["provider"] == "openai" and trace["model"] == "gpt-test" and trace["tool_calls"] == 2
    assert trace["usage"] == {"input_tokens": 10, "output_tokens": 6}  # both rounds counted


def test_a_model_that_never_stops_calling_tools_fails_the_call(fake: FakeOpenAI, tmp_path: Any) -> None:
    from flow_kernel import Session
    from flow_kernel.runtime.providers.base import MAX_TOOL_CALLS

    fake.replies += [(200, {"tool_calls": [_tool_call(f"c{i}", "lookup", '{"order_id": "A1"}')]})
                     for i in range(MAX_TOOL_CALLS + 1)]
    s = Session(directory=tmp_path, operator="none", sandbox=False, journal_dir=None)
    s.tool(lambda order_id: {"status": "x"}, name="lookup")
    s.tool(lambda order_id: {"ok": True}, name="refund")
    outcome = s.run(TOOL_AGENT + 'helper("loop")')
    assert outcome.error is not None and outcome.error.code == "agent-invocation"
    # the ninth tool call is refused before it runs: the ninth request asked for it
    assert f"(max_tool_calls: {MAX_TOOL_CALLS})" in outcome.error.message and len(fake.requests) == MAX_TOOL_CALLS + 1


def test_recorded_against_the_endpoint_then_replayed_with_it_unreachable(fake: FakeOpenAI, tmp_path: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from flow_kernel.runtime.events.vocabulary import comparable

    fake.replies += [(200, "not json"), (200, '{"id": "T1", "severity": "high"}'), (200, '{"id": "T2", "severity": "low"}')]
    program = AGENT + 'parallelMap(["T1", "T2"], t => t("Ticket ${t}"), concurrency: 1)'
    program = program.replace("agent t {", "agent tri {").replace('t("Ticket', 'tri("Ticket').replace("t => ", "x => ").replace("${t}", "${x}")
    compiled = compile_source(SourceFile("o.flow", program))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    cassette = tmp_path / "tape.jsonl"
    recorded = asyncio.run(run_compiled(compiled, InProcessExecutor(),
                                        RunContext(recorder=CassetteRecorder(cassette), run_id="rtape")))
    assert recorded.error is None, recorded.to_json()
    assert recorded.result == [{"id": "T1", "severity": "high"}, {"id": "T2", "severity": "low"}]
    text = cassette.read_text()
    assert "sk-test-secret-123" not in text and "Bearer" not in text and fake.url not in text
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    served = len(fake.requests)
    replayed = asyncio.run(run_compiled(compiled, InProcessExecutor(),
                                        RunContext(player=CassettePlayer(cassette), run_id="rtape")))
    assert replayed.result == recorded.result and len(fake.requests) == served
    assert comparable(replayed.events) == comparable(recorded.events)

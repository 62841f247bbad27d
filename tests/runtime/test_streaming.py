"""Streaming (issue 19): the `openai` and `anthropic` providers read their APIs' SSE streams
through the official clients, and the pipeline turns the pieces into throttled `agent.delta`
events — live only: seen by the sinks, never in the run's events, its journal or the
canonical sequence. Against loopback servers that stream as the APIs do (sse_servers.py)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.events.vocabulary import KINDS, Event, canonical
from flow_kernel.runtime.providers.streaming import Delta, DeltaMerger, partial_value
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor
from flow_kernel.views.run_model import RunModel
from tests.runtime.sse_servers import (
    SSEServer,
    anthropic_text,
    anthropic_tool_use,
    openai_text,
    openai_tool_call,
)


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[SSEServer]:
    s = SSEServer()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{s.port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-stream-test-123")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{s.port}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-stream-test-123")
    yield s
    s.close()


AGENT = '''type Triage = { id: string, severity: "low" | "high" }
agent t { model: "PROVIDER/m", output: Triage, repair: 0 }
'''
ANSWER = '{"id": "T1", "severity": "high"}'


def run(source: str, tmp_path: Path | None = None) -> tuple[RunOutcome, list[Event]]:
    compiled = compile_source(SourceFile("s.flow", source))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    seen: list[Event] = []
    outcome = asyncio.run(run_compiled(compiled, InProcessExecutor(),
                                       RunContext(sinks=[seen.append], journal_dir=tmp_path)))
    return outcome, seen


def deltas(events: list[Event]) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["type"] == "agent.delta"]


def pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def check_data(event: Event) -> None:
    kind = KINDS[event["type"]]
    assert kind.data.__required_keys__ <= set(event["data"])  # type: ignore[attr-defined]
    assert set(event["data"]) <= set(get_type_hints(kind.data))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_structured_output_streams_as_live_deltas(server: SSEServer, tmp_path: Path, provider: str) -> None:
    make = openai_text if provider == "openai" else anthropic_text
    server.replies.append(make(pieces(ANSWER, 4), delay=0.06))  # slower than the throttle: one delta per piece
    outcome, seen = run(AGENT.replace("PROVIDER", provider) + 't("Ticket T1")', tmp_path)
    assert outcome.error is None, outcome.to_json()
    assert outcome.result == {"id": "T1", "severity": "high"}
    assert server.requests[0]["stream"] is True
    got = deltas(seen)
    assert len(got) >= 4 and "".join(d["text"] for d in got) == ANSWER
    assert got[-1]["length"] == len(ANSWER)
    values = [d.get("value") for d in got]
    assert {"id": "T1"} in values or any(isinstance(v, dict) and v.get("id") == "T1" and "severity" not in v
                                         for v in values)  # the card fills field by field
    assert values[-1] == {"id": "T1", "severity": "high"}
    for event in seen:
        if event["type"] == "agent.delta":
            check_data(event)
    # live only: not in the run's events, its journal, or the canonical sequence
    assert not any(e["type"] == "agent.delta" for e in outcome.events)
    assert outcome.journal is not None and "agent.delta" not in outcome.journal.read_text()
    assert not any(e["type"] == "agent.delta" for e in canonical(seen))
    assert outcome.traces[0]["usage"] == {"input_tokens": 5, "output_tokens": 3}  # from the stream's usage


def test_deltas_are_merged_and_throttled(server: SSEServer) -> None:
    text = "word " * 300
    server.replies.append(openai_text(pieces(text, 2), delay=0.002))  # ~750 pieces, ~2 s
    started = time.monotonic()
    outcome, seen = run('agent s { model: "openai/m" }\ns("talk")')
    elapsed = time.monotonic() - started
    assert outcome.error is None and outcome.result == text
    got = deltas(seen)
    print(f"{len(pieces(text, 2))} pieces in {elapsed:.2f} s -> {len(got)} delta events")
    assert "".join(d["text"] for d in got) == text  # merged, nothing lost
    assert len(got) <= elapsed * 20 + 3  # at most ~20 a second
    assert len(got) >= 5


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_stream_cut_mid_way_is_agent_invocation_and_the_trace_keeps_the_partial_text(
        server: SSEServer, provider: str) -> None:
    make = openai_text if provider == "openai" else anthropic_text
    sent = ["The answer ", "is being ", "written when"]
    header = 1 if provider == "openai" else 2  # events before the first piece
    server.replies.append(make([*sent, " the line drops", " here."], cut_after=header + len(sent)))
    outcome, seen = run('agent s { model: "PROVIDER/m" }\ns("talk")'.replace("PROVIDER", provider))
    assert outcome.error is not None and outcome.error.code == "agent-invocation", outcome.to_json()
    assert "stream was cut" in outcome.error.message
    (trace,) = outcome.traces
    assert trace["outcome"] == "agent-invocation" and trace["partial"] == "".join(sent)
    assert "".join(d["text"] for d in deltas(seen)) == "".join(sent)
    failed = next(e for e in outcome.events if e["type"] == "agent.failed")
    assert failed["data"]["stream_cut"] is True and failed["data"]["received"] == len("".join(sent))


TOOLS = '''## Looks an order up.
tool lookup(order_id: string) -> { status: string }
agent helper { model: "PROVIDER/m", tools: [lookup], output: { answer: string } }
'''


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_tool_call_arguments_stream_too(server: SSEServer, tmp_path: Path, provider: str) -> None:
    from flow_kernel import Session

    arguments = '{"order_id": "A1-2025"}'
    if provider == "openai":
        server.replies += [openai_tool_call("call_1", "lookup", pieces(arguments, 3), delay=0.06),
                           openai_text(pieces('{"answer": "shipped"}', 5))]
    else:
        server.replies += [anthropic_tool_use("toolu_1", "lookup", pieces(arguments, 3), delay=0.06),
                           anthropic_text(pieces('{"answer": "shipped"}', 5))]
    seen: list[Event] = []
    s = Session(directory=tmp_path, sandbox=False, journal_dir=None, context=RunContext(sinks=[seen.append]))
    s.tool(lambda order_id: {"status": "shipped"}, name="lookup")
    outcome = s.run(TOOLS.replace("PROVIDER", provider) + 'helper("Where is A1?")')
    assert outcome.error is None, outcome.to_json()
    assert outcome.result == {"answer": "shipped"}
    tool_deltas = [d for d in deltas(seen) if d.get("tools")]
    assert tool_deltas and all(d["round"] == 1 for d in tool_deltas)
    partial_args = [d["tools"][0]["arguments"] for d in tool_deltas]
    assert all(d["tools"][0]["tool"] == "lookup" for d in tool_deltas)
    assert partial_args[-1] == {"order_id": "A1-2025"}
    assert any(a.get("order_id", "") not in ("", "A1-2025") for a in partial_args)  # seen while being written
    answer = [d for d in deltas(seen) if d["round"] == 2]
    assert "".join(d["text"] for d in answer) == '{"answer": "shipped"}'
    assert outcome.traces[0]["tool_calls"] == 1


def test_the_run_view_model_fills_as_the_model_writes(server: SSEServer) -> None:
    server.replies.append(openai_text(pieces(ANSWER, 6), delay=0.06))
    model = RunModel()
    shown: list[str] = []

    def sink(event: Event) -> None:
        model.apply(event)
        if event["type"] == "agent.delta":
            node = next(n for n in model.nodes.values() if n.kind == "agent")
            shown.append(node.partial_text)

    compiled = compile_source(SourceFile("v.flow", AGENT.replace("PROVIDER", "openai") + 't("Ticket T1")'))
    outcome = asyncio.run(run_compiled(compiled, InProcessExecutor(), RunContext(sinks=[sink])))
    assert outcome.error is None
    assert shown and shown[0] and ANSWER.startswith(shown[0]) and shown[-1] == ANSWER
    node = next(n for n in model.nodes.values() if n.kind == "agent")
    assert node.partial_value == {"id": "T1", "severity": "high"}
    assert "T1" in model.text()  # the completed card shows the output, as without streaming


def test_the_merger_on_its_own() -> None:
    """A fake clock: pieces within the interval are merged; flush sends what is held back."""
    now = [0.0]
    out: list[dict[str, Any]] = []
    merger = DeltaMerger(out.append, structured=True, interval=0.05, clock=lambda: now[0])
    for piece in ['{"a"', ': [1, ', "2", ', 3]}']:
        merger(Delta(text=piece))
        now[0] += 0.01
    assert len(out) == 1 and out[0]["text"] == '{"a"'
    merger.flush()
    assert out[-1]["text"] == ': [1, 2, 3]}' and out[-1]["value"] == {"a": [1, 2, 3]}
    merger.start_attempt(2)
    merger(Delta(text="nope"))
    merger.flush()
    assert out[-1]["attempt"] == 2 and "value" not in out[-1]  # prose: no partial value
    assert partial_value('{"x": "unfini') == {"x": "unfini"} and partial_value("") is None
    assert json.loads(json.dumps(out))  # plain JSON, for any sink


def test_the_terminal_shows_a_call_writing_at_most_once_a_second() -> None:
    import io

    from flow_kernel.runtime.events.terminal import TerminalProgress

    now = [0.0]
    out = io.StringIO()
    view = TerminalProgress(out, clock=lambda: now[0])
    view({"type": "agent.started", "span": {"id": "c1", "parent": None}, "data": {"agent": "t", "label": None,
                                                                                  "prompt": "go"}})
    length = 0
    for n in range(30):  # 3 s of deltas, 10 a second
        length += 5
        view({"type": "agent.delta", "span": {"id": "c1", "parent": None},
              "data": {"agent": "t", "label": None, "text": f"w{n:03d} ", "length": length}})
        now[0] += 0.1
    lines = [line for line in out.getvalue().splitlines() if "chars" in line]
    assert len(lines) == 3 and lines[0].strip() == "✎ 5 chars …w000"
    assert "\x1b" not in out.getvalue()

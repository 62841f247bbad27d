"""The OpenTelemetry exporter: real Flow programs run in process with an
`OpenTelemetrySink`, and the spans the SDK finished."""

from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry.sdk")

import asyncio
import copy
import datetime
import json
import sys
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.events.otel import OpenTelemetrySink
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor

TREE = '''
agent ok { model: "scripted", script: [when("1", "one"), when("2", "two")] }
workflow w() -> string {
  pipeline "p" {
    stage "a" {
      log "in a"
      let r = parallel { x: ok("1"), y: ok("2") }
    }
    stage "b" {
      print "in b"
      let n = len([r.x, r.y])
    }
  }
  return r.x
}
print "top"
w()
'''

FAILING = '''
agent bot {
  model: "scripted"
  script: [fail("agent-invocation", "boom")]
}
workflow w() -> string {
  pipeline "p" {
    stage "call" {
      let v = bot("go")
    }
  }
  return v
}
w()
'''


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp


@pytest.fixture(scope="module")
def inprocess() -> InProcessExecutor:
    return InProcessExecutor()


def run(executor: InProcessExecutor, source: str, sink: Any, workflow: str | None = None,
        input: dict[str, Any] | None = None) -> RunOutcome:
    compiled = compile_source(SourceFile("otel.flow", source))
    assert compiled.ok, [f"{d.code} {d.message}" for d in compiled.check.errors]
    return asyncio.run(run_compiled(compiled, executor, RunContext(sinks=[sink]), workflow=workflow, input=input))


def ns(ts: str) -> int:
    moment = datetime.datetime.fromisoformat(ts)
    return round(moment.timestamp() * 1000) * 1_000_000  # events carry milliseconds


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def one(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    found = by_name(spans, name)
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def parent_of(span: ReadableSpan, spans: tuple[ReadableSpan, ...]) -> ReadableSpan | None:
    if span.parent is None:
        return None
    matches = [s for s in spans if s.context.span_id == span.parent.span_id]
    assert len(matches) == 1, f"the parent of {span.name} is not among the finished spans"
    return matches[0]


def chain(span: ReadableSpan, spans: tuple[ReadableSpan, ...]) -> list[str]:
    names = [span.name]
    current = parent_of(span, spans)
    while current is not None:
        names.append(current.name)
        current = parent_of(current, spans)
    return names


# -- the tree ---------------------------------------------------------------------------------
def test_spans_mirror_the_run_tree(inprocess: InProcessExecutor, provider: TracerProvider,
                                   exporter: InMemorySpanExporter) -> None:
    sink = OpenTelemetrySink(provider)
    outcome = run(inprocess, TREE, sink)
    assert outcome.ok, outcome.error
    spans = exporter.get_finished_spans()
    started = [e for e in outcome.events if e["type"].endswith(".started")]
    assert len(spans) == len(started)
    assert sink.open_spans == 0
    assert sorted(s.name for s in spans) == sorted(
        ["workflow <cell>", "workflow w", "pipeline p", "stage a", "stage b", "agent ok", "agent ok"])

    root = one(spans, "workflow <cell>")
    assert root.parent is None
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    agents = by_name(spans, "agent ok")
    for agent in agents:
        assert chain(agent, spans) == ["agent ok", "stage a", "pipeline p", "workflow w", "workflow <cell>"]
    assert chain(one(spans, "stage b"), spans) == ["stage b", "pipeline p", "workflow w", "workflow <cell>"]
    assert all(s.status.status_code is StatusCode.OK for s in spans)

    # the run's own span ids ride along, and the OTel parent is the run's parent
    for span in spans:
        assert span.attributes is not None
        assert span.attributes["flow.run"] == outcome.run_id
        parent = parent_of(span, spans)
        if parent is not None:
            assert parent.attributes is not None
            assert span.attributes["flow.parent"] == parent.attributes["flow.span"]
    labels = {e["data"]["label"] for e in outcome.events if e["type"] == "agent.started"}
    assert len(labels) == 2
    assert {a.attributes["flow.label"] for a in agents if a.attributes} == labels


def test_span_times_are_the_event_timestamps(inprocess: InProcessExecutor, provider: TracerProvider,
                                             exporter: InMemorySpanExporter) -> None:
    outcome = run(inprocess, TREE, OpenTelemetrySink(provider))
    spans = exporter.get_finished_spans()
    for span in spans:
        assert span.attributes is not None
        ident = span.attributes["flow.span"]
        events = [e for e in outcome.events if e["span"]["id"] == ident]
        started = next(e for e in events if e["type"].endswith(".started"))
        ended = next(e for e in events if e["type"].endswith((".completed", ".failed")))
        assert span.start_time == ns(started["ts"])
        assert span.end_time == ns(ended["ts"])


def test_attributes(inprocess: InProcessExecutor, provider: TracerProvider,
                    exporter: InMemorySpanExporter) -> None:
    source = '''
agent bot {
  model: "scripted"
  retry: { on: ["agent-invocation"], attempts: 2 }
  script: [fail("agent-invocation", "flaky"), "ok"]
}
stage "s" { let r = bot("the prompt") }
r
'''
    outcome = run(inprocess, source, OpenTelemetrySink(provider))
    assert outcome.ok, outcome.error
    spans = exporter.get_finished_spans()
    agent = one(spans, "agent bot")
    attrs = dict(agent.attributes or {})
    assert attrs["flow.type"] == "agent"
    assert attrs["flow.agent"] == "bot"
    assert attrs["flow.stage"] == "s"
    assert str(attrs["flow.label"]).startswith("bot@")
    assert attrs["flow.attempts"] == 2
    assert isinstance(attrs["flow.latency_ms"], int)
    assert "flow.prompt" not in attrs and "flow.output" not in attrs
    for value in attrs.values():
        assert isinstance(value, str | bool | int | float)
    stage = one(spans, "stage s")
    assert stage.attributes is not None
    assert stage.attributes["flow.type"] == "stage" and stage.attributes["flow.name"] == "s"
    root = one(spans, "workflow <cell>")
    assert root.attributes is not None
    assert root.attributes["flow.limits.agent_runs"] == 100


def test_payloads_only_when_asked(inprocess: InProcessExecutor, provider: TracerProvider,
                                  exporter: InMemorySpanExporter) -> None:
    source = '''
type Out = { n: int }
agent bot { model: "scripted", output: Out, script: [{ n: 2 }] }
publish "report.md" "# secret report"
bot("the prompt").n
'''
    outcome = run(inprocess, source, OpenTelemetrySink(provider, include_payloads=True))
    assert outcome.ok, outcome.error
    spans = exporter.get_finished_spans()
    attrs = dict(one(spans, "agent bot").attributes or {})
    assert attrs["flow.prompt"] == "the prompt"
    assert json.loads(str(attrs["flow.output"])) == {"n": 2}
    published = [e for e in one(spans, "workflow <cell>").events if e.name == "artifact.published"]
    assert published and dict(published[0].attributes or {})["flow.text"] == "# secret report"

    exporter.clear()
    run(inprocess, source, OpenTelemetrySink(provider))
    spans = exporter.get_finished_spans()
    attrs = dict(one(spans, "agent bot").attributes or {})
    assert "flow.prompt" not in attrs and "flow.output" not in attrs
    published = [e for e in one(spans, "workflow <cell>").events if e.name == "artifact.published"]
    assert dict(published[0].attributes or {})["flow.name"] == "report.md"
    assert "flow.text" not in dict(published[0].attributes or {})


# -- failures ---------------------------------------------------------------------------------
def test_failing_agent_fails_its_ancestors(inprocess: InProcessExecutor, provider: TracerProvider,
                                          exporter: InMemorySpanExporter) -> None:
    sink = OpenTelemetrySink(provider)
    outcome = run(inprocess, FAILING, sink)
    assert outcome.error is not None and outcome.error.code == "agent-invocation"
    spans = exporter.get_finished_spans()
    assert sink.open_spans == 0
    agent = one(spans, "agent bot")
    assert chain(agent, spans) == ["agent bot", "stage call", "pipeline p", "workflow w", "workflow <cell>"]
    assert agent.status.status_code is StatusCode.ERROR
    assert agent.status.description == "agent-invocation: boom"
    assert agent.attributes is not None
    assert agent.attributes["flow.error.code"] == "agent-invocation"
    assert agent.attributes["flow.error.message"] == "boom"
    assert agent.attributes["error.type"] == "agent-invocation"
    for name in ("stage call", "pipeline p", "workflow w", "workflow <cell>"):
        span = one(spans, name)
        assert span.status.status_code is StatusCode.ERROR, name
        assert span.attributes is not None and span.attributes["flow.error.code"] == "agent-invocation"


def test_caught_failure_leaves_the_run_ok(inprocess: InProcessExecutor, provider: TracerProvider,
                                         exporter: InMemorySpanExporter) -> None:
    source = '''
agent bot { model: "scripted", script: [fail("agent-invocation", "down")] }
try { let _r = bot("go") } catch "agent-invocation" as e { print e.message }
1
'''
    outcome = run(inprocess, source, OpenTelemetrySink(provider))
    assert outcome.ok, outcome.error
    spans = exporter.get_finished_spans()
    assert one(spans, "agent bot").status.status_code is StatusCode.ERROR
    root = one(spans, "workflow <cell>")
    assert root.status.status_code is StatusCode.OK
    assert [dict(e.attributes or {})["flow.text"] for e in root.events if e.name == "print"] == ["down"]


def test_require_failure(inprocess: InProcessExecutor, provider: TracerProvider,
                         exporter: InMemorySpanExporter) -> None:
    outcome = run(inprocess, 'stage "s" { require 1 == 2 : "bad" }\n1', OpenTelemetrySink(provider))
    assert outcome.error is not None and outcome.error.code == "assertion"
    spans = exporter.get_finished_spans()
    stage = one(spans, "stage s")
    assert stage.status.status_code is StatusCode.ERROR
    assert stage.status.description is not None and stage.status.description.startswith("assertion")
    assert [e.name for e in stage.events] == ["require.failed"]
    assert dict(stage.events[0].attributes or {})["flow.message"] == "bad"


def test_failures_outside_the_sandbox(inprocess: InProcessExecutor, provider: TracerProvider,
                                      exporter: InMemorySpanExporter) -> None:
    source = 'workflow w(n: int) -> int { return parseJson("\\"s\\"") }\n'
    # a result that fails validation after `workflow.completed`: a zero-length failure under it
    outcome = run(inprocess, source, OpenTelemetrySink(provider), workflow="w", input={"n": 1})
    assert outcome.error is not None and outcome.error.code == "output-validation"
    spans = exporter.get_finished_spans()
    first, late = sorted(by_name(spans, "workflow w"), key=lambda s: s.end_time or 0)
    assert first.status.status_code is StatusCode.OK
    assert late.status.status_code is StatusCode.ERROR
    assert late.parent is not None and late.parent.span_id == first.context.span_id
    assert late.attributes is not None and late.attributes["flow.after_end"] is True
    assert late.attributes["flow.error.code"] == "output-validation"

    # an input that fails validation: the run never started, still one failed span
    exporter.clear()
    sink = OpenTelemetrySink(provider)
    outcome = run(inprocess, source, sink, workflow="w", input={"n": "bad"})
    assert outcome.error is not None and outcome.error.code == "workflow-input-validation"
    (span,) = exporter.get_finished_spans()
    assert span.name == "workflow w" and span.status.status_code is StatusCode.ERROR
    assert span.start_time == span.end_time
    assert sink.open_spans == 0


# -- point events -----------------------------------------------------------------------------
def test_log_and_print_are_span_events(inprocess: InProcessExecutor, provider: TracerProvider,
                                       exporter: InMemorySpanExporter) -> None:
    outcome = run(inprocess, TREE, OpenTelemetrySink(provider))
    spans = exporter.get_finished_spans()
    stage_a, stage_b, root = one(spans, "stage a"), one(spans, "stage b"), one(spans, "workflow <cell>")
    assert [(e.name, dict(e.attributes or {})["flow.text"]) for e in stage_a.events] == [("log", "in a")]
    assert [(e.name, dict(e.attributes or {})["flow.text"]) for e in stage_b.events] == [("print", "in b")]
    assert [(e.name, dict(e.attributes or {})["flow.text"]) for e in root.events] == [("print", "top")]
    log = next(e for e in outcome.events if e["type"] == "log")
    event = stage_a.events[0]
    assert event.timestamp == ns(log["ts"])
    assert dict(event.attributes or {})["flow.seq"] == log["seq"]
    assert dict(event.attributes or {})["flow.stage"] == "a"


def test_progress_verify_and_approval(inprocess: InProcessExecutor, provider: TracerProvider,
                                      exporter: InMemorySpanExporter) -> None:
    with open("examples/triage.flow", encoding="utf-8") as f:
        source = f.read()
    outcome = run(inprocess, source, OpenTelemetrySink(provider))
    assert outcome.error is not None and outcome.error.code == "operator-unavailable"
    spans = exporter.get_finished_spans()
    assert [e.name for e in one(spans, "stage classify").events] == ["progress"]
    progress = dict(one(spans, "stage classify").events[0].attributes or {})
    assert (progress["flow.done"], progress["flow.total"]) == (2, 2)
    verify = dict(one(spans, "stage check").events[0].attributes or {})
    assert verify["flow.passed"] is True
    workflow = one(spans, "workflow triage_all")
    assert [e.name for e in workflow.events] == ["approval.requested", "approval.resolved"]
    assert workflow.status.status_code is StatusCode.ERROR
    assert len(by_name(spans, "agent triager")) == 2


# -- robustness -------------------------------------------------------------------------------
def test_unclosed_spans_end_with_the_workflow(inprocess: InProcessExecutor, provider: TracerProvider,
                                             exporter: InMemorySpanExporter) -> None:
    outcome = run(inprocess, TREE, lambda event: None)
    # the same run, as if the events of stage "a" and one agent never ended
    events = [copy.deepcopy(e) for e in outcome.events
              if not (e["type"] == "stage.completed" and e["stage"] == "a")]
    dropped_agent = next(e for e in events if e["type"] == "agent.completed")
    events.remove(dropped_agent)
    sink = OpenTelemetrySink(provider)
    for event in events:
        sink(event)
    assert sink.open_spans == 0
    spans = exporter.get_finished_spans()
    assert len(spans) == len([e for e in events if e["type"].endswith(".started")])
    end = ns(events[-1]["ts"])
    unfinished = [s for s in spans if s.status.description == "not completed"]
    assert sorted(s.name for s in unfinished) == ["agent ok", "stage a"]
    for span in unfinished:
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes is not None and span.attributes["flow.completed"] is False
        assert span.end_time == end
    root = one(spans, "workflow <cell>")
    assert root.status.status_code is StatusCode.OK


def test_close_ends_a_run_that_never_finished(inprocess: InProcessExecutor, provider: TracerProvider,
                                             exporter: InMemorySpanExporter) -> None:
    outcome = run(inprocess, TREE, lambda event: None)
    cut = next(i for i, e in enumerate(outcome.events) if e["type"] == "agent.started")
    sink = OpenTelemetrySink(provider)
    for event in outcome.events[:cut + 1]:
        sink(event)
    assert sink.open_spans == 5  # <cell>, w, p, a and the agent
    assert exporter.get_finished_spans() == ()
    sink.close()
    assert sink.open_spans == 0
    spans = exporter.get_finished_spans()
    assert len(spans) == 5
    assert all(s.status.status_code is StatusCode.ERROR for s in spans)
    sink.close()  # twice is fine


def test_garbage_events_raise_nothing(provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    sink = OpenTelemetrySink(provider)
    garbage: list[Any] = [
        None, 1, "workflow.started", [], {}, {"type": None}, {"type": 3}, {"type": "unknown.thing"},
        {"type": "agent.completed"}, {"type": "agent.failed", "span": {"id": "c1"}, "data": None},
        {"type": "stage.started", "span": "not a dict", "data": []},
        {"type": "log", "span": {"id": "nowhere"}, "data": {"text": object()}},
        {"type": "workflow.started", "run": "r", "span": {"id": "a", "parent": "missing"}, "ts": "not a time",
         "data": {"name": {"nested": [1, 2]}, "limits": "none"}},
        {"type": "stage.started", "run": "r", "span": {"id": "b", "parent": "a"}, "ts": 12, "seq": "x",
         "data": {"name": None}},
        {"type": "print", "run": "r", "span": {"id": "b", "parent": None}, "data": {"text": "hi", "x": {1, 2}}},
        {"type": "agent.completed", "run": "r", "span": {"id": "c9", "parent": "b"},
         "data": {"attempts": "three", "usage": [1], "latency_ms": "slow"}},
        {"type": "stage.completed", "run": "r", "span": {"id": "b", "parent": "a"}},
        {"type": "stage.completed", "run": "r", "span": {"id": "b", "parent": "a"}},   # twice
        {"type": "pipeline.failed", "run": "r", "span": {"id": "zz", "parent": None}, "data": {"code": {"x": 1}}},
        {"type": "workflow.started", "run": "r", "span": {"id": "a", "parent": None}},  # the same id again
        {"type": "workflow.failed", "run": "r", "span": {"id": "a", "parent": None},
         "ts": "2026-01-01T00:00:00Z", "data": {"code": None, "message": 42}},
        {"type": "log", "run": "r", "span": {"id": "a"}, "data": {"text": "after the end"}},
        {"type": "workflow.completed", "run": "r", "span": None},
    ]
    for event in garbage:
        sink(event)
    sink.close()
    assert sink.open_spans == 0
    for span in exporter.get_finished_spans():
        for value in (span.attributes or {}).values():
            assert isinstance(value, str | bool | int | float)


def test_a_broken_tracer_raises_nothing() -> None:
    class Broken:
        def get_tracer(self, *args: Any, **kwargs: Any) -> Broken:
            return self

        def start_span(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("exporter down")

    sink = OpenTelemetrySink(Broken())
    sink({"type": "workflow.started", "run": "r", "span": {"id": "s1", "parent": None}, "data": {}})
    sink({"type": "workflow.completed", "run": "r", "span": {"id": "s1", "parent": None}, "data": {}})
    sink.close()


def test_default_is_the_global_provider(inprocess: InProcessExecutor) -> None:
    outcome = run(inprocess, TREE, OpenTelemetrySink())
    assert outcome.ok, outcome.error


def test_missing_opentelemetry_is_a_clear_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)
    with pytest.raises(ImportError, match=r"pip install 'flow-kernel\[otel\]'"):
        OpenTelemetrySink()

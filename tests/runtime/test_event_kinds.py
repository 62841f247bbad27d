"""The event vocabulary (runtime/events/vocabulary.py) against what real runs emit: every event's
type is a declared kind, and its data has the declared fields — the required ones, and
no others unless the kind says its data is open (an error's details)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.config import parse_config
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.events.vocabulary import (
    HOST_ONLY_PREFIXES,
    KINDS,
    POINTS,
    SCOPES,
    Event,
    kind_of,
    scope_of,
)
from flow_kernel.runtime.policy.operator import Operator
from flow_kernel.runtime.run import run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor

EVERYTHING = '''agent helper { model: "scripted", script: [when("fine", "ok")] }
agent backup { model: "for:deep-judgement else default" }
rubric fit { criteria: [{ id: "ok", description: "Is it fine?" }] }
agent expert { model: "scripted", script: [{ scores: { ok: 3 }, rationale: "fine" }] }
panel check_it { experts: [{ agent: expert, domain: "everything" }], rubric: fit }
workflow inner(n: int) -> int {
  stage "double" { let twice = n * 2 }
  return twice
}
pipeline "all" {
  stage "one" {
    let a = helper("fine")
    let b = inner(2)
    log "logged"
    print "printed"
    verify b == 4 : "four"
    emit progress { done: 1, total: 2, message: "half" }
    publish "notes.md" "# Notes"
    publish "data.json" {b: b}
    let yes = approve "go on?"
    let which = ask "which?" choice ["x", "y"]
  }
}
let judged = check_it("a candidate")
let stand_in = backup("no model for the purpose: the session's")
try { let c = helper("no reply for this") } catch "agent-invocation" { print "caught" }
pipeline "last" { stage "end" { require false : "the end" } }
'''


def _run(source: str) -> list[Event]:
    compiled = compile_source(SourceFile("kinds.flow", source))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    outcome = asyncio.run(run_compiled(compiled, InProcessExecutor(),
                                       RunContext(operator=Operator("auto-approve"), run_id="rkinds",
                                                  config=parse_config({"default_model": "mock"}))))
    return outcome.events


@pytest.fixture(scope="module")
def events() -> list[Event]:
    return _run(EVERYTHING)


def test_a_real_run_emits_only_declared_kinds_with_declared_data(events: list[Event]) -> None:
    # The program above shows every kind but the provider's timing ones (streaming, limits,
    # breakers: tests/runtime/test_streaming.py and test_resilience.py hold those to their data).
    assert {e["type"] for e in events} == {name for name, kind in KINDS.items() if not kind.timing}
    for event in events:
        kind = kind_of(event["type"])
        assert kind is not None, event
        declared = get_type_hints(kind.data)
        required = kind.data.__required_keys__  # type: ignore[attr-defined]
        data = event["data"]
        assert required <= set(data), (event["type"], sorted(required - set(data)))
        if not kind.open_data:
            assert set(data) <= set(declared), (event["type"], sorted(set(data) - set(declared)))


def test_scopes_open_and_close_by_span_id(events: list[Event]) -> None:
    """Each scope's end has its start's span id and parent; points name an open scope."""
    started: dict[str, Any] = {}
    open_ids: set[str] = set()
    for event in events:
        span = event["span"]
        scope = scope_of(event["type"])
        if scope is None:
            assert span["id"] in open_ids, event
        elif scope[1] == "started":
            started[span["id"]] = (scope[0], span["parent"])
            open_ids.add(span["id"])
        else:
            assert started[span["id"]] == (scope[0], span["parent"]), event
            open_ids.discard(span["id"])
    assert not open_ids


def test_the_tree_and_the_host_only_families() -> None:
    assert SCOPES == ("workflow", "pipeline", "stage", "agent")
    assert {k.scope for k in KINDS.values() if k.scope} == set(SCOPES)
    assert all(KINDS[p].scope is None for p in POINTS)
    assert HOST_ONLY_PREFIXES == ("agent.", "approval.", "model.", "provider.")
    assert kind_of(["not", "a", "type"]) is None and scope_of("agent.maybe") is None


def test_the_runtime_guide_documents_every_kind_and_its_required_fields() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "runtime-guide.md").read_text(encoding="utf-8")
    section = guide[guide.index("\n## Events\n"):].split("\n## ", 2)[1]
    documented: dict[str, set[str]] = {}
    for row in re.findall(r"(?m)^\| (`[a-z.]+`(?: / `[a-z.]+`)*) \| (.*) \|$", section):
        fields = set(re.findall(r"`([a-z_]+)`", row[1]))
        for kind in re.findall(r"`([a-z.]+)`", row[0]):
            documented[kind] = fields
    assert set(documented) == set(KINDS)
    for name, kind in KINDS.items():
        required = set(kind.data.__required_keys__)  # type: ignore[attr-defined]
        assert required <= documented[name], (name, sorted(required - documented[name]))

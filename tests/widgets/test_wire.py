"""The run view's wire is declared once (flow_kernel/views/wire.py) and mirrored by name in
the browser (widgets/src/wire.js): the two tables are equal, the reducer reads every field by
its readable name, and what the host's Compactor sends is what the declaration says."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.views.run_stream import Compactor
from flow_kernel.views.wire import RECORD_KEY, SPECS, encode, wire_table

ROOT = Path(__file__).resolve().parents[2]
WIRE_JS = ROOT / "widgets" / "src" / "wire.js"
REDUCER_JS = ROOT / "widgets" / "src" / "reducer.js"


def js_table() -> Any:
    text = WIRE_JS.read_text(encoding="utf-8")
    found = re.search(r"^export const WIRE = (\{.*?^\});$", text, re.S | re.M)
    assert found, "widgets/src/wire.js declares `export const WIRE = {...};` (JSON)"
    return json.loads(found.group(1))


def test_the_browser_mirrors_the_declaration() -> None:
    assert js_table() == wire_table()


def test_the_reducer_reads_every_field_by_its_readable_name() -> None:
    reducer = REDUCER_JS.read_text(encoding="utf-8")
    names = {name for spec in SPECS.values() for name in spec.keys}
    unread = sorted(name for name in names if f"e.{name}" not in reducer)
    assert unread == []
    cases = set(re.findall(r'case "(\w+)":', reducer))
    assert cases <= set(SPECS), "the reducer switches on declared record names only"


def test_each_record_has_one_tag_and_distinct_keys() -> None:
    tags = [spec.tag for spec in SPECS.values()]
    assert len(tags) == len(set(tags))
    for spec in SPECS.values():
        assert RECORD_KEY not in spec.keys.values(), spec.name
        assert len(set(spec.keys.values())) == len(spec.keys), spec.name


def test_encode_writes_the_short_keys_and_leaves_out_what_the_record_leaves_out() -> None:
    assert encode({"record": "scope_ended", "id": "s1", "state": "completed", "time": None}) == \
        {"e": "x", "i": "s1", "s": "completed", "t": None}
    with pytest.raises(KeyError):
        encode({"record": "scope_ended", "id": "s1", "state": "completed", "time": 1, "extra": 1})  # type: ignore[typeddict-unknown-key]


def ev(type_: str, span: str, parent: str | None = None, **data: Any) -> dict[str, Any]:
    return {"type": type_, "span": {"id": span, "parent": parent}, "data": data, "ts": "2026-01-01T00:00:00+00:00",
            "order": [[3, 1]]}


def test_what_the_compactor_sends_is_declared() -> None:
    compact = Compactor()
    events = [
        ev("workflow.started", "s1", None, name="<cell>", limits={"agent_runs": 3}),
        ev("stage.started", "s2", "s1", name="a"),
        ev("agent.started", "c1", "s2", agent="w", label=None, prompt="p", of=2),
        ev("agent.completed", "c1", "s2", agent="w", label=None, output={"x": 1}, attempts=[{"kind": "attempt"}]),
        ev("agent.failed", "c2", "s2", agent="w", label=None, code="c", message="m"),
        ev("progress", "s2", done=1, total=2, message="half"),
        ev("approval.requested", "s2", kind="approve", question="ok?"),
        ev("approval.resolved", "s2", kind="approve", question="ok?", answer=True, by="policy"),
        ev("log", "s2", text="hi"), ev("verify.evaluated", "s2", passed=True, message="v", condition="c"),
        ev("require.failed", "s2", message="r", condition="c"), ev("artifact.published", "s2", name="a.md", text="x"),
        ev("model.degraded", "c1", "s2", agent="w", label=None, purpose="deep", model="mock"),
        ev("stage.failed", "s2", "s1", name="a", code="c", message="m"),
        ev("agent.delta", "c1", "s2", agent="w", label=None, attempt=1, round=1, text="hi", length=2),
        ev("provider.waiting", "c1", "s2", provider="p", reason="rpm", wait_ms=10),
        ev("provider.resumed", "c1", "s2", provider="p", reason="rpm", waited_ms=10),
        ev("provider.breaker", "c1", "s2", provider="p", state="open", failures=3, pause_ms=100),
    ]
    by_tag = {spec.tag: spec for spec in SPECS.values()}
    seen = set()
    for event in events:
        wire = compact(event)
        assert wire is not None, event["type"]
        spec = by_tag[wire[RECORD_KEY]]
        seen.add(spec.name)
        assert set(wire) - {RECORD_KEY} <= set(spec.keys.values()), (event["type"], wire)
    assert seen == set(SPECS)

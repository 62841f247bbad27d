"""What a run keeps of its events (vocabulary.py `kept_order`, `sub_order`; host.py): order
keys as tuples, equal as JSON to what the sandbox sent, so that after a collection the
cyclic collector no longer scans them; the readers take both forms."""

from __future__ import annotations

import asyncio
import gc
import json
from pathlib import Path
from typing import Any

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable.checkpoint import position
from flow_kernel.runtime.durable.journal import read_journal
from flow_kernel.runtime.events.vocabulary import LAST, canonical, comparable, kept_order, sub_order
from flow_kernel.runtime.host import HostServices
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor
from flow_kernel.views.run_model import item_of

CALLS = 12
SOURCE = f"""agent a {{ model: "scripted", script: ["ok"] }}
stage "s" {{ print "in a stage" }}
let outs = parallelMap(range({CALLS}), i => a("item ${{i}}"))
len(outs)
"""


def run(tmp_path: Path) -> RunOutcome:
    compiled = compile_source(SourceFile("k.flow", SOURCE))
    outcome = asyncio.run(run_compiled(compiled, InProcessExecutor(), RunContext(journal_dir=tmp_path)))
    assert outcome.error is None and outcome.result == CALLS
    return outcome


def tracked(value: Any, seen: set[int]) -> list[Any]:
    """The containers in `value` that the cyclic collector tracks, each once."""
    found = []
    if isinstance(value, dict | list | tuple) and id(value) not in seen:
        seen.add(id(value))
        if gc.is_tracked(value):
            found.append(value)
        for item in value.values() if isinstance(value, dict) else value:
            found += tracked(item, seen)
    return found


def test_every_kept_order_key_is_tuples_and_the_journal_has_the_same_json(tmp_path: Path) -> None:
    outcome = run(tmp_path)
    assert {e["type"] for e in outcome.events} >= {"stage.started", "print", "agent.started", "agent.completed"}
    for event in outcome.events:
        order = event["order"]
        assert type(order) is tuple and all(type(step) is tuple for step in order), event
    journal = read_journal(outcome.journal)
    assert journal == json.loads(json.dumps(outcome.events))
    assert [json.dumps(e["order"]) for e in journal] == [json.dumps(e["order"]) for e in outcome.events]


def test_after_a_collection_a_call_keeps_few_containers_in_the_collectors_sight(tmp_path: Path) -> None:
    outcome = run(tmp_path)
    gc.collect()
    agent_events = [e for e in outcome.events if e["type"].startswith("agent.")]
    assert len(agent_events) == 2 * CALLS
    for event in agent_events:
        assert tracked(event["order"], set()) == [], event["order"]
    # A call without tools: its `agent.started` data holds no container at all.
    assert not any(gc.is_tracked(e["data"]) for e in agent_events if e["type"] == "agent.started")
    # What stays: the two events' dicts (they hold their `span` and `data` dicts), the
    # completed data (it holds `usage`) and its attempts log, against 13 with lists.
    seen: set[int] = set()
    assert len([c for e in agent_events for c in tracked(e, seen)]) <= 4 * CALLS


def test_kept_order_is_equal_as_json_and_keeps_a_forged_key_as_it_came() -> None:
    for key in ([[3, 1], [1]], [[2]], [], [[6, "left"], [0]], [[[9], [1]], 7, "x", [{"a": 1}]]):
        kept = kept_order(key)
        assert type(kept) is tuple and json.dumps(kept) == json.dumps(key)
    assert kept_order([[[9], [1]], 7])[0] == ([9], [1])  # a step's own items as they came
    for forged in ("x", 7, None, {"a": [1]}):
        assert kept_order(forged) is forged


def test_sub_order_converts_the_request_key_once_and_counts_the_events() -> None:
    payload: dict[str, Any] = {"order": [[6, 0], [1]]}
    first, second = sub_order(payload), sub_order(payload)
    assert json.dumps(first) == "[[6, 0], [1], [1]]" and json.dumps(second) == "[[6, 0], [1], [2]]"
    assert first[:-1] is not payload["order"] and first[0] is second[0] is payload["_order"][0]
    assert payload["order"] == [[6, 0], [1]]  # the request itself is untouched (journal keys read it)
    for forged in ({}, {"order": "x"}, {"order": {"a": 1}}):
        assert sub_order(forged) == (*LAST, (1,))


def test_the_host_keeps_an_announced_key_as_tuples_and_a_forged_one_as_it_came() -> None:
    compiled = compile_source(SourceFile("k.flow", "1"))
    host = HostServices(compiled.check, RunContext(run_id="r-kept"))
    for order in ([[4], [2]], "forged", {"a": 1}, 7):
        host.emit({"type": "log", "span": {"id": "s1", "parent": None}, "data": {"text": "x"}, "order": order})
    kept = [e["order"] for e in host.events]
    assert kept[0] == ((4,), (2,))
    assert kept[1:] == ["forged", {"a": 1}, 7]
    host.emit({"type": "log", "span": {"id": "s1", "parent": None}, "data": {"text": "x"}})
    assert host.events[-1]["order"] is LAST


def test_canonical_gives_the_json_form_so_a_run_and_its_journal_compare_equal(tmp_path: Path) -> None:
    outcome = run(tmp_path)
    journal = read_journal(outcome.journal)
    assert canonical(outcome.events) == canonical(journal)
    assert comparable(outcome.events) == comparable(journal)
    assert all(type(e["order"]) is list for e in canonical(outcome.events))
    assert type(outcome.events[0]["order"]) is tuple  # canonical copies; the run's events are untouched


def test_the_readers_take_a_key_in_either_form() -> None:
    for key in ([[3, "b"], [7, 4], [1]], [[7, 4]], [[1]], [], "x"):
        assert item_of(key) == item_of(kept_order(key))
        assert position("agent", {"order": key}, 1) == position("agent", {"order": kept_order(key)}, 1)
    assert position("agent", {"order": ((3, 1), (2,))}, 1) == "agent:[[3,1],[2]]:1"
    assert item_of(kept_order([[3, "b"], [7, 4], [1]])) == ("3:b/7", 4)

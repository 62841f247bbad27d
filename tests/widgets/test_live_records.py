"""A call's live state on the run view's wire (views/run_stream.py): streamed text, waits for a
provider's limits and its breaker become small records — the newest end of a long piece,
every field checked for its type — within the wire's budget per event (docs/performance.md)."""

from __future__ import annotations

import json
from typing import Any

from flow_kernel.views.run_stream import STREAMED, Compactor

BUDGET = 300  # bytes a record on the wire, at most (docs/performance.md: the run view's bytes per event)


def ev(type_: str, **data: Any) -> dict[str, Any]:
    return {"type": type_, "span": {"id": "call-1", "parent": "stage-1"}, "data": data,
            "ts": "2026-01-01T00:00:01+00:00"}


def size(record: dict[str, Any] | None) -> int:
    assert record is not None
    return len(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode())


def test_a_piece_of_streamed_text_keeps_its_whitespace_and_its_place() -> None:
    record = Compactor().record(ev("agent.delta", agent="w", label=None, attempt=2, round=1,
                                   text="Roses\n  are red", length=40))
    assert record == {"record": "call_text", "id": "call-1", "time": 0, "attempt": 2, "round": 1,
                      "text": "Roses\n  are red", "length": 40}


def test_a_long_piece_sends_its_end_and_says_a_part_was_left_out() -> None:
    text = "a" * 5000 + "THE END"
    record = Compactor().record(ev("agent.delta", agent="w", label=None, attempt=1, round=1, text=text,
                                   length=len(text)))
    assert record is not None and record["record"] == "call_text"
    assert len(record["text"]) == STREAMED
    assert record["text"].startswith("…") and record["text"].endswith("THE END")
    assert record["length"] == len(text)  # the browser sees the gap


def test_live_records_stay_within_the_budget_whatever_the_event_carries() -> None:
    compact = Compactor()
    huge = "<b>" * 10_000
    events = [
        ev("agent.delta", agent=huge, label=huge, attempt=1, round=1, text=huge, length=30_000,
           value={"x": huge}, tools=[{"tool": huge, "arguments": huge}]),
        ev("provider.waiting", provider=huge, reason=huge, wait_ms=2_000),
        ev("provider.resumed", provider=huge, reason=huge, waited_ms=2_001),
        ev("provider.breaker", provider=huge, state=huge, failures=5, pause_ms=30_000),
    ]
    for event in events:
        assert size(compact(event)) <= BUDGET, event["type"]


def test_forged_fields_are_dropped_not_passed_on() -> None:
    compact = Compactor()
    delta = compact.record(ev("agent.delta", agent="w", label=None, attempt=True, round="2", text=["x"], length=-3))
    assert delta == {"record": "call_text", "id": "call-1", "time": 0, "attempt": None, "round": None, "text": "",
                     "length": None}
    wait = compact.record(ev("provider.waiting", provider="openai", reason="retry-after", wait_ms=1.5))
    assert wait == {"record": "call_waiting", "id": "call-1", "time": 0, "provider": "openai",
                    "reason": "retry-after", "wait": None}
    breaker = compact.record(ev("provider.breaker", provider="openai", state="open", failures=3, pause_ms=30_000))
    assert breaker == {"record": "breaker", "id": "call-1", "time": 0, "provider": "openai", "state": "open",
                       "pause": 30_000}

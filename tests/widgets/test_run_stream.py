"""The host's side of the run view's wire (flow_kernel/views/run_stream.py): records of a
bounded size whatever an event carries, and batches at most `RATE` a second however fast a
run goes, every record delivered once and in order, replayed from where a view asks."""

from __future__ import annotations

import asyncio
import datetime
import json
import time
from pathlib import Path
from typing import Any

from flow_kernel.views import run_stream
from flow_kernel.views.run_stream import MAX_BATCH, RATE, Batcher, Compactor

STREAMS = Path(__file__).resolve().parents[2] / "widgets" / "test" / "streams"
HUGE = "x" * 1_000_000


def size(record: dict[str, Any]) -> int:
    return len(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode())


def test_a_record_is_bounded_whatever_the_event_carries() -> None:
    compact = Compactor()
    span = {"id": "c1." + "9" * 500, "parent": "s" * 500}
    events = [
        {"type": "workflow.started", "ts": "2026-01-01T00:00:00+00:00", "span": {"id": "s1", "parent": None},
         "data": {"name": HUGE, "limits": {f"k{i}": i for i in range(1000)}}},
        {"type": "agent.started", "span": span, "data": {"agent": HUGE, "label": None, "prompt": HUGE},
         "order": [[7, 1], [1], [1]]},
        {"type": "agent.completed", "span": span, "data": {"agent": "a", "output": {"big": [HUGE] * 10},
                                                          "attempts": [{"kind": "repair"}] * 1000, "latency_ms": 5}},
        {"type": "agent.failed", "span": span, "data": {"code": HUGE, "message": HUGE}},
        {"type": "approval.requested", "span": span, "data": {"kind": "approve", "question": HUGE, "details": [HUGE]}},
        {"type": "approval.resolved", "span": span, "data": {"question": HUGE, "answer": HUGE, "by": HUGE}},
        {"type": "log", "span": span, "data": {"text": HUGE}},
        {"type": "verify.evaluated", "span": span, "data": {"passed": True, "message": HUGE, "condition": HUGE}},
        {"type": "progress", "span": span, "data": {"done": 1, "total": 2, "message": HUGE}},
        {"type": "stage.failed", "span": span, "data": {"name": HUGE, "code": HUGE, "message": HUGE}},
    ]
    for event in events:
        record = compact(event)
        assert record is not None, event["type"]
        assert size(record) <= 700, (event["type"], size(record))
    assert compact({"type": "print", "data": {"text": HUGE}}) is None  # the cell's stdout, not the view
    assert compact({"type": "no.such.kind"}) is None


def test_the_recorded_streams_average_well_under_300_bytes_an_event() -> None:
    for path in STREAMS.glob("*.jsonl"):
        messages = [json.loads(line) for line in path.read_text().splitlines()]
        records = sum(len(m["ev"]) for m in messages if m["t"] == "batch")
        sent = sum(len(json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode()) for m in messages)
        print(f"{path.name}: {sent / records:.0f} bytes a record")
        assert sent / records <= 300


def test_a_parallel_map_item_is_labelled_by_its_group_and_index() -> None:
    compact = Compactor()
    started = {"type": "agent.started", "span": {"id": "c7.4.1", "parent": "s5"},
               "data": {"agent": "triager", "label": "triager@11:46", "prompt": "Ticket 4:\n  the printer"},
               "order": [[7, 4], [1], [1]]}
    assert compact(started) == {"e": "a", "i": "c7.4.1", "p": "s5", "a": "triager", "l": "Ticket 4: the printer",
                                "t": None, "g": "s5|/7", "x": 4}
    labelled = {**started, "data": {**started["data"], "label": "first pass"}, "order": [[3, "left"], [1]]}
    record = compact(labelled)
    assert record is not None and record["l"] == "first pass" and "g" not in record  # a `parallel` branch: no group


def run_batcher(bursts: int, per_burst: int, pause: float) -> tuple[list[dict[str, Any]], float]:
    sent: list[dict[str, Any]] = []

    async def go() -> float:
        batcher = Batcher(sent.append, asyncio.get_running_loop())
        started = time.monotonic()
        n = 0
        for _ in range(bursts):
            for _ in range(per_burst):
                batcher.add({"e": "l", "i": "s1", "m": str(n)})
                n += 1
            await asyncio.sleep(pause)
        while batcher.sent < len(batcher.records):
            await asyncio.sleep(0.01)
        return time.monotonic() - started

    return sent, asyncio.run(go())


def test_batches_go_at_most_rate_a_second_every_record_once_in_order() -> None:
    sent, seconds = run_batcher(bursts=100, per_burst=100, pause=0.005)  # 10,000 records in about a second
    print(f"{len(sent)} messages in {seconds:.2f} s for 10,000 records")
    assert len(sent) <= RATE * seconds + 2, (len(sent), seconds)
    assert len(sent) >= 2  # batched over time, not all at the end
    records = [r for m in sent for r in m["ev"]]
    assert [r["m"] for r in records] == [str(n) for n in range(10_000)]
    assert [m["from"] for m in sent] == [sum(len(m["ev"]) for m in sent[:k]) for k in range(len(sent))]
    assert all(len(m["ev"]) <= MAX_BATCH for m in sent)


def test_the_rate_can_fail(monkeypatch: Any) -> None:
    """The same run with the batching undone (a message an event, as the old view re-sent
    its HTML on every render): far more than RATE messages a second."""
    monkeypatch.setattr(run_stream.Batcher, "add", lambda self, r: (self.records.append(r), self.flush()))
    sent, seconds = run_batcher(bursts=10, per_burst=100, pause=0.005)
    assert len(sent) > RATE * seconds * 10


def test_replay_sends_what_a_view_has_not_seen() -> None:
    sent: list[dict[str, Any]] = []
    batcher = Batcher(sent.append)
    for n in range(MAX_BATCH + 10):
        batcher.add({"e": "l", "i": "s1", "m": str(n)})
    batcher.flush()
    sent.clear()
    batcher.replay(5)
    assert [m["from"] for m in sent] == [5, 5 + MAX_BATCH]
    assert sum(len(m["ev"]) for m in sent) == MAX_BATCH + 5
    sent.clear()
    batcher.replay(10**9)  # nothing past what was sent; a forged `have` is clamped
    batcher.replay(-3)
    assert sent[0]["from"] == 0


def test_a_replay_says_the_runs_time_now() -> None:
    """A view that opens in a quiet stretch of the run holds only old records: the replay
    also says how far the run is, `now` (ms since its first event, the records' clock)."""
    compact = Compactor()
    assert compact.now() is None  # no event yet: no clock
    started = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=2)
    compact({"type": "workflow.started", "ts": started.isoformat(), "span": {"id": "s1", "parent": None},
             "data": {"name": "main"}})
    now = compact.now()
    assert now is not None and now >= 2000
    sent: list[dict[str, Any]] = []
    batcher = Batcher(sent.append)
    for n in range(MAX_BATCH + 10):
        batcher.add({"e": "l", "i": "s1", "m": str(n)})
    batcher.flush()
    assert all("now" not in m for m in sent)  # a batch as it goes is as fresh as its records
    sent.clear()
    batcher.replay(0, now)
    assert [m["now"] for m in sent] == [now, now]


def test_the_bench_figure_bytes_and_cpu_per_event() -> None:
    """`flow bench`'s view section on real runs (100 and 1,000 calls in the sandbox): at most
    300 bytes an event with the widget's code counted, and the same per event at any size."""
    from flow_kernel.bench.view import events_of, host_side

    small, large = host_side(events_of(100)), host_side(events_of(1000))
    for r in (small, large):
        print(f"{r['events']} events: {r['bytes'] / r['events']:.0f} B, {r['cpu_us'] / r['events']:.1f} µs an event, "
              f"{r['messages']} messages")
    assert large["bytes"] / large["events"] <= 300
    per_event = (large["batch_bytes"] / large["events"], small["batch_bytes"] / small["events"])
    assert 0.7 < per_event[0] / per_event[1] < 1.3, per_event  # linear in the events

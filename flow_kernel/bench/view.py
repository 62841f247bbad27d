"""Run view section of `flow bench`: what the live view costs per event.

For runs of 100, 1,000 and 10,000 zero-latency scripted agent calls in one `parallelMap`
(real runs in the sandbox; their events recorded), the host's side of the view is replayed
over the events in their arrival order, as the kernel feeds it: `RunModel.apply` (kept for
the cards' details and the summary), the compact record (views/run_stream.py) and the
batches, cut every 50 ms of the run's own time (`Batcher.RATE`). Reported per event:
bytes sent to the front end — the batches' JSON plus, once per run, the widget's code and
stylesheet (anywidget sends them when the widget opens) — and host CPU time (process time).
Bytes grow linearly with events (a record is bounded); the view that sent HTML re-sent all
of it each time (~47 KB a message at 5,000 items; docs/performance.md)."""

from __future__ import annotations

import asyncio
import datetime
import time
from pathlib import Path
from typing import Any

from flow_kernel.bench.measure import Figures, Row, Target
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.session import Session
from flow_kernel.views.run_model import RunModel
from flow_kernel.views.run_stream import RATE, Batcher, Compactor
from flow_kernel.views.wire import Batch

NAME = "view"
STATIC = Path(__file__).resolve().parents[1] / "views" / "static"

PROGRAM = """limits {{ agent_runs: {n}, steps: 10000000, duration: 10m, concurrency: 20 }}
agent triager {{
  model: "scripted"
  output: {{ id: string, severity: string }}
  script: [{{ id: "T", severity: "low" }}]
}}
pipeline "triage" {{
  stage "classify" {{
    let results = parallelMap(range({n}), i => triager("Ticket ${{i}}: the printer is on fire"))
    emit progress {{ done: len(results), total: {n} }}
  }}
}}
"""


def events_of(n: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []

    async def go() -> None:
        async with Session(operator="auto-approve", journal_dir=None, context=RunContext(sinks=[events.append])) as session:
            outcome = await session.run_async(PROGRAM.format(n=n))
            if outcome.error is not None:
                raise SystemExit(f"benchmark run failed: {outcome.error}")

    asyncio.run(go())
    return events


def host_side(events: list[dict[str, Any]]) -> dict[str, float]:
    """The view's host work over `events`, batched by the events' own times; bytes and CPU."""
    sent: list[Batch] = []
    batcher = Batcher(sent.append)
    compact = Compactor()
    model = RunModel()
    window = 1.0 / RATE
    first: datetime.datetime | None = None
    due = 0.0
    started = time.process_time()
    for event in events:
        model.apply(event)
        record = compact(event)
        if record is not None:
            batcher.add(record)
        ts = datetime.datetime.fromisoformat(event["ts"])
        first = first or ts
        now = (ts - first).total_seconds()
        if now >= due:
            batcher.flush()
            due = now + window
    batcher.flush()
    cpu = time.process_time() - started
    code = len((STATIC / "run_view.js").read_bytes()) + len((STATIC / "run_view.css").read_bytes())
    return {"events": len(events), "messages": batcher.messages, "batch_bytes": batcher.bytes,
            "bytes": batcher.bytes + code, "cpu_us": cpu * 1e6}


def measure(quick: bool) -> Figures:
    sizes = (100, 1000, 2000) if quick else (100, 1000, 10000)
    figures: Figures = {"repeat": 1, "sizes": list(sizes)}
    for n in sizes:
        result = host_side(events_of(n))
        figures[f"calls_{n}"] = {**result, "bytes_per_event": result["bytes"] / result["events"],
                                 "cpu_us_per_event": result["cpu_us"] / result["events"]}
    return figures


def _largest(f: Figures) -> dict[str, float]:
    largest: dict[str, float] = f[f"calls_{max(f['sizes'])}"]
    return largest


def rows(f: Figures) -> list[Row]:
    out: list[Row] = []
    for n in f["sizes"]:
        r = f[f"calls_{n}"]
        out.append(Row(f"{n:,} calls: events, messages", f"{r['events']:,} events in {r['messages']:,} messages"))
        out.append(Row(f"{n:,} calls: bytes to the front end", r["bytes"] / 1000, "KB", "{:,.1f}"))
        out.append(Row(f"{n:,} calls: bytes per event", r["bytes_per_event"], "B", "{:,.0f}"))
        out.append(Row(f"{n:,} calls: host CPU per event", r["cpu_us_per_event"], "µs", "{:,.1f}"))
    return out


TARGETS = [
    Target(
        figure="run view: bytes to the front end per event",
        measured=lambda f: f"{max(f['sizes']):,} calls, {_largest(f)['events']:,} events",
        compared=lambda f: "≤ 300 B an event on average (the old view: ~47 KB an event at 5,000 items)",
        value=lambda f: _largest(f)["bytes_per_event"],
        bound=300,
        unit="B",
    ),
    Target(
        figure="run view: bytes per event, largest run ÷ 1,000 calls (linear growth)",
        measured=lambda f: f"{_largest(f)['bytes_per_event']:.0f} B vs {f['calls_1000']['bytes_per_event']:.0f} B",
        compared=lambda f: "the same per event whatever the run's size",
        value=lambda f: _largest(f)["bytes_per_event"] / f["calls_1000"]["bytes_per_event"],
        bound=1.2,
    ),
]

"""Records the run view's wire for the front end's tests (widgets/test/*.test.mjs): real runs
in the real sandbox, their events made into records by the host's `Compactor` and cut into
batches by its `Batcher`, written as the messages the browser receives (one JSON a line).

    .venv/bin/python widgets/test/record.py     # rewrites widgets/test/streams/*.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from flow_kernel import Session  # noqa: E402
from flow_kernel.views.run_stream import Batcher, Compactor  # noqa: E402

STREAMS = Path(__file__).parent / "streams"

MAP = '''
agent triager {
  model: "scripted"
  role: "support triage specialist"
  instructions: "Classify the ticket."
  output: { id: string, severity: "low" | "high" }
  repair: 1
  script: [
    when("Ticket 7:", { id: "T7", severity: "urgent" }),
    when("Ticket 3:", { id: "T3", severity: "medium" }),
    when("Ticket 3:", { id: "T3", severity: "high" }),
    { id: "T", severity: "low" },
  ]
}
limits { agent_runs: 1000, concurrency: 20, steps: 100000 }
pipeline "triage" {
  stage "classify" {
    let results = parallelMap(range(300), i => {
      try { return triager("Ticket ${i}: the printer is on fire") } catch { return null }
    })
    emit progress { done: len(results), total: 300 }
    log "classified"
  }
}
'''


def record(name: str, source: str, cut: int | None = None) -> None:
    events: list[dict[str, Any]] = []
    session = Session(operator="auto-approve", journal_dir=None, sinks=[events.append], directory=ROOT / "examples")
    outcome = session.run(source)
    assert outcome.error is None or cut is not None, outcome.error
    messages: list[dict[str, Any]] = []
    batcher = Batcher(messages.append)
    compact = Compactor()
    for n, event in enumerate(events):
        if cut is not None and n == cut:
            break
        record = compact(event)
        if record is not None:
            batcher.add(record)
        if n % 25 == 24:  # a batch every 25 events, as a busy run gives
            batcher.flush()
    batcher.flush()
    status = "interrupted" if cut is not None else "failed" if outcome.error is not None else "completed"
    messages.append({"t": "end", "s": status})
    (STREAMS / f"{name}.jsonl").write_text("".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages))
    print(f"{name}: {len(events)} events, {len(messages)} messages, {batcher.bytes} bytes")


if __name__ == "__main__":
    STREAMS.mkdir(exist_ok=True)
    record("triage", (ROOT / "examples" / "triage.flow").read_text())
    record("map300", MAP)
    record("map300-interrupted", MAP, cut=400)

"""A call whose `model: "for:<purpose> else default"` used the session's model: its
`model.degraded` event becomes a `model_degraded` record on the wire (views/run_stream.py),
bounded whatever the event carries, and the live view's card says it in the words the summary
and the terminal use (`degraded_text`), drawn by the widget's own reducer and renderer in Node."""

from __future__ import annotations

import html
import json
import subprocess
from pathlib import Path
from typing import Any

from flow_kernel import Session
from flow_kernel.runtime.config import parse_config
from flow_kernel.runtime.events import degraded_text
from flow_kernel.sandbox.node import find_node
from flow_kernel.views.run_stream import Compactor
from tests.widgets.test_live_records import BUDGET, size

ROOT = Path(__file__).resolve().parents[2]
DEGRADING = 'agent judge { model: "for:deep-judgement else default" }\njudge("Is this sound?")\n'
DRAW = """
import { readFileSync } from "node:fs";
const src = process.argv[1];
const { applyMessage, emptyState } = await import(src + "/reducer.js");
const { emptyUi, renderRun } = await import(src + "/render.js");
const records = JSON.parse(readFileSync(0, "utf8"));
process.stdout.write(renderRun(applyMessage(emptyState(), { t: "batch", from: 0, ev: records }), emptyUi(), "", 0));
"""


def draw(records: list[dict[str, Any]]) -> str:
    done = subprocess.run([find_node().path, "--input-type=module", "-e", DRAW, (ROOT / "widgets" / "src").as_uri()],
                          input=json.dumps(records), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_real_runs_fallback_shows_on_its_card_in_the_summarys_words(tmp_path: Path) -> None:
    session = Session(directory=tmp_path, config=parse_config({"default_model": "mock"}), operator="none",
                      sandbox=False, journal_dir=None)
    outcome = session.run(DEGRADING)
    assert outcome.error is None, outcome.error
    (event,) = [e for e in outcome.events if e["type"] == "model.degraded"]
    compact = Compactor()
    records = [r for r in map(compact, outcome.events) if r is not None]
    (record,) = [r for r in records if r["e"] == "g"]
    assert record == {"e": "g", "i": event["span"]["id"], "t": record["t"], "pu": "deep-judgement", "md": "mock"}
    drawn = draw(records)
    line = html.escape(degraded_text(event["data"]), quote=True).replace("&#x27;", "&#39;")
    assert f'<div class="fr-degraded">↓ {line}</div>' in drawn, drawn
    assert drawn.count("fr-degraded") == 1


def test_the_record_is_bounded_and_its_fields_checked() -> None:
    compact = Compactor()
    event = {"type": "model.degraded", "span": {"id": "call-1", "parent": "w"}, "ts": "2026-01-01T00:00:01+00:00",
             "data": {"agent": "<b>" * 10_000, "label": "x" * 10_000, "purpose": "<b>" * 10_000, "model": "m" * 10_000}}
    assert size(compact(event)) <= BUDGET
    forged = compact.record({**event, "data": {"purpose": ["x"], "model": None}})
    assert forged == {"record": "model_degraded", "id": "call-1", "time": 0, "purpose": "['x']", "model": ""}

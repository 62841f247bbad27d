"""Records cassettes/14-evaluate.jsonl, the cassette lesson 14's evals replay.

    python notebooks/cassettes/record_14.py

It runs lesson 14's declarations (notebooks/lessons/n14_evaluate_your_workflow.py) and
both of its evals in one Flow session with `record()` on, through the real `openai` and
`anthropic` providers, against record.py's local stand-in server answering from the rules
below: the triager by keywords (v2's prompt also calls lock-outs — and, wrongly, a slow
checkout — high), the judge by comparing the severities. Deterministic and offline.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASSETTE = HERE / "14-evaluate.jsonl"
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from record import StandIn  # noqa: E402  (beside this file)

SEVERITY = [("down", "high"), ("charged twice", "high"), ("fails", "medium"), ("takes", "medium")]
LOCKED_OUT = [("Password", "high"), ("Checkout", "high")]  # v2: the first right, the second not


class TriageStandIn(StandIn):
    def answer(self, prompt: str, latest: str) -> str:
        if prompt.startswith("Input:"):  # the judge: the item's input, output and expected value
            parts = prompt.split("\n\n")
            output = json.loads(parts[1].removeprefix("Output:\n"))
            expected = json.loads(parts[2].removeprefix("Expected:\n"))
            same = output["severity"] == expected["severity"]
            return json.dumps({"score": 1.0 if same else 0.2,
                               "reason": "the severity matches" if same else
                               f"{output['severity']} where {expected['severity']} was expected"})
        title = prompt.split("\n", 1)[0].removeprefix("Ticket: ")
        rules = (LOCKED_OUT if "locks customers out" in prompt else []) + SEVERITY
        severity = next((level for words, level in rules if words in title), "low")
        return json.dumps({"severity": severity, "summary": f"The customer reports: {title.lower()}."})


def main() -> None:
    from lessons.n14_evaluate_your_workflow import DECLARE, SCORERS

    from flow_kernel import Session

    stand_in = TriageStandIn()
    threading.Thread(target=stand_in.server.serve_forever, daemon=True).start()
    os.environ.update({"OPENAI_BASE_URL": f"http://127.0.0.1:{stand_in.port}/v1", "OPENAI_API_KEY": "stand-in",
                       "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{stand_in.port}", "ANTHROPIC_API_KEY": "stand-in"})
    CASSETTE.unlink(missing_ok=True)
    session = Session(directory=HERE.parent, operator="none", journal_dir=None, record=CASSETTE)
    scorers = [s for s in SCORERS.split() if s != "--scorer"]
    try:
        outcome = session.run(DECLARE.source)
        if outcome.error is not None:
            raise SystemExit(f"recording failed: {outcome.error.code}: {outcome.error.message}")
        for workflow in ("triage", "triage_v2"):
            report = session.eval(workflow, "eval/tickets.jsonl", scorers=scorers)
            print(workflow, json.dumps(report.summary.to_json()["scorers"]))
    finally:
        stand_in.server.shutdown()
    print(f"wrote {CASSETTE.relative_to(HERE.parent.parent)}")


if __name__ == "__main__":
    main()

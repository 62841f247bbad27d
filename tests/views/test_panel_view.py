"""The run view shows a panel as a table per round: experts × criteria, with the means,
the aggregate and the spread; forged panel events from a bypassed sandbox are shown as
text or dropped, never trusted as markup or types."""

from __future__ import annotations

import asyncio
from typing import Any

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.run import run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor
from flow_kernel.views.panel_view import MUTED, SCORE, STRONG, panel_call_words
from flow_kernel.views.run_html import render_html
from flow_kernel.views.run_model import RunModel
from flow_kernel.views.run_stream import Compactor

PROGRAM = '''rubric essay {
  criteria: [
    { id: "accuracy", description: "Facts are right", weight: 3 },
    { id: "clarity", description: "Easy to read" },
  ]
}
agent a { model: "scripted", script: [{ scores: { accuracy: 4, clarity: 5 }, rationale: "good" },
                                      { scores: { accuracy: 4, clarity: 4 }, rationale: "fine" }] }
agent b { model: "scripted", script: [{ scores: { accuracy: 2, clarity: 3 }, rationale: "weak" },
                                      { scores: { accuracy: 4, clarity: 4 }, rationale: "better" }] }
panel review {
  experts: [{ agent: a, domain: "history" }, { agent: b, domain: "prose" }]
  rubric: essay
  rounds: 2
  converge: { spread: 1 }
}
stage "judge" { let verdict = review("An essay") }
'''


def _events() -> list[dict[str, Any]]:
    compiled = compile_source(SourceFile("panel.flow", PROGRAM))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    outcome = asyncio.run(run_compiled(compiled, InProcessExecutor()))
    assert outcome.error is None, outcome.error
    return outcome.events


def test_the_panel_is_a_table_per_round() -> None:
    model = RunModel.from_events(_events())
    table = model.panels[next(iter(model.panels))]
    assert table.experts == [("a", "history"), ("b", "prose")] and table.criteria == ["accuracy", "clarity"]
    assert [r.number for r in table.rounds] == [1, 2] and table.status == "converged"
    assert table.rounds[0].scores == {"a": {"accuracy": 4, "clarity": 5}, "b": {"accuracy": 2, "clarity": 3}}
    text = model.text(result=False)
    assert "panel review: converged" in text
    # round 1: accuracy mean 3 → 0.5, clarity 4 → 0.75; (3 × 0.5 + 0.75) / 4 = 0.5625
    assert "round 1 · aggregate 0.5625 · spread 2" in text and "a: accuracy 4, clarity 5" in text
    html = render_html(model)
    assert "round 1 · aggregate 0.5625 · spread 2" in html and "round 2 · aggregate 0.75 · spread 0 · converged" in html
    column = f'<span style="{SCORE};{STRONG}">accuracy</span>'  # the criterion's column heading, once a round
    assert html.count(column) == 2 and html.count(f'{STRONG}">mean</span>') == 2 and "weak" in html
    assert html.count(f'{MUTED};{STRONG}">rationale</span>') == 2  # the rationales' column heading


def test_a_panels_calls_are_labelled_in_words() -> None:
    model = RunModel.from_events(_events())
    text = model.text(result=False)
    # `review@17:31/r1/a` as the person reads it; the raw label is the card's title.
    assert "✓ agent a · round 1 · panel review  1 attempt" in text and "✓ agent b · round 2 · panel review" in text
    assert "/r1/" not in text
    html = render_html(model)
    assert "· round 1 · panel review" in html and "label <code>review@17:31/r1/a</code>" in html
    stream = [record for record in map(Compactor().record, _events()) if record and record["record"] == "call_started"]
    assert [r["label"] for r in stream][:2] == ["round 1 · panel review", "round 1 · panel review"]


def test_a_panel_call_in_words() -> None:
    assert panel_call_words("review@2:11/r1/historian", 2) == "round 1 · item 2 · panel review"
    assert panel_call_words("hastings/synthesis") == "synthesis · panel hastings"
    assert panel_call_words("writer@1:1") is None and panel_call_words("a/b/c") is None
    assert panel_call_words(None) is None


def test_forged_panel_events_do_not_break_the_view() -> None:
    forged = [
        {"type": "workflow.started", "run": "r", "seq": 1, "span": {"id": "s1", "parent": None},
         "data": {"name": "<cell>", "frame": "s1", "parent": None, "limits": {}}, "order": [[1]]},
        {"type": "panel.started", "run": "r", "seq": 2, "span": {"id": "s1", "parent": None}, "order": [[2]],
         "data": {"panel": "<img src=x onerror=alert(1)>", "label": "p", "experts": [{"agent": "<b>x</b>"}, 3],
                  "criteria": "nope"}},
        {"type": "panel.verdict", "run": "r", "seq": 3, "span": {"id": "s1", "parent": None}, "order": [[3]],
         "data": {"label": "p", "round": "one", "expert": ["x"], "scores": "all"}},
        {"type": "panel.verdict", "run": "r", "seq": 4, "span": {"id": "s1", "parent": None}, "order": [[4]],
         "data": {"label": "p", "round": 1, "expert": "<b>x</b>", "scores": {"c": "<script>"}}},
        {"type": "panel.round", "run": "r", "seq": 5, "span": {"id": "s1", "parent": None}, "order": [[5]],
         "data": {"label": "nobody", "round": 1}},
    ]
    model = RunModel.from_events(forged)
    html = render_html(model)
    assert "<img" not in html and "<b>" not in html and "<script>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert model.text(result=False)


def test_the_live_stream_shows_each_round_as_a_line() -> None:
    """The live widget draws no grid: its records carry a line per round and one at the end."""
    from flow_kernel.views.run_stream import Compactor

    compact = Compactor()
    lines = [r["m"] for r in (compact(e) for e in _events()) if r is not None and r.get("e") == "l"]
    assert lines == ["panel review · round 1 · aggregate 0.5625 · spread 2 · running",
                     "panel review · round 2 · aggregate 0.75 · spread 0 · converged",
                     "panel review: converged after 2 round(s) · aggregate 0.75"]

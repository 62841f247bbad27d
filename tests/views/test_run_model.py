"""The run view's model from recorded event streams: built from a journal it shows what the
live one showed; its text is deterministic; its HTML carries every part of the view."""

from __future__ import annotations

import asyncio
import html.parser
from pathlib import Path
from typing import Any

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable.journal import read_journal
from flow_kernel.runtime.policy.operator import Operator
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor
from flow_kernel.views.run_html import render_html
from flow_kernel.views.run_model import RunModel

ROOT = Path(__file__).resolve().parents[2]

RICH = '''type N = { n: int }
agent fixer { model: "scripted", output: N, repair: 1, script: [{ n: "bad" }, { n: 2 }] }
agent flaky { model: "scripted", script: [fail("agent-invocation", "down")] }
workflow go() -> any {
  pipeline "demo" {
    stage "fix" {
      let fixed = fixer("fix it")
      emit progress { done: 1, total: 2, message: "half" }
      log "fixed ${fixed.n}"
      verify fixed.n == 2 : "two"
      publish "notes/summary.md" "# Done"
    }
    stage "ask" {
      let ok = approve "Ship it?"
    }
  }
  return flaky("will fail")
}
go()
'''


def run(source: str, tmp_path: Path, sinks: list[Any] | None = None) -> RunOutcome:
    compiled = compile_source(SourceFile("v.flow", source))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    return asyncio.run(run_compiled(compiled, InProcessExecutor(),
                                    RunContext(operator=Operator("auto-approve"), journal_dir=tmp_path, sinks=sinks or [])))


def test_a_view_built_from_the_journal_shows_what_the_live_one_showed(tmp_path: Path) -> None:
    live = RunModel(title="triage")
    outcome = run((ROOT / "examples" / "triage.flow").read_text(), tmp_path, [live.apply])
    live.finish(outcome.result, None, outcome.steps)
    assert outcome.journal is not None
    replayed = RunModel.from_events(read_journal(outcome.journal), title="triage")
    replayed.finish(outcome.result, None, outcome.steps)
    assert replayed.text() == live.text()
    assert render_html(replayed, live=False) == render_html(live, live=False)
    text = live.text().splitlines()
    assert text[0] == "Flow run: completed — triage"
    assert '      ✓ stage "classify"' in text and "        progress 2/2" in text
    assert '    approve "Escalate 1 tickets?" → yes (auto-approve)' in text
    assert text[-2] == "agent runs 2/100, steps " + str(outcome.steps) + "/1000"  # the cell's budgets


def test_the_text_is_the_same_on_every_run(tmp_path: Path) -> None:
    texts = set()
    for _ in range(3):
        outcome = run(RICH, tmp_path)
        model = RunModel.from_events(outcome.events)
        model.finish(None, {"code": outcome.error.code, "message": outcome.error.message, "span": outcome.error.span}
                     if outcome.error else None, outcome.steps)
        texts.add(model.text())
        texts.add(render_html(model, live=False))
    assert len(texts) == 2


def test_every_part_of_the_view(tmp_path: Path) -> None:
    outcome = run(RICH, tmp_path)
    assert outcome.error is not None and outcome.error.code == "agent-invocation"
    model = RunModel.from_events(outcome.events, title="rich")
    assert outcome.error.span is not None
    model.finish(None, {"code": outcome.error.code, "message": outcome.error.message, "span": outcome.error.span},
                 outcome.steps)
    text = model.text()
    assert '✓ agent fixer "fix it"  2 attempts (1 repair)' in text  # labelled by the start of its prompt
    assert '✗ agent flaky "will fail"  1 attempt: agent-invocation down' in text
    assert "progress 1/2 half" in text and "log: fixed 2" in text and "✓ verify two" in text
    assert "published notes/summary.md" in text and 'approve "Ship it?" → yes (auto-approve)' in text
    assert text.count("down") == 1 and "error[" not in text  # said once, on the call's card
    assert model.status == "failed" and model.agent_runs == 3
    page = render_html(model)
    for part in ("background:#cf222e\">failed</span>", "agent runs 3", "progress 1/2", "invalid output",
                 "fix it", "<details", "Ship it?", "approved", "by auto-approve", "notes/summary.md",
                 "agent-invocation: down"):
        assert part in page, part
    # Said once on the card (its folded attempts list each attempt's own error), nowhere else.
    assert page.count("agent-invocation: down") == 1 and "error[" not in page and "return flaky" not in page
    _balanced(page)


def test_pending_approvals_and_a_live_render(tmp_path: Path) -> None:
    model = RunModel()
    model.apply({"type": "workflow.started", "run": "r1", "span": {"id": "s1", "parent": None},
                 "data": {"name": "<cell>", "limits": {"agent_runs": 5}}, "ts": "2026-12-02T10:00:00.000+00:00"})
    model.apply({"type": "approval.requested", "span": {"id": "s1", "parent": None},
                 "data": {"kind": "approve", "question": "Go?", "details": {"n": 1}}})
    assert [a.question for a in model.pending_approvals()] == ["Go?"]
    assert 'approve "Go?" … waiting' in model.text()
    assert "waiting for an answer" in render_html(model)
    model.apply({"type": "approval.resolved", "span": {"id": "s1", "parent": None},
                 "data": {"kind": "approve", "question": "Go?", "answer": False, "by": "interactive"}})
    assert model.pending_approvals() == [] and 'approve "Go?" → no (interactive)' in model.text()


FAN_OUT_FAILS = """type N = { n: int }
agent w { model: "scripted", output: N, script: [when("0", slow(200ms, fail("agent-invocation", "down"))),
                                                slow(60s, { n: 1 })] }
workflow go() -> any {
  stage "fan" { let out = parallelMap([0, 1, 2], (i) => w("item ${i}")) }
  return out
}
go()
"""


def test_a_failed_runs_summary_shows_the_calls_it_cut_off_as_cancelled(tmp_path: Path) -> None:
    """Item 0 fails while items 1 and 2 wait on their replies: the run stops them, and its
    summary (live, and rebuilt from the journal) says so, with nothing left running."""
    live = RunModel(title="fan")
    outcome = run(FAN_OUT_FAILS, tmp_path, [live.apply])
    assert outcome.error is not None and outcome.journal is not None
    replayed = RunModel.from_events(read_journal(outcome.journal), title="fan")
    for model in (live, replayed):
        model.finish(outcome.result, outcome.error_json(), outcome.steps)
        lines = model.text().splitlines()
        assert lines[4:8] == ['      ✗ parallelMap w: 3 calls: 0 done, 1 failed, 2 cancelled',
                              '        ✗ agent w #1 "item 0"  1 attempt: agent-invocation down',
                              '        ⊘ agent w #2 "item 1"',
                              '        ⊘ agent w #3 "item 2"'], lines
        assert [n.state for n in model.nodes.values() if n.state == "running"] == []
        page = render_html(model, live=False)
        assert "2 cancelled" in page and "running" not in page

def test_garbage_events_do_not_break_the_model() -> None:
    model = RunModel()
    for event in ({}, {"type": "agent.completed"}, {"type": "log", "span": None}, {"type": "x", "data": []}):
        model.apply(event)  # type: ignore[arg-type]
    assert isinstance(model.text(), str) and isinstance(render_html(model), str)


def _balanced(page: str) -> None:
    void = {"br", "hr", "img", "input", "meta", "link"}

    class Check(html.parser.HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.stack: list[str] = []

        def handle_starttag(self, tag: str, attrs: Any) -> None:
            if tag not in void:
                self.stack.append(tag)

        def handle_endtag(self, tag: str) -> None:
            assert self.stack and self.stack[-1] == tag, (tag, self.stack[-3:])
            self.stack.pop()

    checker = Check()
    checker.feed(page)
    assert checker.stack == []

"""An eval's items share sandbox processes while they wait for their model (sandbox/pool.py
"group", docs/eval.md): real sandboxes, a scripted agent that takes its time. Fewer
processes than items in flight, the same results and the same events per run as one item at
a time; an item whose process a co-tenant crashed runs again alone and succeeds, while the
culprit fails with its own error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.session import Session
from flow_kernel.sandbox import stack
from flow_kernel.sandbox.pool import SandboxPool

PROGRAM = """agent chooser { model: "scripted", output: { v: int }, script: [slow(800ms, { v: 7 })] }
workflow item(n: int) -> { n: int, total: int, words: string[] } {
  print("item ${n}")
  let r = chooser("n is ${n}")
  let words = map(range(n % 4), i => "w${i * n}")
  return { n: n, total: r.v + n, words: words }
}
"""
# Item 3 frees a value 20,000 levels deep once its model answered: past V8's default stack
# (the one the test gives every sandbox), the process dies (tests/sandbox/test_deep_values.py).
# The other items wait longer for theirs: they are in its process when it dies.
CRASHING = """agent quick { model: "scripted", output: { v: int }, script: [slow(300ms, { v: 7 })] }
agent patient { model: "scripted", output: { v: int }, script: [slow(2s, { v: 7 })] }
fn build(k: number) -> number {
  var x: any = []
  var i = 0
  while i < k {
    x = [x]
    i = i + 1
  }
  return i
}
workflow item(n: int) -> number {
  limits { steps: 1000000 }
  var k = 3
  var v = 0
  if n == 3 {
    k = 20000
    let r = quick("n is ${n}")
    v = r.v
  } else {
    let r = patient("n is ${n}")
    v = r.v
  }
  let depth = build(k)
  return v + n + depth
}
"""
N = 12


def cases(folder: Path, n: int = N) -> str:
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"n{i}", "input": {"n": i}}) + "\n"
                                                for i in range(n)), encoding="utf-8")
    return "cases.jsonl"


def started_sandboxes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The processes each pool started, read as it closes."""
    counts: list[int] = []
    close = SandboxPool.close

    async def counting_close(self: SandboxPool) -> None:
        counts.append(self.started)
        await close(self)

    monkeypatch.setattr(SandboxPool, "close", counting_close)
    return counts


def comparable(event: dict[str, Any]) -> dict[str, Any]:
    """An event without what differs between two runs of the same item: its run id, its time."""
    data = {k: v for k, v in (event.get("data") or {}).items() if k != "latency_ms"}
    return {**{k: v for k, v in event.items() if k not in ("run", "ts")}, "data": data}


def test_items_waiting_on_their_model_share_processes_and_match_one_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started = started_sandboxes(monkeypatch)
    data = cases(tmp_path)
    reports, events = {}, {}
    for concurrency in (1, 8):
        seen: list[dict[str, Any]] = []
        session = Session(directory=tmp_path, journal_dir=None, context=RunContext(sinks=[seen.append]))
        reports[concurrency] = session.eval("item", data, program=PROGRAM, concurrency=concurrency)
        by_run: dict[str, list[dict[str, Any]]] = {}
        for event in seen:
            by_run.setdefault(event["run"], []).append(comparable(event))
        events[concurrency] = {r.id: by_run[r.run] for r in reports[concurrency].results}
    # 8 items in flight, each waiting 800 ms on its model: they join the first process as soon
    # as its runs all wait (one process each before, as the pool grew to 3-4 in this time).
    assert started[1] <= 2, started

    def outcome(report: Any) -> list[tuple[Any, ...]]:
        return [(r.id, r.output, r.error) for r in report.results]

    assert outcome(reports[8]) == outcome(reports[1])
    assert reports[8].summary.completed == N and not reports[8].summary.failures
    assert events[8] == events[1]  # each run's events, in their order, as when it ran alone
    assert [e["type"] for e in events[8]["n5"]] == ["workflow.started", "print", "agent.started",
                                                    "agent.completed", "workflow.completed"]


def test_a_co_tenant_of_a_crash_runs_again_alone_and_the_culprit_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stack, "plan", lambda: stack.StackPlan(None, None))  # V8's own ~1 MiB stack
    journals = tmp_path / "journals"
    session = Session(directory=tmp_path, journal_dir=journals)
    report = session.eval("item", cases(tmp_path, 8), program=CRASHING, concurrency=8)
    by_id = {r.id: r for r in report.results}
    culprit = by_id.pop("n3")
    assert culprit.error is not None and culprit.error["code"] == "worker-crashed", culprit.error
    assert "ran out of stack" in culprit.error["message"]
    assert {i: (r.output, r.error) for i, r in by_id.items()} == {
        f"n{n}": (7 + n + 3, None) for n in range(8) if n != 3}
    ends: dict[str, list[str]] = {}
    for path in journals.glob("*.jsonl"):
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        header = next(line for line in lines if line.get("journal") == "header")
        end = next(line for line in lines if line.get("journal") == "end")
        n = header["input"]["n"] if "input" in header else None
        ends.setdefault(f"n{n}", []).append(end.get("error") or end["status"])
    # The culprit crashed beside others, so it ran again alone — and crashed again, its own error.
    assert ends["n3"] == ["worker-crashed", "worker-crashed"], ends
    again = [i for i, e in ends.items() if i != "n3" and len(e) == 2]
    assert again, ends  # at least one innocent co-tenant was taken down with it, and ran again
    for i in again:  # each first run's journal stays, beside the run that completed
        assert sorted(ends[i]) == ["completed", "worker-crashed"], (i, ends[i])
    assert all(ends[f"n{n}"] == ["completed"] for n in range(8) if f"n{n}" not in again and n != 3)

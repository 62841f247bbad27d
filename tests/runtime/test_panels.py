"""Panels run for real, in the Pyodide sandbox, with scripted experts: convergence in the
first round and after a second, no convergence, a verdict with an unknown or a missing
criterion repaired, the budget running out in the middle of a round, an expert failing —
each with its status, its rounds and an aggregate checked against a value computed by hand."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.executors import SandboxExecutor
from flow_kernel.runtime.run import RunOutcome, run_compiled

RUBRIC = '''rubric essay {
  criteria: [
    { id: "accuracy", description: "Facts are right", weight: 3, scale: 5 },
    { id: "clarity", description: "Easy to read", weight: 1, scale: 5 },
  ]
}
agent chair { model: "scripted", script: ["Accurate, mostly clear."] }
'''


def verdict(accuracy: int, clarity: int | None = None, **more: int) -> dict[str, Any]:
    scores: dict[str, int] = {"accuracy": accuracy, **more}
    if clarity is not None:
        scores["clarity"] = clarity
    return {"scores": scores, "rationale": f"accuracy {accuracy}"}


def program(scripts: dict[str, list[dict[str, Any]]], *, rounds: int = 2, spread: int = 1, limits: str = "",
            judge: bool = True) -> str:
    agents = "".join(f'agent {name} {{ model: "scripted", script: {json.dumps(script)} }}\n'
                     for name, script in scripts.items())
    experts = ", ".join(f'{{ agent: {name}, domain: "{name} matters" }}' for name in scripts)
    return (f"{limits}\n{RUBRIC}{agents}"
            f"panel review {{\n  experts: [{experts}]\n  rubric: essay\n"
            + ("  judge: chair\n" if judge else "")
            + f"  rounds: {rounds}\n  converge: {{ spread: {spread} }}\n}}\n"
            'review("The essay about the Battle of Hastings")\n')


@pytest.fixture(scope="module")
def sandbox() -> Iterator[tuple[SandboxExecutor, asyncio.AbstractEventLoop]]:
    loop = asyncio.new_event_loop()
    executor = SandboxExecutor()
    yield executor, loop
    loop.run_until_complete(executor.close())
    loop.close()


def run(sandbox: tuple[SandboxExecutor, asyncio.AbstractEventLoop], source: str) -> RunOutcome:
    compiled = compile_source(SourceFile("panel.flow", source))
    assert compiled.ok, [f"{d.code} {d.message}" for d in compiled.check.errors]
    executor, loop = sandbox
    outcome = loop.run_until_complete(run_compiled(compiled, executor))
    assert outcome.error is None, f"{outcome.error.code}: {outcome.error.message}"
    return outcome


def panel_events(outcome: RunOutcome, kind: str) -> list[dict[str, Any]]:
    return [e["data"] for e in outcome.events if e["type"] == f"panel.{kind}"]


def test_converges_in_the_first_round(sandbox: tuple[SandboxExecutor, asyncio.AbstractEventLoop]) -> None:
    outcome = run(sandbox, program({"a": [verdict(4, 4)], "b": [verdict(4, 5)], "c": [verdict(5, 4)]}))
    record = outcome.result
    assert record["status"] == "converged" and len(record["rounds"]) == 1 and record["rounds"][0]["complete"]
    # means 13/3 on both; each (13/3 - 1) / 4 = 0.8333 on 0..1; weighted 3:1 → 0.8333
    assert record["scores"] == {"accuracy": 4.3333, "clarity": 4.3333}
    assert record["aggregate"] == 0.8333 and record["spread"] == 1
    assert record["synthesis"] == "Accurate, mostly clear." and record["error"] is None
    assert [v["expert"] for v in record["rounds"][0]["verdicts"]] == ["a", "b", "c"]
    assert [e["status"] for e in panel_events(outcome, "round")] == ["converged"]
    assert panel_events(outcome, "completed")[0]["status"] == "converged"
    assert len(panel_events(outcome, "verdict")) == 3


def test_converges_after_a_second_round_and_the_aggregate_is_the_hand_computed_one(
        sandbox: tuple[SandboxExecutor, asyncio.AbstractEventLoop]) -> None:
    outcome = run(sandbox, program({"a": [verdict(4, 5), verdict(4, 4)],
                                    "b": [verdict(5, 3), verdict(4, 4)],
                                    "c": [verdict(3, 2), verdict(4, 3)]}))
    record = outcome.result
    assert record["status"] == "converged" and [r["round"] for r in record["rounds"]] == [1, 2]
    first, second = record["rounds"]
    # round 1: accuracy mean 4 → 0.75; clarity mean 10/3 → (10/3 - 1) / 4 = 0.58333;
    # (3 × 0.75 + 1 × 0.58333) / 4 = 0.70833; spread max(5-3, 5-2) = 3 > 1: another round
    assert first["aggregate"] == 0.7083 and first["spread"] == 3
    # round 2: accuracy 4 → 0.75; clarity 11/3 → 0.66667; (2.25 + 0.66667) / 4 = 0.72917
    assert second["aggregate"] == 0.7292 and second["spread"] == 1
    assert record["aggregate"] == second["aggregate"] and record["scores"] == {"accuracy": 4, "clarity": 3.6667}
    assert [e["status"] for e in panel_events(outcome, "round")] == ["running", "converged"]
    # round 2's experts saw round 1's verdicts
    started = [e for e in outcome.events if e["type"] == "agent.started" and "/r2/" in str(e["data"]["label"])]
    assert len(started) == 3 and all("Round 2 of 2" in e["data"]["prompt"] for e in started)


def test_no_convergence_keeps_status_and_aggregate_right(sandbox: tuple[SandboxExecutor, asyncio.AbstractEventLoop]) -> None:
    outcome = run(sandbox, program({"a": [verdict(1, 1)], "b": [verdict(5, 5)], "c": [verdict(3, 3)]}, rounds=2))
    record = outcome.result
    assert record["status"] == "not-converged" and len(record["rounds"]) == 2
    assert all(r["complete"] and r["spread"] == 4 for r in record["rounds"])
    # every mean is 3 → 0.5 on both criteria → 0.5
    assert record["aggregate"] == 0.5 and record["synthesis"] == "Accurate, mostly clear."
    completed = panel_events(outcome, "completed")[0]
    assert completed.pop("label").startswith("review@")  # where the call is written, as agent labels
    assert completed == {"panel": "review", "status": "not-converged", "rounds": 2, "aggregate": 0.5, "spread": 4}


def test_a_verdict_with_an_unknown_or_a_missing_criterion_is_repaired(
        sandbox: tuple[SandboxExecutor, asyncio.AbstractEventLoop]) -> None:
    outcome = run(sandbox, program({"a": [verdict(4, 4, style=5), verdict(4, 4)],
                                    "b": [verdict(4), verdict(4, 5)],
                                    "c": [verdict(4, 4)]}, rounds=1))
    record = outcome.result
    assert record["status"] == "converged"
    assert [v["scores"] for v in record["rounds"][0]["verdicts"]] == [
        {"accuracy": 4, "clarity": 4}, {"accuracy": 4, "clarity": 5}, {"accuracy": 4, "clarity": 4}]
    completed = {e["data"]["agent"]: e["data"] for e in outcome.events if e["type"] == "agent.completed"}
    for expert, why in (("a", "style"), ("b", "clarity")):
        kinds = [a["kind"] for a in completed[expert]["attempts"]]
        assert kinds == ["attempt", "repair"], (expert, kinds)
        assert why in " ".join(completed[expert]["attempts"][0]["errors"])
    assert [a["kind"] for a in completed["c"]["attempts"]] == ["attempt"]


def test_the_budget_running_out_mid_round_gives_what_was_gathered(
        sandbox: tuple[SandboxExecutor, asyncio.AbstractEventLoop]) -> None:
    outcome = run(sandbox, program({"a": [verdict(1, 1), verdict(2, 2)], "b": [verdict(5, 5)], "c": [verdict(3, 3)]},
                                   rounds=3, limits="limits { agent_runs: 4 }"))
    record = outcome.result
    assert record["status"] == "budget-exhausted" and record["synthesis"] is None and record["error"] is None
    first, second = record["rounds"]
    assert first["complete"] and not second["complete"]
    assert [v["expert"] for v in second["verdicts"]] == ["a"] and second["aggregate"] is None
    assert record["aggregate"] == first["aggregate"] == 0.5  # the last complete round's
    assert panel_events(outcome, "completed")[0]["status"] == "budget-exhausted"
    assert [e["round"] for e in panel_events(outcome, "verdict")] == [1, 1, 1, 2]


def test_an_expert_that_fails_for_good_gives_status_failed(
        sandbox: tuple[SandboxExecutor, asyncio.AbstractEventLoop]) -> None:
    source = program({"a": [verdict(4, 4)], "b": [verdict(4, 4)]}, rounds=1).replace(
        'agent b { model: "scripted", script: [{"scores": {"accuracy": 4, "clarity": 4}, "rationale": "accuracy 4"}] }',
        'agent b { model: "scripted", script: [fail("agent-invocation", "the expert is unavailable")] }')
    record = run(sandbox, source).result
    assert record["status"] == "failed" and record["error"] == {"code": "agent-invocation",
                                                                 "message": "the expert is unavailable"}
    assert len(record["rounds"][0]["verdicts"]) == 1 and record["aggregate"] is None


def test_a_panel_declared_in_one_cell_is_called_from_another_and_hovered(tmp_path: Path) -> None:
    """A notebook: the rubric, agents and panel in one cell, the call in a later one (its
    experts' contract comes from the earlier cell's declaration); hover describes both."""
    from flow_kernel.kernel.assist import inspect
    from flow_kernel.runtime.session import Session

    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "accuracy.md").write_text("Facts are right.", encoding="utf-8")
    session = Session(directory=tmp_path, sandbox=False, journal_dir=None)
    declarations = program({"a": [verdict(4, 4)], "b": [verdict(4, 5)]}, rounds=1).rsplit("review(", 1)[0]
    declarations = declarations.replace('description: "Facts are right"', 'description: file("prompts/accuracy.md")')
    assert session.run(declarations).ok
    outcome = session.run('let v = review("An essay")\nv.aggregate')
    assert outcome.ok, outcome.error
    # accuracy 4 → 0.75, clarity 4.5 → 0.875; (3 × 0.75 + 0.875) / 4 = 0.78125, to four decimals
    # half away from zero, as Flow's `round(x, 4)`
    assert outcome.result == 0.7813
    panel_doc = inspect("review", 3, session.scope)["data"]["text/plain"]
    assert "expert: a (a matters)" in panel_doc and "rubric: essay" in panel_doc and "judge: chair" in panel_doc
    rubric_doc = inspect("essay", 3, session.scope)["data"]["text/plain"]
    assert "accuracy: weight 3, scale 1..5" in rubric_doc


def test_several_candidates_in_parallel(sandbox: tuple[SandboxExecutor, asyncio.AbstractEventLoop]) -> None:
    """One call a candidate, side by side in `parallelMap`: each its own record and events."""
    scripts = {"a": [verdict(5, 5)], "b": [verdict(1, 1)]}
    source = program(scripts, rounds=1, spread=4, judge=False).rsplit("review(", 1)[0] + (
        'parallelMap(["first essay", "second essay"], text => review(text))[*].aggregate\n')
    outcome = run(sandbox, source)
    assert outcome.result == [0.5, 0.5]  # (5 and 1: mean 3 → 0.5) on both criteria, for each candidate
    completed = panel_events(outcome, "completed")
    assert len(completed) == 2 and {e["status"] for e in completed} == {"converged"}
    assert len(panel_events(outcome, "verdict")) == 4


def test_a_panel_records_and_replays(tmp_path: Path) -> None:
    """Each expert call is an ordinary labelled agent call: a cassette answers a panel again,
    round by round, and the record is the same."""
    from flow_kernel.runtime.session import Session

    source = program({"a": [verdict(4, 5), verdict(4, 4)], "b": [verdict(2, 3), verdict(4, 4)]})
    tape = tmp_path / "panel.jsonl"
    recorded = Session(directory=tmp_path, sandbox=False, journal_dir=None, record=tape).run(source)
    assert recorded.ok and len(tape.read_text(encoding="utf-8").splitlines()) == 5  # 2 experts x 2 rounds + judge
    replayed = Session(directory=tmp_path, sandbox=False, journal_dir=None, replay=tape).run(source)
    assert replayed.ok and replayed.result == recorded.result and replayed.result["status"] == "converged"

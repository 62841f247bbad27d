"""The host's agent path: concurrency actually bounded, budgets count repairs and retries."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.providers.local import ScriptedProvider
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor


def run(source: str) -> RunOutcome:
    compiled = compile_source(SourceFile("a.flow", source))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    return asyncio.run(run_compiled(compiled, InProcessExecutor()))


@pytest.fixture()
def peak(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    seen = {"now": 0, "peak": 0, "calls": 0}
    original = ScriptedProvider.attempt  # the provider attempts in flight at once

    async def counting(self: Any, *args: Any) -> Any:
        seen["now"] += 1
        seen["calls"] += 1
        seen["peak"] = max(seen["peak"], seen["now"])
        try:
            return await original(self, *args)
        finally:
            seen["now"] -= 1

    monkeypatch.setattr(ScriptedProvider, "attempt", counting)
    return seen


SLOW = 'agent a { model: "scripted", script: [slow(30ms, "x")] }\n'


def test_parallel_map_is_bounded_by_the_workflow_concurrency(peak: dict[str, int]) -> None:
    outcome = run(SLOW + "workflow w() -> string[] {\n  limits { concurrency: 3 }\n"
                  "  return parallelMap(range(12), i => a(\"n ${i}\"), concurrency: 10)\n}\nw()")
    assert outcome.error is None and outcome.result == ["x"] * 12
    assert peak["peak"] == 3 and peak["calls"] == 12


def test_parallel_branches_wait_at_the_host_gate(peak: dict[str, int]) -> None:
    outcome = run(SLOW + "workflow w() -> any {\n  limits { concurrency: 2 }\n"
                  '  return parallel { a1: a("1"), a2: a("2"), a3: a("3"), a4: a("4"), a5: a("5") }\n}\nw()')
    assert outcome.error is None and sorted(outcome.result) == ["a1", "a2", "a3", "a4", "a5"]
    assert peak["peak"] == 2


def test_repairs_and_retries_are_charged_to_agent_runs() -> None:
    source = '''type N = { n: int }
agent a {
  model: "scripted"
  output: N
  repair: 1
  retry: { on: ["output-validation"], attempts: 2 }
  script: [{ n: "bad" }, { n: "bad" }, { n: "bad" }, { n: 1 }]
}
workflow w() -> N {
  limits { agent_runs: LIMIT }
  return a("go")
}
w()'''
    assert run(source.replace("LIMIT", "4")).result == {"n": 1}  # attempt, repair, retry, its repair
    outcome = run(source.replace("LIMIT", "3"))
    assert outcome.error is not None and outcome.error.code == "limit-exceeded"
    attempts = [e for e in outcome.events if e["type"] == "agent.failed"]
    assert attempts and attempts[0]["data"]["code"] == "limit-exceeded"


def test_a_late_result_never_takes_effect() -> None:
    source = '''agent a { model: "scripted", timeout: 50ms, script: [slow(300ms, "late"), "on time"] }
agent b { model: "scripted", script: [fail("agent-invocation", "boom")] }
var got = "none"
try { got = a("first") } catch "agent-invocation" as e { got = e.message }
got'''
    outcome = run(source)
    assert outcome.result == "`a` timed out after 50 ms"
    assert not any(e["data"].get("output") == "late" for e in outcome.events)


RETRY_ONLY_INVOCATION = '''type N = { n: int }
agent a {
  model: "scripted"
  repair: 0
  output: N
  retry: { on: ["%s"], attempts: 3 }
  script: [{ n: "bad" }, { n: 1 }]
}
a("x")'''


def test_retry_happens_only_on_the_listed_codes() -> None:
    not_listed = run(RETRY_ONLY_INVOCATION % "agent-invocation")
    assert not_listed.error is not None and not_listed.error.code == "output-validation"
    failed = next(e for e in not_listed.events if e["type"] == "agent.failed")
    assert [(a["kind"], a.get("invalid")) for a in failed["data"]["attempts"]] == [("attempt", True)]  # no retry
    listed = run(RETRY_ONLY_INVOCATION % "output-validation")
    assert listed.error is None and listed.result == {"n": 1}
    done = next(e for e in listed.events if e["type"] == "agent.completed")
    assert [(a["kind"], a["attempt"], bool(a.get("invalid"))) for a in done["data"]["attempts"]] == [
        ("attempt", 1, True), ("attempt", 2, False)]


def test_team_resolution_at_runtime() -> None:
    source = '''agent a { model: "scripted", script: ["from a"] }
agent b { model: "scripted", script: ["from b"] }
agent c { model: "scripted", script: ["from c"] }
team t { main: a, members: [b] }
let who = %s
t.member(who, "hi")'''
    assert run(source % '"b"').result == "from b"
    assert run(source % '"a"').result == "from a"  # the main agent is a member too
    outsider = run(source % '"c"')
    assert outsider.error is not None and outsider.error.code == "capability-violation"
    assert "`c` is not a member of team `t`" in outsider.error.message
    failed = next(e for e in outsider.events if e["type"] == "agent.failed")
    assert failed["data"]["code"] == "capability-violation"


def test_an_interactive_operator_is_a_callback() -> None:
    from flow_kernel.runtime.policy.operator import Operator

    asked: list[dict[str, Any]] = []

    async def frontend(request: dict[str, Any]) -> Any:
        asked.append(request)
        return True if request["kind"] == "approve" else request["choice"][1]

    compiled = compile_source(SourceFile("a.flow", 'let ok = approve "Ship?"\nlet chosen = ask "Which?" choice ["x", "y"]\n[ok, chosen]'))
    outcome = asyncio.run(run_compiled(compiled, InProcessExecutor(),
                                       RunContext(operator=Operator("interactive", callback=frontend))))
    assert outcome.result == [True, "y"]
    assert [(r["kind"], r["question"]) for r in asked] == [("approve", "Ship?"), ("ask", "Which?")]
    resolved = [e["data"] for e in outcome.events if e["type"] == "approval.resolved"]
    assert [(d["answer"], d["by"]) for d in resolved] == [(True, "interactive"), ("y", "interactive")]


def test_expect_clauses_may_use_builtins() -> None:
    outcome = run('''agent a { model: "scripted", script: ["much too long a summary", "short"] }
let s = a("summarise") expect len(it) <= 10 : "at most 10 characters"
s''')
    assert outcome.error is None, outcome.to_json()
    assert outcome.result == "short"
    done = next(e for e in outcome.events if e["type"] == "agent.completed")
    assert done["data"]["attempts"][0]["errors"] == ["at most 10 characters"]


def test_an_over_budget_call_never_takes_a_concurrency_slot(peak: dict[str, int]) -> None:
    """runtime.md §4: budget → gate. With one slot held by a slow call and the budget spent,
    the next call fails with `limit-exceeded` at once, not after waiting for the slot: its
    failure comes before the slow call ends, and only the slow call reached a provider."""
    source = '''agent slow { model: "scripted", script: [slow(300ms, "done")] }
agent quick { model: "scripted", script: ["never"] }
workflow w(both: bool) -> any {
  limits { agent_runs: 1, concurrency: 1 }
  return parallel { a: slow("first"), b: both ? quick("second") : "skipped" }
}
w(true)'''
    outcome = run(source)
    assert outcome.error is not None and outcome.error.code == "limit-exceeded"
    kinds = [(e["type"], e["data"].get("agent")) for e in outcome.events if e["type"].startswith("agent.")]
    assert ("agent.failed", "quick") in kinds
    quick_failed = kinds.index(("agent.failed", "quick"))
    assert ("agent.completed", "slow") not in kinds[:quick_failed]  # it did not wait for the slot
    assert peak["calls"] == 1


def test_the_order_budget_gate_resolution_in_the_pipeline() -> None:
    """Driven directly: the gate is held by someone else and the frame's budget is spent, so
    the pipeline must answer `limit-exceeded` without ever waiting on the gate; a call with
    budget left waits for the gate before the target is resolved (a non-member call that
    cannot get a slot has not failed yet)."""
    from flow_kernel.errors import CapabilityViolationError, LimitExceededError
    from flow_kernel.runtime.agents import AgentPipeline, HostCalls
    from flow_kernel.runtime.budgets import FrameBudget
    from flow_kernel.runtime.context import RunContext

    compiled = compile_source(SourceFile("o.flow", 'agent a { model: "scripted", script: ["x"] }\n'
                                         'agent c { model: "scripted", script: ["x"] }\nteam t { main: a }\n'))

    async def main() -> None:
        gate = asyncio.Semaphore(1)
        frames = {"f": FrameBudget(None, 1, used=1, name="w", gate=gate)}

        async def approve(*args: Any) -> tuple[bool, str]:
            return True, "test"

        pipeline = AgentPipeline(compiled.check, RunContext(), frames, HostCalls(lambda e: None, approve))
        await gate.acquire()  # someone else holds the only slot
        with pytest.raises(LimitExceededError):
            await asyncio.wait_for(pipeline.call({"agent": "a", "frame": "f", "prompt": "p", "call": "c1"}), 1)
        frames["f"].used = 0
        waiting = asyncio.ensure_future(pipeline.call({"team": "t", "member": "c", "frame": "f", "prompt": "p",
                                                       "call": "c2"}))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # resolution comes after the gate
        gate.release()
        with pytest.raises(CapabilityViolationError):
            await asyncio.wait_for(waiting, 1)

    asyncio.run(main())

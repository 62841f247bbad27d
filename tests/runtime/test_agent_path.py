"""The host's agent path: concurrency actually bounded, budgets count repairs and retries."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime import agents as agents_module
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor


def run(source: str) -> RunOutcome:
    compiled = compile_source(SourceFile("a.flow", source))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    return asyncio.run(run_compiled(compiled, InProcessExecutor()))


@pytest.fixture()
def peak(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    seen = {"now": 0, "peak": 0, "calls": 0}
    original = agents_module.AgentPipeline._invoke

    async def counting(self: Any, *args: Any) -> Any:
        seen["now"] += 1
        seen["calls"] += 1
        seen["peak"] = max(seen["peak"], seen["now"])
        try:
            return await original(self, *args)
        finally:
            seen["now"] -= 1

    monkeypatch.setattr(agents_module.AgentPipeline, "_invoke", counting)
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

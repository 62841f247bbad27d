"""Determinism (runtime.md §7): the same program, input and answers give the same event
sequence apart from timestamps and durations, with `parallel` siblings ordered by key —
whatever order the branches happened to finish in."""

from __future__ import annotations

import asyncio
from typing import Any

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.events.vocabulary import canonical, comparable
from flow_kernel.runtime.executors import SandboxExecutor
from flow_kernel.runtime.policy.operator import Operator
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor
from flow_kernel.sandbox.pool import SandboxPool

PROGRAM = '''agent x {{ model: "scripted", script: [slow({dx}ms, "x")] }}
agent y {{ model: "scripted", script: [slow({dy}ms, "y")] }}
agent m {{ model: "scripted", script: [when("item 0", slow({d0}ms, "zero")), when("item", slow({d1}ms, "other"))] }}
workflow w() -> any {{
  limits {{ concurrency: 8 }}
  stage "fan out" {{
    let both = parallel {{ zulu: x("first"), alpha: y("second") }}
    let items = parallelMap(range(3), i => m("item ${{i}}"))
    log "done"
    let ok = approve "ship it?"
    return {{ both: both, items: items, ok: ok }}
  }}
}}
w()
'''


def run_in(executor: Any, dx: int, dy: int, d0: int, d1: int) -> RunOutcome:
    compiled = compile_source(SourceFile("d.flow", PROGRAM.format(dx=dx, dy=dy, d0=d0, d1=d1)))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    return asyncio.run(run_compiled(compiled, executor, RunContext(operator=Operator("auto-approve"), run_id="rfixed")))


def completions(outcome: RunOutcome) -> list[str]:
    return [e["data"]["agent"] + str(e["data"]["output"]) for e in outcome.events if e["type"] == "agent.completed"]


def test_arrival_order_varies_but_the_canonical_sequence_does_not() -> None:
    fast_x = run_in(InProcessExecutor(), 10, 60, 60, 10)
    slow_x = run_in(InProcessExecutor(), 60, 10, 10, 60)
    assert fast_x.result == slow_x.result
    assert completions(fast_x) != completions(slow_x)  # the branches really finished in another order
    assert comparable(fast_x.events) == comparable(slow_x.events)
    ordered = [e for e in comparable(fast_x.events) if e["type"] == "agent.completed"]
    # `alpha` before `zulu` (by key, not by source order or finish), then the items by index
    assert [e["data"]["output"] for e in ordered] == ["y", "x", "zero", "other", "other"]


def test_ids_do_not_depend_on_the_schedule() -> None:
    one = run_in(InProcessExecutor(), 10, 60, 60, 10)
    two = run_in(InProcessExecutor(), 60, 10, 10, 60)
    assert sorted(e["span"]["id"] for e in one.events) == sorted(e["span"]["id"] for e in two.events)


def test_repeated_runs_in_the_sandbox_give_identical_sequences() -> None:
    async def go() -> list[list[dict[str, Any]]]:
        pool = SandboxPool(warm=1)
        executor = SandboxExecutor(pool)
        out = []
        try:
            for dx, dy in ((5, 30), (30, 5), (5, 30)):
                compiled = compile_source(SourceFile("d.flow", PROGRAM.format(dx=dx, dy=dy, d0=20, d1=5)))
                outcome = await run_compiled(compiled, executor,
                                             RunContext(operator=Operator("auto-approve"), run_id="rfixed"))
                assert outcome.error is None, outcome.to_json()
                out.append(comparable(outcome.events))
        finally:
            await pool.close()
        return out

    first, second, third = asyncio.run(go())
    assert first == second == third


def test_canonical_keeps_every_event_and_renumbers() -> None:
    outcome = run_in(InProcessExecutor(), 10, 60, 60, 10)
    ordered = canonical(outcome.events)
    assert len(ordered) == len(outcome.events) and [e["seq"] for e in ordered] == list(range(1, len(ordered) + 1))
    assert ordered[0]["type"] == "workflow.started" and ordered[-1]["type"] == "workflow.completed"
    assert outcome.events[0]["seq"] == 1  # the live sequence is untouched

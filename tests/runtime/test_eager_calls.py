"""Agent calls of the host's own providers run at once in the bridge's reader, without a
task of their own (sandbox/process.py `_start`); every other provider keeps one task for
the whole call, since code such as anyio's cancel scopes ties itself to the current task."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.agents import AgentPipeline
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.executors import SandboxExecutor
from flow_kernel.runtime.providers.base import ProviderReply, ProviderRequest
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox import process as process_module

PROGRAM = """agent a { model: "scripted", script: ["ok"] }
workflow w() -> int {
  limits { concurrency: 4, agent_runs: 12 }
  let one = a("one")
  return len(parallelMap(range(10), i => a("item ${i}"), concurrency: 4)) + len(one)
}
w()
"""


class TaskBound:
    """A provider whose attempt must end in the task it started in (as an anyio cancel scope
    must): it notes whether it did, across one real wait."""

    def __init__(self) -> None:
        self.same_task: list[bool] = []

    async def attempt(self, request: ProviderRequest) -> ProviderReply:
        started_in = asyncio.current_task()
        await asyncio.sleep(0)
        self.same_task.append(asyncio.current_task() is started_in)
        return ProviderReply("ok")


def run(providers: dict[str, Any] | None = None) -> RunOutcome:
    compiled = compile_source(SourceFile("a.flow", PROGRAM))
    assert compiled.ok, [d.message for d in compiled.check.errors]

    async def go() -> RunOutcome:
        executor = SandboxExecutor(warm=0)
        try:
            return await run_compiled(compiled, executor, RunContext(providers=providers or {}))
        finally:
            await executor.close()

    return asyncio.run(go())


@pytest.fixture()
def started_at_once(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seen: list[int] = []
    original = process_module.SandboxProcess._start

    def counting(self: Any, serve: Any) -> None:
        seen.append(1)
        original(self, serve)

    monkeypatch.setattr(process_module.SandboxProcess, "_start", counting)
    return seen


def test_calls_of_the_scripted_provider_run_at_once(started_at_once: list[int]) -> None:
    outcome = run()
    assert outcome.error is None and outcome.result == 12
    # The first call resolves the agent (in a task); the ten after it may run at once.
    assert len(started_at_once) == 10
    assert [e["type"] for e in outcome.events].count("agent.completed") == 11


def test_another_provider_keeps_one_task_for_its_call(started_at_once: list[int]) -> None:
    provider = TaskBound()
    outcome = run({"scripted": provider})  # the embedder's own provider under the scripted name
    assert outcome.error is None and outcome.result == 12
    assert started_at_once == [] and provider.same_task == [True] * 11


def test_run_at_once_would_move_such_a_provider_between_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    # The check the test above relies on can fail: let every call run at once, and the
    # provider's attempt starts in the bridge's reader task and ends in another.
    monkeypatch.setattr(AgentPipeline, "runs_at_once", lambda self, payload: True)
    provider = TaskBound()
    outcome = run({"scripted": provider})
    assert outcome.error is None and outcome.result == 12
    assert provider.same_task and not all(provider.same_task)

"""One item of an eval, end to end, wherever it runs (this process, or a Ray actor): run the
workflow on the case's input, then each scorer, and gather what the driver keeps — the
item's record, the events of every run it made (for their journals) and the cassette
answers it recorded.

What a run needs from the host travels as a `RunContext` (picklable once the driver has
taken out its sinks, journal folder and cassette recorder: the configuration, the
operator's policy, allowed executables, providers, Python tools, ceilings, a cassette to
replay), so that a Ray actor runs items exactly as the driver would.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from flow_kernel.errors import FlowError
from flow_kernel.lang.compiler import Compiled
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable.cassette import CassetteRecorder, Key, source_scope
from flow_kernel.runtime.eval.data import Case
from flow_kernel.runtime.eval.results import ItemResult
from flow_kernel.runtime.eval.scorers import Scorer, ScorerRun
from flow_kernel.runtime.run import Executor, RunOutcome, new_run_id, run_compiled


@dataclass
class Recorded:
    """One cassette answer recorded away from the driver's cassette (on a Ray actor)."""
    key: Key
    prompt: str
    output: Any = None
    error: dict[str, Any] | None = None  # the error's DTO
    usage: dict[str, int] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    run: str = ""  # the run that recorded it: one claim of its scope per run


class CollectingRecorder(CassetteRecorder):
    """A cassette recorder that keeps its answers for the driver instead of writing a file
    (one per item on a Ray actor): the driver writes them into its own cassette."""

    def __init__(self) -> None:  # no file: nothing of CassetteRecorder's own set-up
        self.answers: list[Recorded] = []
        self._runs: dict[int, str] = {}

    def write(self, key: Key, prompt: str, output: Any = None, error: FlowError | None = None,
              usage: dict[str, int] | None = None, tool_calls: list[dict[str, Any]] | None = None,
              run: object = None) -> None:
        token = self._runs.setdefault(id(run), new_run_id())
        self.answers.append(Recorded(key, prompt, output, error.to_dto() if error is not None else None,
                                     usage, tool_calls, token))


def replay_into(recorder: CassetteRecorder, answers: list[Recorded]) -> None:
    """Write answers recorded elsewhere into the driver's cassette, one claim per run."""
    tokens: dict[str, object] = {}
    for a in answers:
        error = FlowError.from_dto(a.error) if a.error is not None else None
        recorder.write(a.key, a.prompt, a.output, error=error, usage=a.usage, tool_calls=a.tool_calls,
                       run=tokens.setdefault(a.run, object()))


@dataclass
class ItemDone:
    """What one item gives back: its record, its runs' events (run id -> events), the
    answers it recorded (only when recording away from the driver)."""
    result: ItemResult
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    recorded: list[Recorded] = field(default_factory=list)


@dataclass
class ItemRunner:
    """Runs items of one eval with one executor, each run with `context` (the session's
    settings: its journal folder, sinks and cassette on the driver): `compiled` holds the
    workflow and the scorers' workflows."""
    compiled: Compiled
    workflow: str
    scorers: list[Scorer]
    executor: Executor
    context: RunContext
    collect: bool = False  # record each item's answers for the driver instead (a Ray actor)
    keep_events: bool = False  # return every run's events (a Ray actor: the driver writes the journals)
    worker: str | None = None
    # The sandbox group of this eval's runs: they may share a sandbox process while they
    # wait on the host (RunContext.sandbox_group); a run crashed beside others runs again alone.
    group: str = field(default_factory=lambda: "eval-" + secrets.token_hex(6))

    def _scope(self, workflow: str, case: Case, epoch: int) -> str:
        """An item's runs in cassette keys: the program by its file name (a notebook's eval
        by `eval`, not by its text, so that a changed prompt still finds its answers and
        says what changed), the workflow evaluated, then the case and epoch, so that items
        neither share nor replace each other's answers; a scorer's run adds its workflow (a
        judge's answers about one workflow's outputs are not another's)."""
        source = self.compiled.check.source
        program = "eval" if source.name.startswith("<") else source_scope(source.name, source.text)
        scorer = f"/{workflow}" if workflow != self.workflow else ""
        return f"{program}#{self.workflow}@{case.id}/{epoch}{scorer}"

    async def _run(self, workflow: str, data: dict[str, Any], case: Case, epoch: int,
                   runs: dict[str, list[dict[str, Any]]], recorder: CassetteRecorder | None) -> RunOutcome:
        """One run of the item (its workflow or a scorer's) in this eval's sandbox group. A run
        that failed `worker-crashed` in a process it shared (`details["shared"]`: a co-tenant's
        memory bomb, stack overflow or kill may have ended it) runs once more in a process of
        its own, from the start: its agents are called again; the first run's journal stays."""
        context = self.context.replace(recorder=recorder, cassette_scope=self._scope(workflow, case, epoch),
                                       sandbox_group=self.group)
        outcome = await self._run_once(workflow, data, context, runs)
        error = outcome.error
        if error is not None and error.code == "worker-crashed" and error.details.get("shared") is True:
            outcome = await self._run_once(workflow, data, context.replace(sandbox_group=None), runs)
        return outcome

    async def _run_once(self, workflow: str, data: dict[str, Any], context: RunContext,
                        runs: dict[str, list[dict[str, Any]]]) -> RunOutcome:
        outcome = await run_compiled(self.compiled, self.executor, context, workflow=workflow, input=data)
        # A run turns its cancellation into a `cancelled` outcome (its journal says so) and
        # returns; the item must stop here — not run its scorers, not be recorded as ended,
        # not let its executor take the next item (locally or on a Ray lane). `--resume`
        # runs it again.
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError
        if self.keep_events:
            runs[outcome.run_id] = list(outcome.events)
        return outcome

    async def run(self, case: Case, epoch: int) -> ItemDone:
        runs: dict[str, list[dict[str, Any]]] = {}
        recorder = CollectingRecorder() if self.collect else self.context.recorder
        started = time.monotonic()
        outcome = await self._run(self.workflow, case.input, case, epoch, runs, recorder)
        latency = (time.monotonic() - started) * 1000
        cost, tokens = spent(outcome.events)
        result = ItemResult(case.id, epoch, case.line, case.input, case.expected, case.metadata,
                            output=outcome.result, run=outcome.run_id, latency_ms=latency, cost=cost, tokens=tokens,
                            worker=self.worker)
        if outcome.error is not None:
            result.error = {"code": outcome.error.code, "message": outcome.error.message}
        else:
            async def run_scorer(workflow: str, data: dict[str, Any]) -> ScorerRun:
                done = await self._run(workflow, data, case, epoch, runs, recorder)
                spent_cost, spent_tokens = spent(done.events)
                result.tokens += spent_tokens
                return ScorerRun(done.result, done.error.code if done.error else None,
                                 done.error.message if done.error else "", done.run_id, spent_cost)

            for scorer in self.scorers:
                score = await scorer.score(case, outcome.result, run_scorer)
                result.scores[scorer.name] = score
                result.cost += score.cost
        return ItemDone(result, runs, recorder.answers if isinstance(recorder, CollectingRecorder) else [])


async def warm(executor: Any) -> None:
    """Start the first sandbox before the first item, so that no item's latency holds it.
    The pool starts more only when items wait for one (`SandboxPool.acquire`): each start
    costs ~0.6 s of CPU, more than short items need."""
    pool = getattr(executor, "pool", None)
    if pool is not None:
        await pool.prestart()


TOKEN_KEYS = ("input_tokens", "output_tokens", "prompt_tokens", "completion_tokens")


def spent(events: list[dict[str, Any]]) -> tuple[float, int]:
    """The cost (when the provider says one) and tokens of a run's agent calls."""
    cost, tokens = 0.0, 0
    for event in events:
        if event.get("type") not in ("agent.completed", "agent.failed"):
            continue
        data = event.get("data") or {}
        value = data.get("cost")
        if isinstance(value, int | float) and not isinstance(value, bool):
            cost += float(value)
        usage = data.get("usage")
        if isinstance(usage, dict):
            tokens += sum(int(v) for k, v in usage.items() if k in TOKEN_KEYS and isinstance(v, int))
    return cost, tokens


__all__ = ["CollectingRecorder", "ItemDone", "ItemRunner", "Recorded", "replay_into", "spent", "warm"]

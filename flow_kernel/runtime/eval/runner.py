"""The driver of an eval or a batch (docs/eval.md): which items run, on which executor,
and what is kept — the results file written as each item ends, the journals of every run,
the cassette answers, the summary.

`prepare` checks everything that can be wrong before anything runs (a usage error, exit
2): the workflow, the scorers and their workflows or judge agents, the data. `run_eval`
then runs every (case, epoch) not already done, through an `ItemExecutor`: `LocalItems`
here (one session, items at once up to `concurrency`, in warm sandboxes) or
`RayItems` (ray_executor.py). An item that fails — its run, a scorer, even the executor
around it — is a failed record with an error code; the eval goes on.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from flow_kernel.lang.compiler import Compiled
from flow_kernel.runtime.durable.journal import Journal
from flow_kernel.runtime.eval.data import Case, DataProblem, load_cases
from flow_kernel.runtime.eval.items import ItemDone, ItemRunner, replay_into
from flow_kernel.runtime.eval.results import (
    ItemResult,
    ResultsError,
    ResultsFile,
    Summary,
    read_results,
    summarize,
)
from flow_kernel.runtime.eval.scorers import (
    JUDGE_PREFIX,
    Scorer,
    ScorerError,
    judge_source,
    parse_scorer,
)

SCORER_PARAMS = ("input", "output", "expected")


class EvalUsageError(ValueError):
    """What the eval was asked is wrong before anything runs (the CLI's exit 2)."""


class NothingToScore(EvalUsageError):
    """An eval asked to score by default whose data has no `expected`: nothing to compare with."""

    def __init__(self, data_name: str) -> None:
        self.data_name = data_name
        super().__init__(self.saying("`flow batch`"))

    def saying(self, unscored: str) -> str:
        """The error in the words of a front end whose way to run the cases unscored is `unscored`."""
        return (f"nothing to score: no scorer was named and no case of {self.data_name} has `expected`; "
                "name one (--scorer exact, field:PATH, schema:FILE, workflow:NAME, judge:AGENT, ...), "
                f"or run the cases unscored with {unscored}")


@dataclass
class EvalPlan:
    compiled: Compiled
    workflow: str
    scorers: list[Scorer]
    cases: list[Case]
    problems: list[DataProblem] = field(default_factory=list)
    epochs: int = 1
    data_name: str = ""

    def header(self) -> dict[str, Any]:
        return {"program": Path(self.compiled.check.source.name).name, "workflow": self.workflow,
                "scorers": [s.spec for s in self.scorers], "epochs": self.epochs, "data": self.data_name}

    def tasks(self) -> list[tuple[Case, int]]:
        return [(case, epoch) for case in self.cases for epoch in range(1, self.epochs + 1)]


@dataclass
class EvalReport:
    plan: EvalPlan
    results: list[ItemResult]
    summary: Summary
    out: Path | None = None
    resumed: int = 0  # items taken from the results file as done

    @property
    def passed(self) -> bool:
        return self.summary.passed

    def to_json(self) -> dict[str, Any]:
        return {**self.plan.header(), "summary": self.summary.to_json(),
                "skipped": [{"line": p.line, "message": p.message} for p in self.plan.problems],
                "items": [r.to_json() for r in self.results], "out": str(self.out) if self.out else None,
                "resumed": self.resumed}

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from flow_kernel.runtime.eval.report_html import report_bundle

        return report_bundle(self)


def parse_scorers(specs: list[str], directory: Path | None = None) -> list[Scorer]:
    scorers: list[Scorer] = []
    for spec in specs:
        try:
            scorer = parse_scorer(spec, directory=directory)
        except ScorerError as exc:
            raise EvalUsageError(str(exc)) from None
        if any(s.name == scorer.name for s in scorers):
            raise EvalUsageError(f"the scorer {scorer.name!r} is named twice")
        scorers.append(scorer)
    return scorers


def judge_wrappers(scorers: list[Scorer]) -> str:
    """The Flow text that the judges of `scorers` need beside the program."""
    return "".join(judge_source(str(s.arg)) for s in scorers if s.kind == "judge")


def prepare(compiled: Compiled, workflow: str, scorers: list[Scorer], data: str | Path, *, epochs: int = 1,
            data_name: str | None = None, default_scorer: str | None = None) -> EvalPlan:
    """Check the workflow, the scorers against the program, and read the data. With no
    scorers and a `default_scorer` (an eval that was asked to score), the plan scores
    with it when some case has `expected`, and is a usage error when none has: there is
    nothing to compare with. With neither, the plan is a batch."""
    check = compiled.check
    if compiled.python is None:
        raise EvalUsageError("the program has compile errors")
    decl = check.decls.get(workflow)
    if decl is None or decl.kind != "workflow":
        known = sorted(n for n, d in check.decls.items() if d.kind == "workflow" and not n.startswith(JUDGE_PREFIX))
        raise EvalUsageError(f"`{workflow}` is not a workflow" + (f"; there are {', '.join(known)}" if known else ""))
    if epochs < 1:
        raise EvalUsageError("--epochs must be at least 1")
    for scorer in scorers:
        if scorer.kind == "judge":
            agent = check.decls.get(str(scorer.arg))
            if agent is None or agent.kind != "agent":
                raise EvalUsageError(f"judge:{scorer.arg}: no agent `{scorer.arg}` (a judge is an agent whose "
                                     "instructions are the rubric and whose output has a numeric `score`)")
            scorer.params = SCORER_PARAMS
        elif scorer.kind == "workflow":
            scorer.params = _scorer_params(compiled, str(scorer.arg))
    schemas = check.schema_for(workflow)
    assert schemas is not None
    try:
        from flow_kernel.runtime.eval.data import DataError

        cases, problems = load_cases(data, _object(schemas["input"]))
    except DataError as exc:
        raise EvalUsageError(str(exc)) from None
    name = data_name or Path(data).name
    if not scorers and default_scorer is not None:
        scorers = [_default_scorer(default_scorer, cases, name)]
    return EvalPlan(compiled, workflow, scorers, cases, problems, epochs, name)


def _default_scorer(spec: str, cases: list[Case], data_name: str) -> Scorer:
    if not any(case.has_expected for case in cases):
        raise NothingToScore(data_name)
    return parse_scorers([spec])[0]


def _scorer_params(compiled: Compiled, name: str) -> tuple[str, ...]:
    decl = compiled.check.decls.get(name)
    schemas = compiled.check.schema_for(name)
    if decl is None or decl.kind != "workflow" or schemas is None:
        raise EvalUsageError(f"workflow:{name}: no workflow `{name}` in the program")
    schema = _object(schemas["input"])
    params = tuple(schema.get("properties", {}))
    extra = [p for p in params if p not in SCORER_PARAMS]
    required = [p for p in schema.get("required", []) if p not in SCORER_PARAMS]
    if extra and required:
        raise EvalUsageError(f"workflow:{name}: a scorer workflow takes input, output and expected; "
                             f"`{name}` also needs {', '.join(required)}")
    return tuple(p for p in params if p in SCORER_PARAMS)


def _object(schema: object) -> dict[str, Any]:
    """A workflow's input schema (always an object: `schema_for` builds them)."""
    assert isinstance(schema, dict)
    return schema


class ItemExecutor(Protocol):
    """Runs items and calls `done` with each finished one (in any order)."""
    async def map(self, tasks: list[tuple[Case, int]], done: Callable[[ItemDone], None]) -> None: ...
    async def close(self) -> None: ...


def crashed(case: Case, epoch: int, exc: BaseException, worker: str | None = None) -> ItemDone:
    """The record of an item whose executor failed around it: a failure, not a crash."""
    code = getattr(exc, "code", None)
    return ItemDone(ItemResult(case.id, epoch, case.line, case.input, case.expected, case.metadata,
                               error={"code": code if isinstance(code, str) else "isolate",
                                      "message": f"{type(exc).__name__}: {exc}"[:500]}, worker=worker))


class LocalItems:
    """Items at once up to `concurrency`, in this process: each run takes a warm sandbox
    from the runner's executor, shared with the eval's other items while they all wait on
    the host (ItemRunner.group; its pool holds at most as many as run at once)."""

    def __init__(self, runner: ItemRunner, concurrency: int) -> None:
        self.runner = runner
        self.concurrency = max(1, concurrency)

    async def map(self, tasks: list[tuple[Case, int]], done: Callable[[ItemDone], None]) -> None:
        queue = list(reversed(tasks))

        async def worker() -> None:
            while queue:
                case, epoch = queue.pop()
                try:
                    item = await self.runner.run(case, epoch)
                except Exception as exc:  # the eval goes on; the item is a failure with a code
                    item = crashed(case, epoch, exc)
                done(item)

        await asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(tasks)))))

    async def close(self) -> None:
        close = getattr(self.runner.executor, "close", None)
        if close is not None:
            await close()


async def run_eval(plan: EvalPlan, items: ItemExecutor, *, out: Path | None = None, resume: bool = False,
                   journal_dir: Path | None = None, recorder: Any = None,
                   on_result: Callable[[ItemResult], None] | None = None) -> EvalReport:
    """Run every task of `plan` not done yet. `journal_dir` and `recorder` get what items
    run elsewhere bring back (their events, their answers); local runs wrote them already."""
    if resume and out is None:
        raise EvalUsageError("--resume needs --out (the results file to continue)")
    try:
        results_file = ResultsFile(out, plan.header(), resume=resume) if out is not None else None
    except ResultsError as exc:
        raise EvalUsageError(str(exc)) from None
    done_before = {k: r for k, r in (results_file.done if results_file else {}).items() if not r.failed}
    keys = {(c.id, e) for c, e in plan.tasks()}
    kept = {k: r for k, r in done_before.items() if k in keys}
    todo = [(c, e) for c, e in plan.tasks() if (c.id, e) not in kept]
    fresh: dict[tuple[str, int], ItemResult] = {}
    started = time.monotonic()

    def finished(item: ItemDone) -> None:
        result = item.result
        if result.key in fresh:  # a duplicate (a retried item that had finished after all): counted once
            return
        fresh[result.key] = result
        if journal_dir is not None:
            for run_id, events in item.runs.items():
                _write_journal(journal_dir, run_id, events)
        if recorder is not None and item.recorded:
            replay_into(recorder, item.recorded)
        if results_file is not None:
            results_file.add(result)
        if on_result is not None:
            on_result(result)

    try:
        await items.map(todo, finished)
    finally:
        if results_file is not None:
            results_file.close()
    order = {key: index for index, key in enumerate((c.id, e) for c, e in plan.tasks())}
    results = sorted([*kept.values(), *fresh.values()], key=lambda r: order[r.key])
    summary = summarize(results, plan.scorers, skipped_lines=len(plan.problems), wall_s=time.monotonic() - started)
    return EvalReport(plan, results, summary, out, resumed=len(kept))


def _write_journal(directory: Path, run_id: str, events: list[dict[str, Any]]) -> None:
    try:
        journal = Journal(directory, run_id)
    except OSError:
        return  # the run itself is done; its journal is best-effort here
    try:
        for event in events:
            journal(event)
    finally:
        journal.close()


def reread_report(path: Path, like: EvalPlan | None = None) -> EvalReport:
    """An earlier eval from its results file (the last record of each item), to compare
    with: its scorers are those its header names."""
    try:
        header = json.loads(path.read_text(encoding="utf-8").split("\n", 1)[0])
    except (OSError, ValueError) as exc:
        raise EvalUsageError(f"cannot read the results {path}: {exc}") from None
    if not isinstance(header, dict) or header.get("kind") != "eval":
        raise EvalUsageError(f"{path} is not the results file of an eval")
    results = sorted(read_results(path).values(), key=lambda r: (r.line, r.epoch))
    scorers = []
    for spec in header.get("scorers") or []:
        try:
            scorers.append(parse_scorer(str(spec), directory=path.parent))
        except ScorerError:  # a schema file gone since: its scores are in the file all the same
            scorers.append(Scorer(str(spec), str(spec).partition(":")[0]))
    base = like.compiled if like is not None else None
    plan = EvalPlan(base, str(header.get("workflow")), scorers, [], [], int(header.get("epochs") or 1),  # type: ignore[arg-type]
                    str(header.get("data")))
    return EvalReport(plan, results, summarize(results, scorers), path)


__all__ = ["EvalPlan", "EvalReport", "EvalUsageError", "ItemExecutor", "LocalItems", "NothingToScore", "crashed",
           "judge_wrappers", "parse_scorers", "prepare", "reread_report", "run_eval"]

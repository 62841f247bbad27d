"""`Session.eval`: an eval (or, with no scorers, a batch) run with a session's settings —
its configuration, operator, tools, providers, ceilings, cassette and journal folder.

The program is what the session knows (the workflows and agents its cells declared) or a
`Compiled` the caller gives (`flow eval FILE`, checked with the person's grants); a judge
scorer adds its small workflow beside it (scorers.judge_source).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flow_kernel.lang.compiler import Compiled
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.eval.items import ItemRunner, warm
from flow_kernel.runtime.eval.results import ItemResult
from flow_kernel.runtime.eval.runner import (
    EvalPlan,
    EvalReport,
    EvalUsageError,
    LocalItems,
    judge_wrappers,
    parse_scorers,
    prepare,
    run_eval,
)

if TYPE_CHECKING:
    from flow_kernel.runtime.session import Session

EXECUTORS = ("local", "ray")


class EvalCompileError(EvalUsageError):
    """The program (with the judges' workflows) has errors: nothing ran. The session
    raises its `CompileError` for it."""

    def __init__(self, diagnostics: list[Any]) -> None:
        super().__init__("the program has compile errors")
        self.diagnostics = diagnostics


@dataclass(frozen=True, kw_only=True)
class EvalOptions:
    """How an eval runs, besides its workflow and data (`Session.eval`'s keywords).

    `scorers` ("exact", "field:a.b", "workflow:NAME", "judge:AGENT", ...; none: a batch, or,
    given `default_scorer`, scored by it when the data has `expected`); `program` (a
    `Compiled` or Flow text; None: what the session's cells declared); `epochs` (runs of
    each case); `concurrency` (items at once); `executor` "local" or "ray" (with
    `ray_address` to join a cluster and `workers` actors); `out` (the results file, written
    as items end) and `resume` (go on with it); `on_result` (called with each item's result)."""

    scorers: Sequence[str] = ()
    program: Compiled | str | None = None
    epochs: int = 1
    concurrency: int = 4
    executor: str = "local"
    ray_address: str | None = None
    workers: int | None = None
    out: str | Path | None = None
    resume: bool = False
    on_result: Callable[[ItemResult], None] | None = None
    default_scorer: str | None = None

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> EvalOptions:
        """The options named in `options`; `EvalUsageError` names one that is no option."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise EvalUsageError(f"no eval option {', '.join(unknown)}; the options are {', '.join(sorted(known))}")
        return cls(**options)


def item_context(session: Session) -> RunContext:
    """The settings an eval's items run with: the session's, less what is the session's own
    (its trace sinks, provider guards and earlier cells' sources)."""
    return session.context.replace(trace_sinks=(), resilience=None, sources={})


async def evaluate(session: Session, workflow: str, data: str | Path, options: EvalOptions) -> EvalReport:
    """Run `workflow` over the cases of `data` with `session`'s settings (`Session.eval_async`)."""
    if options.executor not in EXECUTORS:
        raise EvalUsageError(f"--executor must be local or ray, not {options.executor!r}")
    if options.concurrency < 1:
        raise EvalUsageError("--concurrency must be at least 1")
    program = options.program
    chosen = parse_scorers(list(options.scorers), session.directory)
    extra = judge_wrappers(chosen)
    compiled = program if isinstance(program, Compiled) else session.compile(program or "", "<eval>")
    if compiled.python is not None and extra:
        for scorer in chosen:  # named before its workflow is compiled, so that a typo is said plainly
            decl = compiled.check.decls.get(str(scorer.arg)) if scorer.kind == "judge" else None
            if scorer.kind == "judge" and (decl is None or decl.kind != "agent"):
                raise EvalUsageError(f"judge:{scorer.arg}: no agent `{scorer.arg}` (a judge is an agent whose "
                                     "instructions are the rubric and whose output has a numeric `score`)")
        compiled = (_with_text(session, compiled, extra) if isinstance(program, Compiled)
                    else session.compile((program or "") + extra, "<eval>"))
    if compiled.python is None:
        raise EvalCompileError(compiled.check.diagnostics)
    plan = prepare(compiled, workflow, chosen, session.directory / data, epochs=options.epochs, data_name=str(data),
                   default_scorer=options.default_scorer)
    out_path = session.directory / options.out if options.out is not None else None
    context = item_context(session)
    if options.executor == "ray":
        return await _on_ray(session, plan, context, options, out_path)
    concurrency = options.concurrency
    runner = ItemRunner(compiled, workflow, plan.scorers, _local_executor(session, concurrency), context)
    local = LocalItems(runner, concurrency if not session.sandbox else min(concurrency, session.ceilings.sandboxes))
    try:
        await warm(runner.executor)
        return await run_eval(plan, local, out=out_path, resume=options.resume, on_result=options.on_result)
    finally:
        await local.close()


async def _on_ray(session: Session, plan: EvalPlan, context: RunContext, options: EvalOptions,
                  out_path: Path | None) -> EvalReport:
    from flow_kernel.runtime.eval.ray_executor import RayItems

    if context.operator.callback is not None:
        raise EvalUsageError("an interactive operator cannot answer on Ray workers: use auto-approve, "
                             "auto-deny, answers:PATH or none")
    # What an actor needs of the context travels; the driver keeps its journal, cassette and
    # sinks, and only what it keeps comes back: the runs' events when it journals, the
    # answers when it records a cassette.
    travels = context.replace(sinks=(), journal_dir=None, recorder=None)
    items = RayItems(plan.compiled, plan.workflow, plan.scorers, travels, concurrency=options.concurrency,
                     workers=options.workers, address=options.ray_address, sandbox=session.sandbox,
                     keep_events=context.journal_dir is not None, collect=context.recorder is not None)
    try:
        return await run_eval(plan, items, out=out_path, resume=options.resume, journal_dir=context.journal_dir,
                              recorder=context.recorder, on_result=options.on_result)
    finally:
        await items.close()


def _with_text(session: Session, compiled: Compiled, extra: str) -> Compiled:
    """`compiled`'s program with `extra` Flow text after it (its lines keep their numbers)."""
    from flow_kernel.files import FileSystemLoader
    from flow_kernel.lang.check import check
    from flow_kernel.lang.compiler import compile_checked
    from flow_kernel.source import SourceFile

    source = compiled.check.source
    loader = FileSystemLoader(str(session.directory), guard=session.trust.use_guard())
    return compile_checked(check(SourceFile(source.name, source.text + extra), loader=loader))


def _local_executor(session: Session, concurrency: int) -> Any:
    """A pool of its own for the eval: up to as many sandboxes as items run at once (at most
    the person's ceiling on sandboxes), started as items wait for one; in-process for a
    session without a sandbox."""
    if not session.sandbox:
        from flow_kernel.sandbox.inprocess import InProcessExecutor

        return InProcessExecutor()
    from flow_kernel.runtime.executors import SandboxExecutor

    size = min(concurrency, session.ceilings.sandboxes)
    return SandboxExecutor(max_processes=size, warm=1)


__all__ = ["EXECUTORS", "EvalCompileError", "EvalOptions", "evaluate", "item_context"]

"""`Session.eval`: an eval (or, with no scorers, a batch) run with a session's settings —
its configuration, operator, tools, providers, ceilings, cassette and journal folder.

The program is what the session knows (the workflows and agents its cells declared) or a
`Compiled` the caller gives (`flow eval FILE`, checked with the person's grants); a judge
scorer adds its small workflow beside it (scorers.judge_source).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flow_kernel.lang.compiler import Compiled
from flow_kernel.runtime.eval.items import ItemRunner, RunSettings, warm
from flow_kernel.runtime.eval.results import ItemResult
from flow_kernel.runtime.eval.runner import (
    EvalReport,
    EvalUsageError,
    ItemExecutor,
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


def settings_of(session: Session) -> RunSettings:
    return RunSettings(config=session.config, operator=session.operator, allow_run=frozenset(session.allow_run),
                       providers=dict(session.providers), tools=session.tools, ceilings=session.ceilings,
                       player=session._player, debug=session.debug)


async def evaluate(session: Session, workflow: str, data: str | Path, *, scorers: list[str] | tuple[str, ...] = (),
                   program: Compiled | str | None = None, epochs: int = 1, concurrency: int = 4,
                   executor: str = "local", ray_address: str | None = None, workers: int | None = None,
                   out: str | Path | None = None, resume: bool = False,
                   on_result: Callable[[ItemResult], None] | None = None,
                   default_scorer: str | None = None) -> EvalReport:
    if executor not in EXECUTORS:
        raise EvalUsageError(f"--executor must be local or ray, not {executor!r}")
    if concurrency < 1:
        raise EvalUsageError("--concurrency must be at least 1")
    chosen = parse_scorers(list(scorers), session.directory)
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
    data_path = session.directory / data
    plan = prepare(compiled, workflow, chosen, data_path, epochs=epochs, data_name=str(data),
                   default_scorer=default_scorer)
    chosen = plan.scorers
    out_path = session.directory / out if out is not None else None
    settings = settings_of(session)
    items: ItemExecutor
    if executor == "ray":
        from flow_kernel.runtime.eval.ray_executor import RayItems

        if settings.operator.callback is not None:
            raise EvalUsageError("an interactive operator cannot answer on Ray workers: use auto-approve, "
                                 "auto-deny, answers:PATH or none")
        # Only what the driver keeps comes back: the runs' events when it journals, the
        # answers when it records a cassette.
        items = RayItems(compiled, workflow, chosen, settings, concurrency=concurrency, workers=workers,
                         address=ray_address, sandbox=session.sandbox, keep_events=session.journal_dir is not None,
                         collect=session._recorder is not None)
        try:
            return await run_eval(plan, items, out=out_path, resume=resume, journal_dir=session.journal_dir,
                                  recorder=session._recorder, on_result=on_result)
        finally:
            await items.close()
    runner = ItemRunner(compiled, workflow, chosen, _local_executor(session, concurrency), settings,
                        journal_dir=session.journal_dir, recorder=session._recorder, sinks=list(session.sinks))
    local = LocalItems(runner, concurrency if not session.sandbox else min(concurrency, session.ceilings.sandboxes))
    try:
        await warm(runner.executor, min(local.concurrency, len(plan.cases) * plan.epochs))
        return await run_eval(plan, local, out=out_path, resume=resume, on_result=on_result)
    finally:
        await local.close()


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
    """A pool of its own for the eval: as many warm sandboxes as items run at once (at most
    the person's ceiling on sandboxes); in-process for a session without a sandbox."""
    if not session.sandbox:
        from flow_kernel.sandbox.inprocess import InProcessExecutor

        return InProcessExecutor()
    from flow_kernel.runtime.executors import SandboxExecutor

    size = min(concurrency, session.ceilings.sandboxes)
    return SandboxExecutor(max_processes=size, warm=1)


__all__ = ["EXECUTORS", "EvalCompileError", "evaluate", "settings_of"]

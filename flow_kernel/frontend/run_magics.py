"""The runner magics: magics that act on the cell runner and its front end, not only on the
session — a run in the background, an approval answered from another cell, a wait, an eval
shown as its table, a journaled run resumed. They sit at the top of a cell, before the
session magics (frontend/magics.py), and are registered in the same registry."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from flow_kernel.frontend.magics import MAGICS, CellPlan, Magic, MagicError, RunnerMagic
from flow_kernel.runtime.session import Session

if TYPE_CHECKING:
    from flow_kernel.frontend.cell import CellRunner, Prelude
    from flow_kernel.frontend.port import CellPort


def runner_magic(name: str, usage: str, help_text: str) -> Callable[[RunnerMagic], RunnerMagic]:
    """Register a runner magic's handler under `%name`; where no runner is (`plan_cell`),
    the magic is refused with where it works."""
    def elsewhere(session: Session, args: str, plan: CellPlan) -> None:
        raise MagicError(f"%{name} works in the Flow kernel, at the top of a cell")

    def register(handle: RunnerMagic) -> RunnerMagic:
        MAGICS[name] = Magic(name, usage, help_text, elsewhere, handle=handle)
        return handle
    return register


@runner_magic("background", "%background", "the cell returns at once with the live view; the run goes on")
async def _background(runner: CellRunner, port: CellPort, args: str, prelude: Prelude) -> None:
    prelude.background = True


@runner_magic("approve", "%approve [RUN] yes|no", "answer a background run's pending approval (RUN: when several wait)")
async def _approve(runner: CellRunner, port: CellPort, args: str, prelude: Prelude) -> None:
    words = args.split()
    if len(words) == 1 and words[0] in ("yes", "no"):  # the only run waiting for an answer
        waiting = [run for run in runner.live if (view := runner.view_of(run)) is not None and view.waiting]
        if len(waiting) != 1:
            raise MagicError("%approve: no run is waiting for an approval" if not waiting else
                             f"%approve: {len(waiting)} runs are waiting ({', '.join(waiting)}): "
                             "say which, %approve RUN yes|no")
        words = [waiting[0], words[0]]
    if len(words) != 2 or words[1] not in ("yes", "no"):
        raise MagicError("usage: %approve [RUN] yes|no")
    run, answer = words
    view = runner.view_of(run)
    if view is None:
        ended = run in runner.background or any(o.run_id == run for o in runner.session.history)
        raise MagicError(f"%approve: run {run} has ended; there is nothing to answer" if ended
                         else f"%approve: no run {run} is going on (see %runs)")
    if not view.answer(answer == "yes"):
        raise MagicError(f"%approve: run {run} is not waiting for an approval")
    port.show({"text/plain": f"run {run}: {'approved' if answer == 'yes' else 'denied'}"})


@runner_magic("wait", "%wait RUN", "wait for a background run to end")
async def _wait(runner: CellRunner, port: CellPort, args: str, prelude: Prelude) -> None:
    outcome = await runner.wait(args)
    status = "cancelled" if outcome is None else "completed" if outcome.error is None else f"failed: {outcome.error.code}"
    port.show({"text/plain": f"run {args}: {status}"})


@runner_magic("eval", "%eval WORKFLOW --data CASES [--scorer SPEC]… [--out RESULTS] [--compare OLD]",
              "score a workflow over a dataset (no --scorer: exact against `expected`); docs/eval.md")
async def _eval(runner: CellRunner, port: CellPort, args: str, prelude: Prelude) -> None:
    """An eval of a workflow the notebook declared, shown as its results (frontend/eval_magic.py)."""
    from flow_kernel.frontend.eval_magic import eval_needs, run_eval_magic

    session = runner.session
    await runner.grant([c for c in eval_needs(session, args) if not session.trust.granted(c)], port)
    bundles, report = await run_eval_magic(session, args)
    if report is not None and port.widgets and port.person_present:
        from flow_kernel.views.eval_table import EvalTable  # a person is watching: the live table

        bundles[0] = EvalTable(report, session.journal_dir).mimebundle()
    for bundle in bundles:
        port.show(bundle)


@runner_magic("resume", "%resume RUN|last", "go on with a waiting or interrupted run from its journal (its open "
              "requests are asked first; `last`: the run this kernel last left waiting)")
async def _resume(runner: CellRunner, port: CellPort, args: str, prelude: Prelude) -> None:
    from flow_kernel.frontend.resume_magic import open_run

    prelude.resuming = await open_run(runner, port, args)


@runner_magic("cancel", "%cancel RUN|last", "cancel a running or waiting run of this folder, from any kernel "
              "(`last`: the newest that can be cancelled); its journal ends `cancelled`")
async def _cancel(runner: CellRunner, port: CellPort, args: str, prelude: Prelude) -> None:
    from flow_kernel.frontend.cancel_magic import cancel

    port.show({"text/plain": await cancel(runner.session, args)})


__all__ = ["runner_magic"]

"""`%resume RUN` (docs/durability.md): a run journaled in this folder — waiting, or
interrupted (a kernel restarted mid-cell) — goes on as a cell (`%resume last`: the run this
session last left waiting).

A waiting run's open requests are asked first, when a person is at the front end: the
approval widget (views/pending_prompt.py), or a typed line without widgets; each answer is
journaled with who gave it (`widget`, `stdin`). Then the run goes on as a cell, with its
live view, appending to the same journal. Headless (nbclient, nbval), nothing is asked: the
run goes on with the session's operator (`%answer` first, or `%operator defer` to stop
again at the request).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flow_kernel.frontend.magics import MagicError, waiting_run
from flow_kernel.runtime.durable.resume import ResumeRefused, load_checkpoint
from flow_kernel.runtime.session import Resumption
from flow_kernel.views.pending_prompt import pending_request, typed_answer

if TYPE_CHECKING:
    from flow_kernel.frontend.cell import CellRunner
    from flow_kernel.frontend.port import CellPort

# How a notebook answers a waiting run (frontend/outputs.py `waiting_text`).
NOTEBOOK_ANSWER = ("answer with %answer {run} {id} {value} (or `flow answer` in a terminal), then %resume {run} "
                   "— here, in another kernel, or after a restart")


async def open_run(runner: CellRunner, port: CellPort, run_id: str) -> Resumption:
    """Ask the run's open requests (a person at the front end), then check it can go on."""
    session = runner.session
    if not run_id or " " in run_id:
        raise MagicError("usage: %resume RUN|last (the run ids are in %runs)")
    run_id = waiting_run(session, run_id, "%resume")
    try:
        checkpoint = load_checkpoint(session.journal_dir, run_id)
        if port.person_present:
            for pending in checkpoint.unanswered():
                request = pending_request(run_id, pending)
                if port.widgets:
                    value, by = await port.prompt(request), "widget"
                else:
                    value, by = typed_answer(pending, await port.read_line(request["prompt"])), "stdin"
                session.answer(run_id, str(pending["id"]), value, by=by)
        return session.prepare_resume(run_id)
    except ResumeRefused as exc:
        raise MagicError(f"%resume: error[{exc.code}]: {exc.message}") from None


__all__ = ["NOTEBOOK_ANSWER", "open_run"]

"""`%resume RUN` (docs/durability.md): a run journaled in this folder — waiting, or
interrupted (a kernel restarted mid-cell) — goes on as a cell (`%resume last`: the run this
session last left waiting).

A waiting run's open requests are asked first, when a person is at the front end: the
approval widget (views/pending_prompt.py), or a typed line without widgets; each answer is
journaled with who gave it (`widget`, `stdin`). A request whose deadline (`timeout T else V`)
has passed is not asked, and one is asked only until its deadline: the resume answers it
with its default (runtime/durable/deadlines.py). Then the run goes on as a cell, with its
live view, appending to the same journal. Headless (nbclient, nbval), nothing is asked: the
run goes on with the session's operator (`%answer` first, or `%operator defer` to stop
again at the request).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flow_kernel.frontend.magics import MagicError, waiting_run
from flow_kernel.runtime.durable.deadlines import before_due, still_open
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
            for pending in still_open(checkpoint.unanswered()):
                answer = await before_due(pending.get("due"), _ask(port, run_id, pending))
                if answer is not None:
                    _record(runner, run_id, pending, answer)
        return session.prepare_resume(run_id)
    except ResumeRefused as exc:
        raise MagicError(f"%resume: error[{exc.code}]: {exc.message}") from None


async def _ask(port: CellPort, run_id: str, pending: dict[str, Any]) -> tuple[Any, str]:
    """A person's answer to one pending request, and how it was given (`widget`, `stdin`)."""
    request = pending_request(run_id, pending)
    if port.widgets:
        return await port.prompt(request), "widget"
    return typed_answer(pending, await port.read_line(request["prompt"])), "stdin"


def _record(runner: CellRunner, run_id: str, pending: dict[str, Any], answer: tuple[Any, str]) -> None:
    """Journal a person's answer; one given as the deadline passed is dropped (the resume
    takes the default, `by: "timeout"`)."""
    try:
        runner.session.answer(run_id, str(pending["id"]), answer[0], by=answer[1])
    except ResumeRefused as exc:
        if exc.code != "deadline-passed":
            raise


__all__ = ["NOTEBOOK_ANSWER", "open_run"]

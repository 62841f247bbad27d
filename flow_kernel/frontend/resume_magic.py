"""`%resume RUN` in the Flow kernel, and how a cell reports a run that waits
(docs/durability.md).

`%resume RUN` opens a run journaled in this folder — waiting, or interrupted (a kernel
restarted mid-cell) — in this kernel (`%resume last`: the run this kernel last left
waiting). A waiting run's open requests are asked first, when a person is at the
frontend: the approval widget (views/pending_prompt.py), or stdin without widgets;
each answer is journaled with who gave it (`widget`, `stdin`). Then the run goes on as a
cell of this kernel, with its live view, appending to the same journal. Headless
(nbclient, nbval), nothing is asked: the run goes on with the session's operator (`%answer`
first, or `%operator defer` to stop again at the request).
"""

from __future__ import annotations

import asyncio
from typing import Any

from flow_kernel.kernel.magics import MagicError, waiting_run
from flow_kernel.runtime.durable.resume import ResumeRefused, load_checkpoint
from flow_kernel.runtime.session import Resumption
from flow_kernel.views.pending_prompt import pending_request, typed_answer


async def open_run(kernel: Any, run_id: str, silent: bool) -> Resumption:
    """Ask the run's open requests (a person at the frontend), then check it can go on."""
    session = kernel.flow
    if not run_id or " " in run_id:
        raise MagicError("usage: %resume RUN|last (the run ids are in %runs)")
    run_id = waiting_run(session, run_id, "%resume")
    try:
        checkpoint = load_checkpoint(session.journal_dir, run_id)
        if kernel._person_can_answer(silent):
            for pending in checkpoint.unanswered():
                request = pending_request(run_id, pending)
                if kernel._widgets_on(silent):
                    value, by = await kernel._ask_person(request, silent), "widget"
                else:
                    text = await asyncio.to_thread(kernel.raw_input, request["prompt"])
                    value, by = typed_answer(pending, text), "stdin"
                session.answer(run_id, str(pending["id"]), value, by=by)
        return session.prepare_resume(run_id)  # type: ignore[no-any-return]
    except ResumeRefused as exc:
        raise MagicError(f"%resume: error[{exc.code}]: {exc.message}") from None


def waiting_text(outcome: Any) -> str:
    """What a cell whose run stopped `waiting` shows: the requests, and how to answer them."""
    lines = [f"run {outcome.run_id} is waiting for an answer:"]
    lines += [f"  {p['id']}  {p['kind']}: {p['question']}" for p in outcome.pending]
    first = outcome.pending[0]
    value = "true" if first["kind"] in ("approve", "tool") else "TEXT"
    lines.append(f"answer with %answer {outcome.run_id} {first['id']} {value} (or `flow answer` in a terminal), "
                 f"then %resume {outcome.run_id} — here, in another kernel, or after a restart")
    return "\n".join(lines)


__all__ = ["open_run", "waiting_text"]

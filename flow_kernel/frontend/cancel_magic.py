"""`%cancel RUN|last` (docs/durability.md): cancel a run journaled in this folder, from any
kernel — one waiting for an answer or interrupted at once, in its journal; one a process is
running (a `%background` run of this kernel, a `flow run` in a terminal, a cell of another
kernel) by a cancel request its process sees within a second (runtime/durable/cancel.py).
`last` is the newest run of the folder that can still be cancelled (`waiting_run`)."""

from __future__ import annotations

from flow_kernel.frontend.magics import MagicError, waiting_run
from flow_kernel.runtime.durable.cancel import cancel_run, settle
from flow_kernel.runtime.durable.resume import ResumeRefused
from flow_kernel.runtime.session import Session

WAIT_SECONDS = 5.0  # how long the magic waits for a running run to stop before it says "asked"


async def cancel(session: Session, args: str) -> str:
    """Cancel the run `args` names (or `last`); what happened, as one line."""
    run_id = args.strip()
    if not run_id or " " in run_id:
        raise MagicError("usage: %cancel RUN|last (the run ids are in %runs)")
    run_id = waiting_run(session, run_id, "%cancel")
    journals = session.journal_dir
    try:
        done = cancel_run(journals, run_id, "%cancel")
        assert journals is not None
        status = done.status if done.status == "cancelled" else await settle(journals, run_id, "%cancel", WAIT_SECONDS)
    except ResumeRefused as exc:
        raise MagicError(f"%cancel: error[{exc.code}]: {exc.message}") from None
    if status == "cancelled":
        return f"cancelled run {run_id}"
    return f"asked the process running {run_id} to cancel it: it stops at its next effect (%runs shows when)"


__all__ = ["WAIT_SECONDS", "cancel"]

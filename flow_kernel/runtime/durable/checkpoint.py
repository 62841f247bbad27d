"""A run's checkpoint while it runs (docs/durability.md): every effect that leaves the
sandbox is answered from the journal of an earlier execution of the same run when it is
there, and otherwise done live and written to the journal (sealed, on the disk) before
the sandbox hears the result.

An effect's identity is where the program asked for it — the request's `order`, the
position the sandbox gives every host request (its branch path and counter: the same
program and answers give the same positions, whatever order `parallel` branches ran in)
— plus, for provider attempts and tool calls, the attempt and tool-call number. Its
`request` fingerprint (the prompt, the question, the executable and arguments) must match
what was journaled at that position: a run that takes another path than its journal
stops (`isolate`) instead of taking an answer meant for another request.

The `defer` operator: an `approve`, `ask` or approval-gated tool with no journaled answer
is written as `pending` (its id is a hash of its position and its request, so a loop's second
approval has an id of its own, and the id is the same in every execution) and the run stops
`waiting`. An answer given since (`flow answer`) is taken only by the request it was given
for: the same place *and* the same question, details and choices.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from flow_kernel.errors import (
    FlowCancelledError,
    FlowError,
    FlowIsolateError,
    OperatorUnavailableError,
)
from flow_kernel.runtime.durable.deadlines import PromptDeadline, expired
from flow_kernel.runtime.durable.journal import Checkpoint, Journal, digest, now_text

DEFER = "defer"


def position(op: str, payload: dict[str, Any], *more: object) -> str:
    """The key of an effect: the operation and where in the program it was asked (its
    order key as JSON text: the same for a list from the sandbox and a kept tuple)."""
    order = payload.get("order")
    where = json.dumps(order, separators=(",", ":")) if isinstance(order, list | tuple) else "?"
    return ":".join([op, where, *(str(m) for m in more)])


def pending_id(key: str, request: str) -> str:
    """A pending request's id: its place in the run and what it asks. The same in every
    execution; a loop's next approval, or another question at the same place, gets another."""
    return "p" + hashlib.sha256(f"{key}|{request}".encode()).hexdigest()[:10]


class Waiting(FlowCancelledError):
    """The run stops for a pending request (`defer`). A `cancelled` error in the sandbox's
    eyes (fatal: no `catch` in the program takes it); run.py reports the run `waiting`."""


# FlowError's registry maps a code to one class: `cancelled` stays FlowCancelledError.
FlowError.by_code[FlowCancelledError.code] = FlowCancelledError


class RunCheckpoint:
    """The journal being written, and what an earlier execution of this run recorded."""

    def __init__(self, journal: Journal, prior: Checkpoint | None = None) -> None:
        self.journal = journal
        self.prior = prior
        self.stopped = False  # the host stopped the run: what still finishes is not recorded
        self.waiting: list[dict[str, Any]] = []  # the pending requests the run stopped for
        self.on_wait: Callable[[FlowError], None] | None = None  # host.fail

    # -- effects -----------------------------------------------------------------------------
    def replayed(self, key: str, request: str) -> dict[str, Any] | None:
        """The journaled effect at `key`, if any; `isolate` when it was for another request."""
        if self.prior is None:
            return None
        record = self.prior.effects.get(key)
        if record is None:
            return None
        if record.get("request") != request:
            raise FlowIsolateError(
                f"the resumed run asked for something else than its journal holds at {key.split(':', 1)[0]} "
                f"{key.split(':', 1)[1] if ':' in key else ''}: the program or its configuration changed in a way "
                "the resume checks did not see; start a new run", details={"key": key})
        return record

    def done(self, key: str, request: str, result: Any = None, error: FlowError | None = None,
             **extra: Any) -> None:
        """Journal a completed effect (on the disk when this returns), unless the run was stopped."""
        if self.stopped:
            return
        fields: dict[str, Any] = {"key": key, "request": request, "at": now_text(), **extra}
        if error is not None:
            fields["error"] = {"code": error.code, "message": error.message, "details": error.details}
        else:
            fields["result"] = result
        self.journal.record("effect", fields)

    async def effect(self, key: str, request: str, live: Callable[[], Awaitable[Any]]) -> Any:
        """An effect with a plain result (now, uuid, run): from the journal, or live and journaled."""
        record = self.replayed(key, request)
        if record is not None:
            if "error" in record:
                raise FlowError.from_dto(dict(record["error"]))
            return record.get("result")
        try:
            result = await live()
        except FlowError as exc:
            if exc.code == "process":  # a failed `run` is its result too: not run again
                self.done(key, request, error=exc)
            raise
        self.done(key, request, result)
        return result

    # -- the operator ------------------------------------------------------------------------
    async def decide(self, kind: str, key: str, request: dict[str, Any], policy: str,
                     ask: Callable[[], Awaitable[tuple[Any, str]]]) -> tuple[Any, str]:
        """An operator decision: journaled, answered since (`flow answer`), deferred, or asked now."""
        fingerprint = digest(request)
        record = self.replayed(key, fingerprint)
        if record is not None:
            return record.get("result"), str(record.get("by") or "journal")
        pid = pending_id(key, fingerprint)
        answer = self.prior.answers.get(pid) if self.prior is not None and pid in self.prior.pending else None
        deadline = request.get("deadline")  # `timeout T else V`: checked when answered or resumed (durable/deadlines.py)
        waited = self.prior.pending.get(pid) if self.prior is not None else None
        if isinstance(deadline, dict) and waited is not None and \
                expired(waited.get("due"), answer.get("at") if answer is not None else None):
            self.done(key, fingerprint, deadline.get("default"), by="timeout", pending=pid)
            return deadline.get("default"), "timeout"
        if answer is not None:
            by = str(answer.get("by"))
            self.done(key, fingerprint, answer.get("value"), by=by, pending=pid)
            return answer.get("value"), by
        if policy == DEFER:
            pending = {"id": pid, "kind": kind, "question": request.get("question"),
                       "details": request.get("details"), "choices": request.get("choices")}
            asked = now_text()
            # A deadline falls when the question was first asked plus T (not again at each resume).
            due = {} if not isinstance(deadline, dict) else \
                {"due": waited.get("due"), "default": waited.get("default")} if waited is not None else \
                {"due": PromptDeadline(int(deadline["timeout_ms"]), deadline.get("default")).due(
                    datetime.datetime.fromisoformat(asked)), "default": deadline.get("default")}
            if waited is None:
                self.journal.record("pending", {**pending, "key": key, "request": fingerprint, "at": asked, **due})
            self.waiting.append({**pending, **due})
            stop = Waiting(f"the run waits for an answer to {str(request.get('question'))[:200]!r} "
                           f"(pending {pid}: flow answer {self.journal.run_id} {pid} VALUE)",
                           details={"pending": pid})
            if self.on_wait is not None:
                self.on_wait(stop)
            self.stopped = True
            raise stop
        value, how = await ask()
        self.done(key, fingerprint, value, by=how)
        return value, how



def no_journal_for_defer() -> OperatorUnavailableError:
    return OperatorUnavailableError("the `defer` operator needs the run's journal (a session with journal_dir=None "
                                    "keeps none): nothing could wait for an answer")

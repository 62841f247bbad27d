"""Cancelling a run by its id (`flow cancel RUN`, `%cancel RUN|last`; docs/durability.md).

Whoever can write a run's journal folder can cancel it, from any process:

- a run no process is writing (`waiting` for an answer, or `interrupted`) is cancelled in
  its journal at once: a sealed `end` record `cancelled`, with who cancelled it;
- a run a process is writing (its journal is locked) gets a *cancel request* beside its
  journal, `.flow/runs/<run>.cancel` (made new, never through a link). The owning process
  watches for it (`CancelWatch`: a stat at most every `POLL_SECONDS`, from a timer and at
  each effect boundary), stops the run on seeing it and journals the end `cancelled`, then
  removes the request.

A run id is matched against the run-id pattern before it names a file (`journal_path`):
it is never a path. A request grants nothing: it can only stop a run, and what it says
about who asked is taken from a short list (`WHO`), never shown as it was written.
A cancelled run has ended: it cannot be resumed or answered (`run-ended`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flow_kernel.errors import FlowCancelledError
from flow_kernel.runtime.durable.journal import (
    OWN_FOLDERS,
    RUN_ID,
    Checkpoint,
    JournalForged,
    RunLocked,
    append_record,
    journal_path,
    locked_for_append,
    now_text,
    read_checkpoint,
)
from flow_kernel.runtime.durable.nofollow import LinkRefused, create_new_file, open_folder
from flow_kernel.runtime.durable.resume import (
    ENDED,
    ResumeRefused,
    ended_as,
    load_checkpoint,
    run_info,
    user_name,
)

POLL_SECONDS = 0.25  # how stale a watcher's view of the request may be (well within 1 s)
WHO = ("flow cancel", "%cancel")  # who a request may say cancelled (anything else: "another process")
REQUEST_BYTES = 1024


@dataclass(frozen=True)
class CancelRequested:
    """A cancel request the owning process saw (`flow cancel`, `%cancel`): the run stops, and
    its journal ends `cancelled` (not `failed` or `interrupted`), saying who asked."""

    by: str
    user: str

    def error(self) -> FlowCancelledError:
        """What the run fails with: `cancelled`, naming who asked."""
        return FlowCancelledError(f"the run was cancelled by {self.by} ({self.user})",
                                  details={"by": self.by, "user": self.user})


def request_path(journal_dir: Path, run_id: str) -> Path:
    """Where the cancel request of `run_id` goes; ValueError for anything that is not a run id."""
    return journal_path(journal_dir, run_id).with_suffix(".cancel")


@dataclass(frozen=True)
class CancelOutcome:
    """What `cancel_run` did: `cancelled` (in the journal, no process had the run) or
    `requested` (the process running it will stop it)."""

    run: str
    status: str
    by: str

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "status": self.status, "by": self.by}


def cancel_run(journal_dir: Path | None, run_id: str, by: str) -> CancelOutcome:
    """Cancel `run_id` (journaled in `journal_dir`) on behalf of `by` (one of `WHO`).
    Refused (`ResumeRefused`): an unknown run or a bad id (`unknown-run`), a run that has
    ended (`run-ended`: nothing to cancel), a journal that does not verify (`journal-forged`)."""
    checkpoint = load_checkpoint(journal_dir, run_id)
    assert journal_dir is not None
    _refuse_ended(checkpoint)
    try:
        with locked_for_append(journal_dir, run_id) as fd:
            checkpoint = read_checkpoint(checkpoint.path)  # as it is now that nobody else writes it
            _refuse_ended(checkpoint)
            append_record(fd, run_id, checkpoint.last_mac, "end",
                          {"status": "cancelled", "by": by, "user": user_name(), "at": now_text()})
            return CancelOutcome(run_id, "cancelled", by)
    except RunLocked:  # a process is running it: ask that process
        _write_request(journal_dir, run_id, by)
        return CancelOutcome(run_id, "requested", by)
    except JournalForged as exc:
        raise ResumeRefused("journal-forged", str(exc), {"run": run_id}) from None
    except LinkRefused as exc:
        raise ResumeRefused("unknown-run", str(exc), {"run": run_id}) from None


def _refuse_ended(checkpoint: Checkpoint) -> None:
    if checkpoint.status in ENDED:
        raise ResumeRefused("run-ended", f"run {checkpoint.run} has ended ({ended_as(checkpoint)}): there is nothing "
                            "to cancel", {"run": checkpoint.run, "status": checkpoint.status})


def _write_request(journal_dir: Path, run_id: str, by: str) -> None:
    """The request file, made new without following a link; one already there stands."""
    path = request_path(journal_dir, run_id)
    text = json.dumps({"by": by, "user": user_name(), "at": now_text()}).encode()[:REQUEST_BYTES]
    try:
        folder = open_folder(journal_dir, own=OWN_FOLDERS)
    except LinkRefused as exc:
        raise ResumeRefused("unknown-run", str(exc), {"run": run_id}) from None
    try:
        fd = create_new_file(folder, path.name, path)
    except LinkRefused as exc:
        if _is_plain_file(folder, path.name):
            return  # asked already, and not yet seen: the one request stands
        raise ResumeRefused("cancel-refused", f"the cancel request of run {run_id} cannot be written: {exc}",
                            {"run": run_id}) from None
    finally:
        os.close(folder)
    try:
        os.write(fd, text)
    finally:
        os.close(fd)


def _is_plain_file(folder: int, name: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def read_request(path: Path) -> CancelRequested | None:
    """The cancel request at `path` as the error that stops the run; None when there is none.
    A link there is no request (it is ignored, never followed); a request that cannot be
    read as JSON still cancels, said to be by `another process`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        data = os.read(fd, REQUEST_BYTES)
    finally:
        os.close(fd)
    try:
        fields = json.loads(data)
    except ValueError:
        fields = {}
    fields = fields if isinstance(fields, dict) else {}
    by = fields.get("by") if fields.get("by") in WHO else "another process"
    user = fields.get("user")
    user = user if isinstance(user, str) and user.isascii() and user.replace("-", "").replace("_", "").replace(".", "").isalnum() \
        and len(user) <= 32 else "unknown"
    return CancelRequested(str(by), user)


class CancelWatch:
    """The owning process's watch for a cancel request of its run. `check()` is cheap enough
    for every effect boundary (a stat at most every `POLL_SECONDS`); `watch(stop)` is the
    timer that calls `stop` with the request when one appears, for a run between effects."""

    def __init__(self, journal_dir: Path, run_id: str) -> None:
        self.path = request_path(journal_dir, run_id)
        self.request: CancelRequested | None = None
        self._next = 0.0

    def check(self) -> CancelRequested | None:
        """The request, once one was written (looked for at most every `POLL_SECONDS`)."""
        if self.request is None:
            now = time.monotonic()
            if now >= self._next:
                self._next = now + POLL_SECONDS
                if os.path.lexists(self.path):
                    self.request = read_request(self.path)
        return self.request

    def watch(self, stop: Callable[[CancelRequested], None]) -> Callable[[], None]:
        """Look for a request every `POLL_SECONDS` from a timer on the running loop and, on
        one, call `stop` with it (once). Returns what ends the watch (the run ended): after
        it, `stop` is not called. A timer, not a task: a run that ends within its first
        `POLL_SECONDS` costs the loop one timer set and cancelled."""
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle | None = None

        def poll() -> None:
            nonlocal handle
            request = self.check()
            if request is None:
                handle = loop.call_later(POLL_SECONDS, poll)
            else:
                handle = None
                stop(request)

        def end() -> None:
            if handle is not None:
                handle.cancel()

        handle = loop.call_later(POLL_SECONDS, poll)
        return end

    def clear(self) -> None:
        """The run ended: its request (if any) was answered, or came too late; remove it."""
        if not os.path.lexists(self.path):  # almost every run: one stat
            return
        with contextlib.suppress(OSError):
            folder = open_folder(self.path.parent, own=OWN_FOLDERS)
            try:
                os.unlink(self.path.name, dir_fd=folder)
            finally:
                os.close(folder)


def watch_for(journal_dir: Path | None, run_id: str) -> CancelWatch | None:
    """The watch for a run journaled in `journal_dir`; None when it has no journal, or an id
    that `flow cancel` could not name (a run id a caller chose, as tests and embedders may)."""
    if journal_dir is None or not RUN_ID.match(run_id):
        return None
    return CancelWatch(journal_dir, run_id)


async def settle(journal_dir: Path, run_id: str, by: str, seconds: float) -> str:
    """After a cancel request (`cancel_run` said `requested`): wait up to `seconds` for the
    run to stop, and say how it ended — `cancelled`, or `requested` while its process still
    runs it. A run whose process let it go without seeing the request (it stopped `waiting`,
    or was killed) is cancelled in its journal now; one that ended first is `run-ended`."""
    path = journal_path(journal_dir, run_id)
    give_up = time.monotonic() + seconds
    while True:
        status = run_info(path).status
        if status != "running":
            break
        if time.monotonic() >= give_up:
            return "requested"
        await asyncio.sleep(0.1)
    if status == "cancelled":
        return status
    CancelWatch(journal_dir, run_id).clear()  # not seen: the request must not stop a later execution
    return cancel_run(journal_dir, run_id, by).status


__all__ = ["POLL_SECONDS", "WHO", "CancelOutcome", "CancelRequested", "CancelWatch", "cancel_run",
           "read_request", "request_path", "settle", "watch_for"]

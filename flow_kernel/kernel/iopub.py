"""The kernel's stdout and stderr: ipykernel's `OutStream`, whose `flush` waits for the
IOPub thread only when there is something to wait for.

ipykernel flushes both streams before each `execute_reply` and again before the `idle`
status: four flushes a cell. Each one hands two callables to the IOPub thread (two zmq
sends that wake it) and blocks until the second has run: four thread round trips a
cell, which on a busy two-core machine were the kernel's largest cost after the sandbox
(cProfile over 300 warm `1 + 1` cells: 1.65 ms a cell in `OutStream.flush`). A flush is
a barrier: when it returns, what the stream buffered has been sent and so has every
message handed to the IOPub thread before it (the cell's `execute_result` goes out
before its reply). When nothing is buffered, no flush of this stream is pending or
running, and every callable ever handed to the IOPub thread has run, the barrier holds
already and the flush returns at once: the first flush after a cell's outputs still
waits for them; the three after it, with nothing new, do not. `OutStream.flush` is
otherwise unchanged (same waits, same timeout, same sends).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from ipykernel.iostream import OutStream

_LEDGERS_LOCK = threading.Lock()


class IOPubLedger:
    """Counts the callables handed to one IOPub thread that have not finished running,
    and the streams' `_flush` calls in progress on it."""

    def __init__(self, pub_thread: Any) -> None:
        self._lock = threading.Lock()
        self._unfinished = 0
        original: Callable[[Callable[[], Any]], None] = pub_thread.schedule

        def schedule(f: Callable[[], Any]) -> None:
            self.started()

            def counted() -> None:
                try:
                    f()
                finally:
                    self.finished()

            try:
                original(counted)
            except BaseException:  # never handed over: it will not run
                self.finished()
                raise

        pub_thread.schedule = schedule
        # A child forked while another thread held the lock would block on it for good; in
        # the child the IOPub thread does not run, and what it is handed runs at once.
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        self._lock = threading.Lock()
        self._unfinished = 0

    def started(self) -> None:
        """A callable handed to the thread, or a stream's `_flush` begun on it."""
        with self._lock:
            self._unfinished += 1

    def finished(self) -> None:
        with self._lock:
            self._unfinished -= 1

    def idle(self) -> bool:
        with self._lock:
            return self._unfinished == 0

    @classmethod
    def of(cls, pub_thread: Any) -> IOPubLedger:
        """The one ledger of `pub_thread` (stdout and stderr share the thread)."""
        with _LEDGERS_LOCK:
            ledger = getattr(pub_thread, "_flow_ledger", None)
            if ledger is None:
                ledger = cls(pub_thread)
                pub_thread._flow_ledger = ledger
            return ledger


class FlowOutStream(OutStream):
    def __init__(self, session: Any, pub_thread: Any, name: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(session, pub_thread, name, *args, **kwargs)
        # The ledger wraps `schedule` before anything is written to this stream.
        self._ledger = IOPubLedger.of(pub_thread)

    def _flush(self) -> None:
        # Counted as running before it clears `_flush_pending` (in OutStream._flush), so a
        # flush that reads the flag cleared sees this one in progress.
        self._ledger.started()
        try:
            super()._flush()
        finally:
            self._ledger.finished()

    def flush(self) -> None:
        if self._nothing_to_wait_for():
            return
        super().flush()

    def _nothing_to_wait_for(self) -> bool:
        """Only in the process that owns the IOPub thread, from another thread than it."""
        pub = self.pub_thread
        if pub is None or pub.thread is None or not pub.thread.is_alive() or not self._is_master_process() \
                or pub.thread.ident == threading.current_thread().ident:
            return False
        # The flags first, the ledger after: a `_flush` counts itself before it clears its flag.
        return not self._flush_pending and not self._subprocess_flush_pending and self._ledger.idle()


__all__ = ["FlowOutStream", "IOPubLedger"]

"""The kernel's stdout and stderr: ipykernel's `OutStream`, whose `flush` waits for the
IOPub thread only when the stream itself has something on its way.

ipykernel flushes both streams before each `execute_reply` and again before the `idle`
status: four flushes a cell. Each one hands two callables to the IOPub thread (two zmq
sends that wake it) and blocks until the second has run: a thread round trip each. A
Flow cell writes nothing to Python's stdout or stderr in the common case (its prints,
results and views are iopub messages the kernel sends itself), so a flush is a barrier
for the stream's own text only: when nothing is buffered, no flush of the stream is
pending or running, and what its last flush handed to the thread has been sent, the
flush returns at once. Text written to the stream (a magic's or a host-side tool's
print, a Python warning) is still sent before the reply.

The kernel's other iopub messages (`execute_result`, display data, the Flow program's
printed lines) go to the IOPub thread in the order they are made, before the reply is
made, and `idle` follows them on the same socket; the reply travels on the shell socket,
whose order relative to iopub the protocol leaves open (front ends gather a request's
outputs until its `idle`).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from ipykernel.iostream import OutStream


class FlowOutStream(OutStream):
    def __init__(self, session: Any, pub_thread: Any, name: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(session, pub_thread, name, *args, **kwargs)
        self._unsent_lock = threading.Lock()
        self._unsent = 0  # `_flush` calls begun whose messages the IOPub thread has not sent yet
        # A child forked while another thread held the lock would block on it for good; in
        # the child the IOPub thread does not run, and what it is handed runs at once.
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        self._unsent_lock = threading.Lock()
        self._unsent = 0

    def _count(self, change: int) -> None:
        with self._unsent_lock:
            self._unsent += change

    def _flush(self) -> None:
        # Counted before it clears `_flush_pending` (in OutStream._flush), so a flush that
        # reads the flag cleared sees this one on its way.
        self._count(1)
        try:
            super()._flush()
        finally:
            # `_flush` handed its messages to the thread, which runs what it is handed in
            # order: the count falls once they have been sent.
            self._schedule_on_thread(lambda: self._count(-1))

    def _schedule_on_thread(self, action: Any) -> None:
        pub = self.pub_thread
        if pub is None:
            action()
        else:
            pub.schedule(action)

    def flush(self) -> None:
        """When it returns, what was written to the stream before it has been sent."""
        if self._nothing_to_send():
            return
        super().flush()
        if not self._nothing_to_send():
            # ipykernel's flush returns once the thread ran its `_flush`, whose messages
            # the thread sends after that: one more round trip, and they have been.
            super().flush()

    def _nothing_to_send(self) -> bool:
        """Only in the process that owns the IOPub thread, from another thread than it."""
        pub = self.pub_thread
        if pub is None or pub.thread is None or not pub.thread.is_alive() or not self._is_master_process() \
                or pub.thread.ident == threading.current_thread().ident:
            return False
        # The flags first, the count after: a `_flush` counts itself before it clears its flag.
        if self._flush_pending or self._subprocess_flush_pending:
            return False
        with self._unsent_lock:
            return self._unsent == 0


__all__ = ["FlowOutStream"]

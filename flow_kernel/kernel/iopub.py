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

The IOPub thread (`FlowIOPubThread`) sends a message on the socket from the thread that
hands it over when nothing handed to the thread before is still waiting to run. ipykernel
hands every message to the thread, which wakes, takes the interpreter's lock and sends:
a thread hand-over for each of a cell's `busy`, `execute_input`, result and `idle`, while
the main thread goes on with the cell. The order of all IOPub messages is kept: a message
goes out at once only while the count of callables handed to the thread and not yet run
is zero, read under the lock that every use of the socket holds (the thread's sends, its
reads of subscriptions, the direct sends), so nothing handed over earlier can still be on
its way; else it is handed to the thread behind them, as ipykernel does. zmq's rule that a
socket is used by one thread at a time is the same lock. The XPUB socket's subscriptions
are read on the thread, which answers each with its `iopub_welcome`; a send from another
thread can take the wake-up that announced a subscription (zmq's descriptor signals
changes, not states), so after every send the socket's events are read and a pending
subscription is handed to the thread. A message sent by a thread in the middle of its own
send (a finalizer the garbage collector runs there) is handed to the thread too, so no
message is sent inside another. A forked child, a stopped thread and the thread itself
send as ipykernel does.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import zmq
from ipykernel.iostream import IOPubThread, OutStream

from flow_kernel.kernel.frames import send_frames


class FlowIOPubThread(IOPubThread):
    """ipykernel's IOPub thread, whose `send_multipart` sends on the socket at once, from
    the calling thread, when nothing handed to the thread before is waiting to run
    (module docstring). What the thread runs and sends, in which order, is ipykernel's."""

    def __init__(self, socket: Any, pipe: bool = False, session: Any = False) -> None:
        # Before ipykernel's __init__, which sets up the subscription reader.
        self._socket_lock = threading.RLock()  # every use of the socket; the count below
        self._handed = 0  # callables handed to the thread and not run yet
        self._sending = False  # a send from another thread than the IOPub thread is under way
        super().__init__(socket, pipe=pipe, session=session)
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        self._socket_lock = threading.RLock()
        self._handed = 0
        self._sending = False

    def schedule(self, f: Any) -> None:
        """Run `f` on the thread, after everything handed to it before (at once when the
        thread does not run); counted until it has run."""
        def run() -> None:
            try:
                f()
            finally:
                with self._socket_lock:
                    self._handed -= 1

        with self._socket_lock:
            self._handed += 1
        super().schedule(run)

    def send_multipart(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        """Send the message after every message handed over before it: now, from this
        thread, when nothing handed to the IOPub thread waits to run; else on the thread.
        A message sent while this thread's own send is under way (a finalizer the
        garbage collector ran in it, a signal handler) is handed to the thread, which
        sends it once that send is complete."""
        if threading.get_ident() != self.thread.ident and self._is_master_process() and not args \
                and kwargs.keys() <= {"copy", "track"}:  # what `Session.send` passes
            with self._socket_lock:
                if self._handed == 0 and not self._sending and not self._stopped and self.thread.is_alive() \
                        and self.socket is not None:
                    self._sending = True
                    try:
                        self._send_on_socket(msg, kwargs.get("copy", True), kwargs.get("track", False))
                    finally:
                        self._sending = False
                    return
        super().send_multipart(msg, *args, **kwargs)

    def _really_send(self, *args: Any, **kwargs: Any) -> None:
        """The thread's send (ipykernel's), under the socket's lock."""
        with self._socket_lock:
            super()._really_send(*args, **kwargs)
            if self.socket is not None and self._is_master_process():
                self._look_for_subscriptions()

    def _send_on_socket(self, msg: Any, copy: bool, track: bool) -> None:
        """Send with the socket's lock held (kernel/frames.py); the socket may be closing at
        shutdown, where a message is dropped as ipykernel's thread drops it."""
        socket = self.socket
        try:
            if isinstance(socket, zmq.Socket):
                send_frames(socket, msg, copy, track)
            else:  # a socket-like object (ipykernel's threads take those too)
                socket.send_multipart(msg, copy=copy, track=track)
        except zmq.ZMQError as exc:
            if exc.errno == zmq.ENOTSOCK:
                return
            raise
        self._look_for_subscriptions()

    def _look_for_subscriptions(self) -> None:
        """With the socket's lock held, after a send: the send may have consumed the
        descriptor's signal of a subscription, so one waiting is handed to the thread."""
        socket = self.socket
        if isinstance(socket, zmq.Socket) and int(socket.getsockopt(zmq.EVENTS)) & zmq.POLLIN:
            self.io_loop.add_callback(self._read_subscriptions)

    def stop(self) -> None:
        """ipykernel's stop; no send from another thread starts once it has begun."""
        with self._socket_lock:
            self._stopped = True
        super().stop()

    def _setup_xpub_listener(self) -> None:
        """Read the XPUB socket's subscriptions on the thread, under the socket's lock (in
        place of ipykernel's `ZMQStream`, which would use the socket without it)."""
        if hasattr(self.socket, "getsockopt") and self.socket.getsockopt(zmq.TYPE) == zmq.XPUB:
            self.io_loop.add_handler(self.socket, self._on_socket_events, self.io_loop.READ)

    def _on_socket_events(self, _fd: Any, _events: int) -> None:
        self._read_subscriptions()

    def _read_subscriptions(self) -> None:
        """On the thread: answer every subscription waiting on the socket with its welcome."""
        while True:
            with self._socket_lock:
                socket = self.socket
                if socket is None or socket.closed or not socket.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                    return
                try:
                    frames = socket.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    return
                self._handle_subscription(frames)


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


__all__ = ["FlowIOPubThread", "FlowOutStream"]

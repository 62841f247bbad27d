"""The kernel's IOPub thread (kernel/iopub.py `FlowIOPubThread`): a message goes out from
the thread that hands it over when nothing handed to the IOPub thread before waits to run
or is running; else it waits behind that, so no message overtakes an earlier one. The
XPUB socket's subscriptions are still answered with a welcome when the sends from other
threads take the socket's wake-up."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import zmq
from jupyter_client.session import Session

from flow_kernel.kernel.iopub import FlowIOPubThread, FlowOutStream
from tests.kernel.kernel_helpers import end_gc_task

HANG_GUARD = 10  # seconds: only for a test that would otherwise never end


class RecordingSocket:
    """A PUB socket's stand-in: each send, and the name of the thread that made it."""

    def __init__(self, context: zmq.Context[Any]) -> None:
        self.context = context
        self.sent: list[tuple[str, list[bytes]]] = []
        self.closed = False

    def getsockopt(self, option: int) -> int:
        return zmq.PUB if option == zmq.TYPE else 0

    def send_multipart(self, msg: list[bytes], *_args: Any, **_kwargs: Any) -> None:
        self.sent.append((threading.current_thread().name, list(msg)))

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def recorded() -> Iterator[tuple[FlowIOPubThread, RecordingSocket]]:
    context: zmq.Context[Any] = zmq.Context()
    socket = RecordingSocket(context)
    thread = FlowIOPubThread(socket)
    thread.start()
    yield thread, socket
    end_gc_task(thread)
    thread.stop()
    thread.close()
    context.term()


def _drain(thread: FlowIOPubThread) -> None:
    """Return once the thread has run everything handed to it so far."""
    done = threading.Event()
    thread.schedule(done.set)
    assert done.wait(HANG_GUARD)


def _hold(thread: FlowIOPubThread) -> threading.Event:
    """Keep the thread inside a callable it has taken off its queue, until the returned
    event is set."""
    inside, release = threading.Event(), threading.Event()

    def held() -> None:
        inside.set()
        release.wait(HANG_GUARD)

    thread.schedule(held)
    assert inside.wait(HANG_GUARD)
    return release


def test_with_nothing_handed_over_a_message_goes_out_from_the_sending_thread(recorded: Any) -> None:
    thread, socket = recorded
    thread.send_multipart([b"status"])
    assert socket.sent == [(threading.current_thread().name, [b"status"])]  # sent before the call returned


def test_a_message_waits_behind_a_callable_the_thread_is_running(recorded: Any) -> None:
    thread, socket = recorded
    release = _hold(thread)  # taken off the queue: the queue is empty, the callable not done
    thread.send_multipart([b"first"])
    other = threading.Thread(target=thread.send_multipart, args=([b"second"],), name="other")
    other.start()
    other.join()
    assert socket.sent == []  # both wait behind the running callable
    release.set()
    _drain(thread)
    assert socket.sent == [("IOPub", [b"first"]), ("IOPub", [b"second"])]


def test_a_stream_flushed_before_a_message_is_sent_before_it(recorded: Any) -> None:
    thread, socket = recorded
    stream = FlowOutStream(Session(), thread, "stdout", watchfd=False)
    stream.write("printed by the host\n")
    stream.flush()
    thread.send_multipart([b"execute_result"])  # at once, or behind what the flush left on the thread
    _drain(thread)
    kinds = [b"execute_result" if parts == [b"execute_result"] else b"stream" for _name, parts in socket.sent]
    assert kinds == [b"stream", b"execute_result"]


def test_a_subscription_is_welcomed_when_a_direct_send_took_the_sockets_wake_up() -> None:
    context: zmq.Context[Any] = zmq.Context()
    xpub = context.socket(zmq.XPUB)
    xpub.bind("inproc://flow-iopub-thread-test")
    thread = FlowIOPubThread(xpub, session=Session())
    thread.start()
    sub = context.socket(zmq.SUB)
    try:
        loop_free = threading.Event()
        thread.io_loop.add_callback(lambda: loop_free.wait(HANG_GUARD))  # the thread's loop reads nothing meanwhile
        sub.connect("inproc://flow-iopub-thread-test")
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        # Sends from this thread until one reaches the subscriber: the socket has then
        # taken in the subscription (and the wake-up that announced it) during a send.
        for _ in range(10_000):
            thread.send_multipart([b"tick"])
            if sub.poll(1):
                break
        else:
            pytest.fail("the subscriber never received a message")
        loop_free.set()
        while True:
            assert sub.poll(HANG_GUARD * 1000), "no iopub_welcome"
            frames = sub.recv_multipart()
            if frames != [b"tick"]:
                break
        header = Session().unpack(frames[frames.index(b"<IDS|MSG>") + 2])
        assert header["msg_type"] == "iopub_welcome"
    finally:
        sub.close(linger=0)
        end_gc_task(thread)
        thread.stop()
        thread.close()
        context.term()


def test_a_message_sent_in_the_middle_of_a_send_waits_for_it_to_end(recorded: Any) -> None:
    """A finalizer the garbage collector runs inside a send (a widget's `comm_close`) sends
    from the same thread while the socket is mid-message: it goes after the message."""
    thread, socket = recorded
    steps: list[tuple[str, bytes]] = []
    record = socket.send_multipart

    def send(msg: list[bytes], *args: Any, **kwargs: Any) -> None:
        steps.append(("begin", msg[0]))
        if msg == [b"outer"]:
            thread.send_multipart([b"nested"])
        record(msg, *args, **kwargs)
        steps.append(("end", msg[0]))

    socket.send_multipart = send  # type: ignore[method-assign]
    thread.send_multipart([b"outer"])
    _drain(thread)
    assert steps == [("begin", b"outer"), ("end", b"outer"), ("begin", b"nested"), ("end", b"nested")]
    assert [name for name, _parts in socket.sent] == [threading.current_thread().name, "IOPub"]


def test_a_socket_like_object_without_zmq_options_is_sent_on() -> None:
    """ipykernel's threads take socket-like objects (its `DummySocket`): one with no
    `getsockopt` is sent on, with no look for subscriptions."""

    class Plain:
        def __init__(self, context: zmq.Context[Any]) -> None:
            self.context = context
            self.sent: list[list[bytes]] = []

        def send_multipart(self, msg: list[bytes], *_args: Any, **_kwargs: Any) -> None:
            self.sent.append(list(msg))

    context: zmq.Context[Any] = zmq.Context()
    socket = Plain(context)
    thread = FlowIOPubThread(socket)
    thread.start()
    try:
        thread.send_multipart([b"direct"])
        release = _hold(thread)
        thread.send_multipart([b"queued"])
        release.set()
        _drain(thread)
        assert socket.sent == [[b"direct"], [b"queued"]]
    finally:
        end_gc_task(thread)
        thread.stop()
        context.term()

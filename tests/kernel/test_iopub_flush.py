"""The kernel's stdout/stderr (kernel/iopub.py): a flush waits for the IOPub thread only
when the stream's own text is on its way — a barrier for what was written to it, no
thread round trip when nothing was (whatever else the thread has to send)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import zmq
from ipykernel.iostream import IOPubThread
from jupyter_client.session import Session

from flow_kernel.kernel.iopub import FlowIOPubThread, FlowOutStream
from tests.kernel.kernel_helpers import end_gc_task


@pytest.fixture(params=[IOPubThread, FlowIOPubThread])
def pub(request: Any) -> Iterator[tuple[IOPubThread, list[Any], list[Callable[[], Any]]]]:
    context = zmq.Context()
    socket = context.socket(zmq.PUB)
    socket.bind("inproc://flow-iopub-test")
    thread = request.param(socket)
    sent: list[Any] = []
    thread._really_send = lambda msg, *a, **k: sent.append(msg)  # type: ignore[method-assign]
    scheduled: list[Callable[[], Any]] = []
    original = thread.schedule

    def counting(f: Callable[[], Any]) -> None:  # every callable handed to the thread
        scheduled.append(f)
        original(f)

    thread.schedule = counting  # type: ignore[method-assign]
    thread.start()
    yield thread, sent, scheduled
    end_gc_task(thread)
    thread.stop()
    thread.close()
    context.term()


def _stream(thread: IOPubThread) -> FlowOutStream:
    return FlowOutStream(Session(), thread, "stdout", watchfd=False)


def test_a_flush_with_nothing_to_send_hands_nothing_to_the_iopub_thread(pub: Any) -> None:
    thread, _sent, scheduled = pub
    stream = _stream(thread)
    before = len(scheduled)
    for _ in range(4):  # what ipykernel does around each cell's reply
        stream.flush()
    assert len(scheduled) == before  # ipykernel's OutStream: two callables and a wait each


def test_what_was_written_is_handed_on_by_the_flush(pub: Any) -> None:
    thread, sent, _scheduled = pub
    stream = _stream(thread)
    stream.write("hello\n")
    stream.flush()  # the stream's message is handed to the thread ...
    stream.flush()  # ... and sent before this one returns
    assert len(sent) == 1 and b"hello" in b"".join(p for p in sent[0] if isinstance(p, bytes))


def test_a_flush_with_nothing_of_its_own_does_not_wait_for_other_messages(pub: Any) -> None:
    """The cell's `execute_result` goes to the IOPub thread, which sends it before `idle`;
    the flushes before the reply do not wait for it when the stream has nothing."""
    thread, _sent, _scheduled = pub
    stream = _stream(thread)
    release = threading.Event()
    thread.schedule(lambda: release.wait(30))  # the thread is busy ...
    thread.send_multipart([b"execute_result"])  # ... with this queued behind
    try:
        flushed = threading.Thread(target=stream.flush)
        flushed.start()
        flushed.join(10)
        assert not flushed.is_alive(), "the flush waited for a message that is not the stream's"
    finally:
        release.set()


def test_a_flush_waits_for_the_streams_text_queued_behind_other_messages(pub: Any) -> None:
    thread, sent, _scheduled = pub
    stream = _stream(thread)
    release = threading.Event()
    thread.schedule(lambda: release.wait(30))  # the thread is busy: the text waits behind
    stream.write("printed\n")
    _flush_waits_for(stream, release, "the flush returned before the stream's text was sent")
    assert any(b"printed" in b"".join(p for p in m if isinstance(p, bytes)) for m in sent)


def test_a_flush_waits_for_what_the_streams_last_flush_handed_on(pub: Any) -> None:
    """The stream's `_flush` ran (its flag cleared, its count back) but the message it
    handed to the thread is still queued there: a flush waits until it is sent."""
    thread, sent, _scheduled = pub
    handed, release = threading.Event(), threading.Event()

    class Queueing(Session):
        def send(self, *args: Any, **kwargs: Any) -> Any:  # called by `_flush`, on the thread
            thread.schedule(lambda: release.wait(30))  # the message goes behind this
            result = super().send(*args, **kwargs)
            handed.set()
            return result

    stream = FlowOutStream(Queueing(), thread, "stdout", watchfd=False)
    stream.write("queued\n")  # `_flush` runs on the thread's timer, flush_interval later
    assert handed.wait(30)
    _flush_waits_for(stream, release, "the flush returned while the stream's message was queued")
    assert len(sent) == 1


def test_a_flush_of_new_text_returns_once_the_text_is_sent(pub: Any) -> None:
    """ipykernel's flush returns once the thread ran the stream's `_flush` (the two callables
    it hands over run in one batch); the message that `_flush` handed on is sent after
    that, here behind a held callable: the flush waits for it too."""
    thread, sent, scheduled = pub
    first, release = threading.Event(), threading.Event()

    class Queueing(Session):
        def send(self, *args: Any, **kwargs: Any) -> Any:  # called by `_flush`, on the thread
            thread.schedule(lambda: release.wait(30))
            return super().send(*args, **kwargs)

    stream = FlowOutStream(Queueing(), thread, "stdout", watchfd=False)
    thread.schedule(lambda: first.wait(30))  # the thread is busy ...
    stream.write("new\n")
    before = len(scheduled)
    flushed = threading.Thread(target=stream.flush)
    flushed.start()
    for _ in range(3000):  # ... until the flush has handed over its `_flush` and its signal
        if len(scheduled) >= before + 2:
            break
        time.sleep(0.01)
    first.set()
    flushed.join(0.3)
    assert flushed.is_alive(), "the flush returned while the text it flushed was unsent"
    release.set()
    flushed.join(30)
    assert not flushed.is_alive()
    assert len(sent) == 1


def test_a_flush_waits_for_a_timed_flush_running_on_the_thread(pub: Any) -> None:
    """Written, then flushed by the thread's own timer (not a scheduled callable): a flush
    from the kernel while that `_flush` runs, its pending flag already cleared, waits for
    it (the `_flush` counts itself before it clears the flag)."""
    thread, sent, _scheduled = pub
    inside, release = threading.Event(), threading.Event()

    class Holding(Session):
        def msg(self, *args: Any, **kwargs: Any) -> Any:  # called by `_flush` after it cleared its flag
            inside.set()
            release.wait(30)
            return super().msg(*args, **kwargs)

    stream = FlowOutStream(Holding(), thread, "stdout", watchfd=False)
    stream.write("late\n")  # `_flush` runs on the thread's timer, flush_interval later
    assert inside.wait(30)
    _flush_waits_for(stream, release, "the flush returned while the stream's own flush was running")
    stream.flush()
    assert len(sent) == 1


def _flush_waits_for(stream: Any, release: threading.Event, why: str) -> None:
    """`stream.flush()` from another thread is still waiting 0.3 s later, and returns once
    `release` lets the thread go on."""
    flushed = threading.Thread(target=stream.flush)
    flushed.start()
    flushed.join(0.3)
    assert flushed.is_alive(), why
    release.set()
    flushed.join(30)
    assert not flushed.is_alive(), "the flush did not return after the thread went on"


def test_a_child_forked_while_the_count_is_locked_can_still_write(pub: Any) -> None:
    thread, _sent, _scheduled = pub
    stream = _stream(thread)
    with stream._unsent_lock:  # another thread of the kernel, mid-count, at the fork
        pid = os.fork()
        if pid == 0:  # the child: its IOPub thread is not running; a write and flush run inline
            try:
                stream.write("child\n")
                stream.flush()
            finally:
                os._exit(0)
    for _ in range(300):  # the old lock, copied held, would block the child for good
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child blocked on the count's lock")
    assert os.waitstatus_to_exitcode(status) == 0

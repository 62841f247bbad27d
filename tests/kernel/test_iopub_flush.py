"""The kernel's stdout/stderr (kernel/iopub.py): a flush waits for the IOPub thread only
when something is left to send — still a barrier for what was buffered or handed to the
thread before it, no thread round trip when nothing was."""

from __future__ import annotations

import asyncio
import contextlib
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

from flow_kernel.kernel.iopub import FlowOutStream


@pytest.fixture
def pub() -> Iterator[tuple[IOPubThread, list[Any], list[Callable[[], Any]]]]:
    context = zmq.Context()
    socket = context.socket(zmq.PUB)
    socket.bind("inproc://flow-iopub-test")
    thread = IOPubThread(socket)
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
    _end_gc_task(thread)
    thread.stop()
    thread.close()
    context.term()


def _end_gc_task(thread: IOPubThread) -> None:
    """Cancel the thread's event-pipe gc task on its own loop and wait until it has ended.
    ipykernel's `stop()` cancels it only after the loop has stopped, so it is destroyed
    pending and asyncio prints "Task was destroyed but it is pending!" at exit."""

    async def end() -> None:
        for _ in range(1000):  # the thread starts the task as it starts its loop: maybe not yet
            if (task := thread._event_pipe_gc_task) is not None:
                break
            await asyncio.sleep(0.001)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    asyncio.run_coroutine_threadsafe(end(), thread.io_loop.asyncio_loop).result(10)


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


def test_a_flush_waits_for_what_was_handed_to_the_thread_before_it(pub: Any) -> None:
    """The cell's `execute_result` goes to the IOPub thread; the flush before the reply
    must not return while the thread has not sent it."""
    thread, sent, _scheduled = pub
    stream = _stream(thread)
    release = threading.Event()
    thread.schedule(lambda: release.wait(30))  # the thread is busy ...
    thread.send_multipart([b"execute_result"])  # ... with this queued behind
    _flush_waits_for(stream, release, "the flush returned while a message handed to the thread was unsent")
    assert sent == [[b"execute_result"]]


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


def test_a_child_forked_while_the_ledger_is_locked_can_still_write(pub: Any) -> None:
    thread, _sent, _scheduled = pub
    stream = _stream(thread)
    with stream._ledger._lock:  # another thread of the kernel, mid-count, at the fork
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
        pytest.fail("the forked child blocked on the ledger's lock")
    assert os.waitstatus_to_exitcode(status) == 0

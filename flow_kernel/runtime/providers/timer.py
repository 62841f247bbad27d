"""A sleep that ends at its deadline, not up to a millisecond after it: the scripted
provider's latency (`slow(50ms, …)`, local.py).

asyncio's selector loop waits for its next timer in `epoll_wait`, whose timeout is whole
milliseconds rounded up, so a timer fires 0–1 ms late; timers due within a millisecond of
each other (the calls of one wave of a fan-out) wake the loop one rounded wait after the
other. A provider's real reply is a socket the loop hears the moment it is readable. So that
a scripted agent's latency is what the program says, on Linux the sleeps of a loop share one
timerfd (CLOCK_MONOTONIC, the loop's own clock, armed at the earliest deadline with
nanoseconds), which the loop's selector watches like any socket: no thread, no GIL hand-over
(a timer thread's wake-up waits for the GIL, up to the switch interval under load). The fd
exists while sleeps are pending and is closed when the last one ends or is cancelled.
Elsewhere (no timerfd, a loop without `add_reader`) it is `asyncio.sleep`.

A sleep never ends before its deadline: an entry fires only once the loop's clock reads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import heapq
import itertools
import math
import os
import sys
import weakref
from typing import Any

_CLOCK_MONOTONIC = 1  # time.monotonic's clock, which asyncio's `loop.time()` reads
# The farthest ahead the fd is armed, in seconds (a day, as asyncio's selector waits at most):
# a later deadline is reached by arming again when the fd fires. A `timespec`'s seconds are
# a C long, and a deadline past it would be refused (EINVAL) or wrap.
MAX_ARM = 86_400.0
_TFD_NONBLOCK, _TFD_CLOEXEC, _TFD_TIMER_ABSTIME = 0o4000, 0o2000000, 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _load_libc() -> Any:
    """The C library's timerfd functions, or None where there are none (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        create, settime = libc.timerfd_create, libc.timerfd_settime
    except (OSError, AttributeError):
        return None
    create.argtypes, create.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec), ctypes.c_void_p]
    settime.restype = ctypes.c_int
    return libc


_libc = _load_libc()


class _LoopTimers:
    """The pending sleeps of one loop, by deadline, behind one armed timerfd."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        self.loop = loop
        self.fd = fd
        self.heap: list[tuple[float, int, asyncio.Future[None]]] = []
        self.order = itertools.count()  # equal deadlines end in the order they were asked
        self.pending = 0  # sleeps not yet ended (fired or cancelled)
        self.armed: float | None = None  # the deadline the fd is set to

    def wait(self, delay: float) -> asyncio.Future[None]:
        future: asyncio.Future[None] = self.loop.create_future()
        when = self.loop.time() + delay
        heapq.heappush(self.heap, (when, next(self.order), future))
        self.pending += 1
        future.add_done_callback(self._ended)
        if self.armed is None or when < self.armed:
            self._arm(when)
        return future

    def _arm(self, when: float) -> None:
        """Arm the fd at `when`, or at most `MAX_ARM` ahead (it fires, finds nothing due, and
        is armed again)."""
        when = min(when, self.loop.time() + MAX_ARM)
        seconds = math.floor(when)
        nanoseconds = min(999_999_999, math.ceil((when - seconds) * 1e9))  # never before `when`
        spec = _Itimerspec(_Timespec(0, 0), _Timespec(seconds, nanoseconds))
        if _libc.timerfd_settime(self.fd, _TFD_TIMER_ABSTIME, ctypes.byref(spec), None) != 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime failed")
        self.armed = when

    def fire(self) -> None:
        """The fd is readable: end every sleep whose deadline the clock has reached, and arm
        the fd at the next one."""
        self.armed = None
        now = self.loop.time()
        heap = self.heap
        while heap and heap[0][0] <= now:
            future = heapq.heappop(heap)[2]
            if not future.done():
                future.set_result(None)
        while heap and heap[0][2].done():  # cancelled ones at the front
            heapq.heappop(heap)
        if heap:
            self._arm(heap[0][0])  # setting it again makes it unreadable until then
        else:
            with contextlib.suppress(BlockingIOError):  # its expiry read: unreadable until armed again
                os.read(self.fd, 8)

    def _ended(self, future: asyncio.Future[None]) -> None:
        self.pending -= 1
        if self.pending == 0:
            self.close()

    def close(self) -> None:
        """No sleep is pending: the fd goes (a later sleep makes a new one)."""
        if _TIMERS.get(self.loop) is self:
            del _TIMERS[self.loop]
        self.heap.clear()
        self.loop.remove_reader(self.fd)
        os.close(self.fd)


_TIMERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopTimers] = weakref.WeakKeyDictionary()


def _timers(loop: asyncio.AbstractEventLoop) -> _LoopTimers | None:
    """The loop's timers, made on its first pending sleep; None where there can be none."""
    timers = _TIMERS.get(loop)
    if timers is not None or _libc is None:
        return timers
    fd = _libc.timerfd_create(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC)
    if fd < 0:
        return None
    timers = _LoopTimers(loop, fd)
    try:
        loop.add_reader(fd, timers.fire)
    except (NotImplementedError, RuntimeError):  # a loop that watches no fds (Windows' proactor)
        os.close(fd)
        return None
    _TIMERS[loop] = timers
    return timers


async def precise_sleep(delay: float) -> None:
    """Wait `delay` seconds: until the loop's clock reads the deadline, woken at it."""
    if delay <= 0:
        await asyncio.sleep(0)
        return
    loop = asyncio.get_running_loop()
    timers = _timers(loop)
    if timers is None:
        await asyncio.sleep(delay)
        return
    await timers.wait(delay)

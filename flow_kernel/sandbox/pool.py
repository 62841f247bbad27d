"""Sandboxes kept warm, started only as the work needs them: a finished run's process
waits for the next run, a run that finds none idle waits for one to be released, and a
new process starts only when nothing would come back (nothing runs or starts) or a run
has waited as long as a start takes, one start at a time, up to the cap.
`warm` processes are kept started while nothing runs (a recycled one is replaced in the
background, warmed up); one more than that sitting idle for `idle_release_s` is closed.

A run owns its process: deadlines and cancellation first ask the sandbox to stop,
then kill it after a grace period; a process is recycled after a run that ended
in `isolate`, was killed, or grew the wasm heap a lot (wasm memory never shrinks), or
its stack past the OS's default (freeing a deeply nested value; sandbox/stack.py).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flow_kernel.errors import (
    FATAL,
    FlowCancelledError,
    FlowError,
    FlowIsolateError,
    LimitExceededError,
    WorkflowTimeoutError,
)
from flow_kernel.sandbox import stack
from flow_kernel.sandbox.install import ensure_snapshot
from flow_kernel.sandbox.node import find_node
from flow_kernel.sandbox.process import Handler, Notify, SandboxProcess

GRACE = 1.0  # seconds a sandbox gets to stop by itself before it is killed
WARM_UP_TIMEOUT = 30.0
RECYCLE_GROWTH = 64 * 1024 * 1024
# A run that finds every process busy waits for one to be released as long as a start
# takes (the pool's last start, within SPAWN_AFTER_BOUNDS; SPAWN_AFTER before the first)
# before it starts another, one start at a time (parallel starts share the same cores:
# none is ready sooner). A start costs ~0.6 s of CPU and ~90 MB and only helps a run that
# no release would serve sooner: runs that give their process back in milliseconds (an
# eval's items with a mock model) share one; runs that hold theirs for seconds (a model's
# answer, a background run) grow the pool up to the cap.
SPAWN_AFTER = 0.5
SPAWN_AFTER_BOUNDS = (0.1, 2.0)
IDLE_RELEASE = 60.0  # seconds a process beyond `warm` may sit idle before it is closed
# A run that ended with one of these leaves a process that may be stuck, killed or half
# torn down: it is not reused. A hit `limit-exceeded` is the program's, the process is fine.
RECYCLE_CODES = frozenset(FATAL) - {"limit-exceeded"}


class SandboxPool:
    def __init__(self, *, memory_mb: int = 512, use_snapshot: bool = True, warm: int = 1,
                 max_processes: int | None = None, warm_up: dict[str, Any] | None = None,
                 idle_release_s: float = IDLE_RELEASE) -> None:
        """`max_processes` caps the sandboxes of this pool (the host ceiling `sandboxes`): a run
        that would need one more is refused with `limit-exceeded`, and no process is started
        past it. None: no cap (a pool for one run). `warm`: processes kept started, running
        or idle (a recycled one is replaced by a spare). `warm_up`: a `run` payload of a fixed,
        trusted module that every spare runs before it is handed out (see `_warm_up`).
        `idle_release_s`: how long a process beyond `warm` may sit idle before it is closed."""
        self.memory_mb = memory_mb
        self.warm_up = warm_up
        self.max_processes = max_processes
        self.idle_release_s = idle_release_s
        self.spawn_after = SPAWN_AFTER
        self._waiters: collections.deque[asyncio.Future[SandboxProcess]] = collections.deque()
        self._idle_since: dict[SandboxProcess, float] = {}
        self._trim_timer: asyncio.TimerHandle | None = None
        self._reserved = 0  # runs between the cap check and holding their process
        self.use_snapshot = use_snapshot
        self.warm = warm
        self.snapshot: Path | None = None
        self.idle: list[SandboxProcess] = []
        self.running: set[SandboxProcess] = set()  # processes with a run in them
        self._out: set[SandboxProcess] = set()  # handed out (or on the way to a waiting run), not yet released
        self._starting: set[asyncio.Task[SandboxProcess]] = set()
        self._closing: set[asyncio.Task[None]] = set()  # recycled processes being killed
        self._closed = False
        self.started = 0

    async def _spawn(self, *, warm_up: bool = False) -> SandboxProcess:
        if self.use_snapshot and self.snapshot is None:
            self.snapshot = await asyncio.to_thread(ensure_snapshot, find_node())
        began = time.monotonic()
        process = await SandboxProcess.start(snapshot=self.snapshot, memory_mb=self.memory_mb)
        low, high = SPAWN_AFTER_BOUNDS
        self.spawn_after = min(max(time.monotonic() - began, low), high)
        if warm_up and self.warm_up is not None:
            await self._warm_up(process, self.warm_up)
        self.started += 1
        return process

    @staticmethod
    async def _warm_up(process: SandboxProcess, payload: dict[str, Any]) -> None:
        """The first run in a restored process costs ~100-250 ms more than the next ones: V8
        compiles the wasm functions it reaches for the first time (lazily, Liftoff) and tiers
        up the hot ones (TurboFan) — compiled code is not part of the memory snapshot. A
        spare pays it here, in the background, with a trusted module of the pool's owner, so
        that the cell that lands on it later does not; its events go nowhere and it calls no
        host. A module that fails is no harm (the process is as it was); one that does not
        end marks the process broken."""
        try:
            await asyncio.wait_for(process.request("run", payload), WARM_UP_TIMEOUT)
        except FlowError:
            return
        except TimeoutError:
            await process.kill()
            raise FlowIsolateError("the sandbox did not start: its warm-up run did not end") from None

    def _room(self) -> bool:
        """Whether one more process stays within the cap."""
        held = len(self._out) + len(self.idle) + len(self._starting)
        return self.max_processes is None or held < self.max_processes

    def _refill(self) -> None:
        """Start a spare when fewer than `warm` processes are started: warmed up, unless a run
        already waits for it."""
        if self._closed or len(self._out) + len(self.idle) + len(self._starting) >= self.warm:
            return
        if self._room():
            self._start(warm_up=not self._waiters)

    def _start(self, *, warm_up: bool) -> None:
        """Spawn a process in the background; it joins `idle` when ready. Only a spare is
        warmed up: a process a run is waiting for (the prestarted one, one spawned for a
        run) would make that run wait for the warm-up too, which costs more than the first
        run's own compiles."""
        task = asyncio.ensure_future(self._spawn(warm_up=warm_up))
        self._starting.add(task)

        def done(t: asyncio.Task[SandboxProcess]) -> None:
            self._starting.discard(t)
            if t.cancelled():
                return
            error = t.exception()
            if error is not None:  # the oldest waiting run hears why (it may have asked for it)
                waiter = self._next_waiter()
                if waiter is not None:
                    waiter.set_exception(error)
                return
            self._offer(t.result())

        task.add_done_callback(done)

    def _next_waiter(self) -> asyncio.Future[SandboxProcess] | None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                return waiter
        return None

    def _offer(self, process: SandboxProcess) -> None:
        """Hand a ready process to the oldest waiting run, else keep it idle."""
        if self._closed:
            self._dispose(process)
            return
        waiter = self._next_waiter()
        if waiter is not None:
            self._out.add(process)
            waiter.set_result(process)
            return
        self.idle.append(process)
        self._idle_since[process] = time.monotonic()
        if len(self.idle) > self.warm and self._trim_timer is None:
            self._trim_timer = asyncio.get_running_loop().call_later(self.idle_release_s, self._trim)

    def _trim(self) -> None:
        """Close the processes beyond `warm` that have sat idle `idle_release_s` (the least
        recently used first; `acquire` takes the most recent), and look again later while
        any are left."""
        self._trim_timer = None
        if self._closed:
            return
        now = time.monotonic()
        while len(self.idle) > self.warm:
            oldest = self.idle[0]
            if now - self._idle_since.get(oldest, now) < self.idle_release_s:
                break
            self.idle.pop(0)
            self._idle_since.pop(oldest, None)
            self._dispose(oldest)
        if len(self.idle) > self.warm:
            wait = self.idle_release_s - (now - self._idle_since.get(self.idle[0], now))
            self._trim_timer = asyncio.get_running_loop().call_later(max(wait, 0.01), self._trim)

    def _refuse_past_the_cap(self) -> None:
        # Refused, not queued: a queued run would wait behind a background run for as long as
        # that one runs, with nothing to say so; the refusal says what to do at once.
        if self.max_processes is not None and len(self.running) + self._reserved >= self.max_processes:
            raise LimitExceededError(
                f"{len(self.running) + self._reserved} runs already have a sandbox each, the host ceiling on sandboxes "
                f"({self.max_processes}); wait for one to end (%wait RUN) or the person running the kernel can "
                "raise it with the environment variable FLOW_MAX_SANDBOXES",
                details={"limit": "sandboxes", "value": self.max_processes, "ceiling": "FLOW_MAX_SANDBOXES"})

    async def acquire(self) -> SandboxProcess:
        """A live process for one run: the most recently used idle one; else the first that is
        released or finishes starting. A start is asked for at once when nothing runs or
        starts (nothing would come back), else when none is starting and the run has waited
        `spawn_after` (as long as the last start took) — within the cap."""
        while self.idle:
            process = self.idle.pop()
            self._idle_since.pop(process, None)
            if process.alive:
                self._out.add(process)
                return process
        waiter: asyncio.Future[SandboxProcess] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        waited = False
        try:
            while not waiter.done():
                nothing_comes = not self._starting and not self._out
                if (nothing_comes or (waited and not self._starting)) and self._room():
                    self._start(warm_up=False)
                with contextlib.suppress(TimeoutError):
                    return await asyncio.wait_for(asyncio.shield(waiter), self.spawn_after)
                waited = True
            return waiter.result()
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._out.discard(waiter.result())
                self._offer(waiter.result())  # handed over as this run was cancelled: not lost
            raise
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)

    def release(self, process: SandboxProcess, *, recycle: bool) -> None:
        self._out.discard(process)
        if recycle or not process.alive or self._closed:
            self._dispose(process)
            self._refill()
            return
        self._offer(process)

    def _dispose(self, process: SandboxProcess) -> None:
        task = asyncio.ensure_future(process.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def prestart(self) -> None:
        """Start the warm process now (e.g. when a kernel starts) and wait for it. It is
        started like a spare, so that a run beginning meanwhile (a kernel's first cell)
        waits for it in `acquire` rather than spawning one of its own, and a spare for it."""
        if not self.idle and not self._starting:
            self._start(warm_up=False)
        starting = set(self._starting)
        if starting:
            await asyncio.wait(starting)
            await asyncio.sleep(0)  # let the callbacks put the processes in `idle`
            for task in starting:
                error = None if task.cancelled() else task.exception()
                if error is not None:
                    raise error

    async def run(self, module: str, payload: dict[str, Any], *, handler: Handler, on_notify: Notify,
                  deadline_ms: int | None = None,
                  bind: Callable[[SandboxProcess], None] | None = None,
                  abort: asyncio.Future[FlowError] | None = None) -> dict[str, Any]:
        """Run a module; `bind` receives the process (for host → sandbox calls during the run)
        once the run's request is written, before any line of the sandbox is read. When
        `abort` is done first (the host stopped the run), the process is killed at once,
        with no grace (it may be flooding the host), and its error is raised."""
        self._refuse_past_the_cap()
        self._reserved += 1
        try:
            process = await self.acquire()
        finally:
            self._reserved -= 1
        self.running.add(process)
        process.handler, process.on_notify = handler, on_notify
        recycle = False
        run_id = payload.get("run")
        try:
            # Written now, in this turn: no task of its own, and Node has it a turn sooner.
            request = process.send("run", {**payload, "module": module})
            if bind is not None:
                bind(process)
            await _settled(request, abort, deadline_ms / 1000 if deadline_ms else None)
            if not request.done() and abort is not None and abort.done():
                recycle = True
                await process.kill()
                with contextlib.suppress(BaseException):
                    await request
                raise abort.result()
            if not request.done():
                recycle = True
                own = await self._stop(process, request, run_id, "workflow-timeout")
                raise own or WorkflowTimeoutError("the run ran past its `duration`") from None
            reply: dict[str, Any] = request.result()
            # Growth is measured from the fresh heap the sandbox reported when ready, so a
            # first run that grew it a lot is recycled too (wasm memory never shrinks).
            memory = int(reply.get("memory") or 0)
            recycle = memory - int(process.ready.get("memory") or memory) > RECYCLE_GROWTH \
                or _stack_grew(process, reply)
            return reply
        except asyncio.CancelledError:
            recycle = True
            own = await self._stop(process, request, run_id, "cancelled")
            raise own if own is not None and own.code == "cancelled" else FlowCancelledError("the run was cancelled") from None
        except FlowError as exc:
            recycle = recycle or exc.code in RECYCLE_CODES
            raise
        finally:
            self.running.discard(process)
            process.handler = process.on_notify = process.eager = None
            self.release(process, recycle=recycle)

    def pids(self) -> list[int]:
        """The operating-system ids of the live sandbox processes, running first, then idle
        (for monitoring: memory, or a fault-injection test killing one)."""
        live = [*self.running, *self.idle]
        return [p.pid for p in live if p.alive and p.pid is not None]

    async def _stop(self, process: SandboxProcess, request: asyncio.Future[Any], run_id: Any,
                    reason: str) -> FlowError | None:
        """Ask the run to stop; kill the process if it does not within the grace period.
        Returns the run's own error when it stopped by itself (it carries its location and
        bindings), else None."""
        with contextlib.suppress(FlowError):
            process.notify("cancel", {"run": run_id, "reason": reason})
        with contextlib.suppress(TimeoutError, FlowError):
            await asyncio.wait_for(asyncio.shield(request), GRACE)
        if not request.done():
            await process.kill()
        with contextlib.suppress(BaseException):
            await request
        error = request.exception() if request.done() and not request.cancelled() else None
        if isinstance(error, FlowError) and error.code != "worker-crashed":
            return error
        return None

    async def close(self) -> None:
        self._closed = True
        if self._trim_timer is not None:
            self._trim_timer.cancel()
            self._trim_timer = None
        for task in list(self._starting):
            task.cancel()
        await asyncio.gather(*self._starting, return_exceptions=True)
        await asyncio.gather(*(p.close() for p in self.idle), return_exceptions=True)
        self.idle.clear()
        self._idle_since.clear()
        await asyncio.gather(*self._closing, return_exceptions=True)


def _stack_grew(process: SandboxProcess, reply: dict[str, Any]) -> bool:
    """Whether a run of many steps left its process's main-thread stack grown past
    `stack.RECYCLE_STACK` (asked only then: `stack.STACK_CHECK_STEPS`)."""
    steps = reply.get("steps")
    if not isinstance(steps, int) or steps < stack.STACK_CHECK_STEPS:
        return False
    return stack.stack_bytes(process.pid) > stack.RECYCLE_STACK


async def _settled(reply: asyncio.Future[Any], abort: asyncio.Future[FlowError] | None, timeout: float | None) -> None:
    """Return once `reply` or `abort` is done, or after `timeout` seconds (None: no limit),
    whichever comes first: what `asyncio.wait(..., return_when=FIRST_COMPLETED)` does, with
    one future and a timer instead of a waiter, callbacks and a set, and one loop turn less
    between the reply and the caller. Cancelled, it leaves `reply` and `abort` as they are."""
    if reply.done() or (abort is not None and abort.done()):
        return
    loop = asyncio.get_running_loop()
    woken: asyncio.Future[None] = loop.create_future()

    def wake(_: object = None) -> None:
        if not woken.done():
            woken.set_result(None)

    reply.add_done_callback(wake)
    if abort is not None:
        abort.add_done_callback(wake)
    timer = loop.call_later(timeout, wake) if timeout is not None else None
    try:
        await woken
    finally:
        reply.remove_done_callback(wake)
        if abort is not None:
            abort.remove_done_callback(wake)
        if timer is not None:
            timer.cancel()

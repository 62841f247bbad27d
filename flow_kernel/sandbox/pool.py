"""Sandboxes kept warm, started only as the work needs them: a finished run's process
waits for the next run, a run that finds none idle waits for one to be released, and a
new process starts only when nothing would come back (nothing runs or starts) or a run
has waited as long as a start takes, one start at a time, up to the cap.
`warm` processes are kept started while nothing runs (a recycled one is replaced in the
background, warmed up); one more than that sitting idle for `idle_release_s` is closed.

A run owns its process, unless it names a `group` (an eval's items): then it may join a
process that runs others of its group while all of them wait on the host (sandbox/router.py
routes each one's requests and events), up to SHARED_RUNS. Deadlines and cancellation
first ask the sandbox to stop the run, then kill the process after a grace period (its
co-tenants fail `worker-crashed`, marked `details["shared"]`); a process is recycled after a
run that ended in `isolate`, was killed, or grew the wasm heap a lot (wasm memory never
shrinks), or its stack past the OS's default (freeing a deeply nested value;
sandbox/stack.py) — a shared one once its last run has left, taking no new run meanwhile.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
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
from flow_kernel.sandbox.process import Eager, Handler, Notify, SandboxProcess
from flow_kernel.sandbox.router import RunRouter

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
# The most runs of one group a process holds at once. Runs join only while every run in it
# waits on the host, so CPU-bound runs spread over processes whatever the cap; what it bounds
# is what one crash takes down (its co-tenants run again, their agents called again) and what
# one wasm heap holds. `flow bench --only evals` (50 ms agent, concurrency 50, 2 cores):
# 8 → 146, 16 → 298, 32 → 561, 50 → 770 items/s (one process before: 88): the pool grows one
# start at a time (~0.6 s each), so the figure is set by how many processes the items need.
SHARED_RUNS = 50


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
        # the same waiters of runs that name a group, by group: a shared process may take them
        self._group_waiters: dict[str, collections.deque[asyncio.Future[SandboxProcess]]] = {}
        self._shares: dict[SandboxProcess, RunRouter] = {}  # shared processes with a run in them
        self.shared_runs = SHARED_RUNS
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
        # `running` holds processes (a shared one once), `_reserved` runs that wait for one: a
        # bound on the processes the runs need.
        if self.max_processes is not None and len(self.running) + self._reserved >= self.max_processes:
            raise LimitExceededError(
                f"{len(self.running) + self._reserved} runs already have or await a sandbox, the host ceiling on sandboxes "
                f"({self.max_processes}); wait for one to end (%wait RUN) or the person running the kernel can "
                "raise it with the environment variable FLOW_MAX_SANDBOXES",
                details={"limit": "sandboxes", "value": self.max_processes, "ceiling": "FLOW_MAX_SANDBOXES"})

    async def acquire(self, group: str | None = None) -> SandboxProcess:
        """A live process for one run: the most recently used idle one; else, for a run of a
        `group`, a shared process of that group that may take it (`_joinable`); else the first
        that is released or finishes starting, or (a run of a group) the first shared process
        of its group whose runs all come to wait on the host. A start is asked for at once when
        nothing runs or starts (nothing would come back), else when none is starting and the run
        has waited `spawn_after` (as long as the last start took) — within the cap. A shared
        process handed out is counted in its router's `joining` until the run enters it."""
        while self.idle:
            process = self.idle.pop()
            self._idle_since.pop(process, None)
            if process.alive:
                self._out.add(process)
                return process
        if group is not None:
            router = self._joinable(group)
            if router is not None:
                router.joining += 1
                return router.process  # type: ignore[no-any-return]
        waiter: asyncio.Future[SandboxProcess] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        if group is not None:
            self._group_waiters.setdefault(group, collections.deque()).append(waiter)
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
                process = waiter.result()
                router = self._shares.get(process)
                if router is not None:  # a place in a shared process: given up
                    router.joining -= 1
                    self._leave_if_empty(router)
                else:
                    self._out.discard(process)
                    self._offer(process)  # handed over as this run was cancelled: not lost
            raise
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
            if group is not None:
                queue = self._group_waiters.get(group)
                if queue is not None:
                    with contextlib.suppress(ValueError):
                        queue.remove(waiter)
                    if not queue:
                        del self._group_waiters[group]

    # -- shared processes (runs of one group) -----------------------------------------------------
    def _may_take(self, router: RunRouter) -> bool:
        """Whether a shared process may take one more run of its group now: it is alive and
        not draining, below `shared_runs`, and every run in it waits on the host."""
        return (not router.draining and router.process.alive and self._shares.get(router.process) is router
                and len(router.tenants) + router.joining < self.shared_runs and router.all_waiting())

    def _joinable(self, group: str) -> RunRouter | None:
        for router in self._shares.values():
            if router.group == group and self._may_take(router):
                return router
        return None

    def _offer_place(self, router: RunRouter) -> None:
        """When every run of a shared process waits on the host: its place goes to the oldest
        run of its group waiting for a process (router's `on_waiting`, and after a run left)."""
        if not self._may_take(router):
            return
        queue = self._group_waiters.get(router.group)
        while queue:
            waiter = queue.popleft()
            if not waiter.done():
                router.joining += 1
                waiter.set_result(router.process)
                return

    def _enter(self, process: SandboxProcess, group: str, run_id: str, handler: Handler, on_notify: Notify,
               eager: Eager | None) -> RunRouter:
        """The run in the process: its router's tenant (a new router for a process it is the
        first of)."""
        router = self._shares.get(process)
        if router is None:
            router = self._shares[process] = RunRouter(group, process, self._offer_place)
            router.install()
        else:
            router.joining -= 1
        router.add(run_id, handler, on_notify, eager)
        return router

    def _leave(self, router: RunRouter, run_id: str, *, recycle: bool) -> None:
        """The run out of its shared process: a recycle reason drains the process (no new
        run; closed once the last has left); the runs left may now all be waiting."""
        router.remove(run_id)
        if recycle:
            router.draining = True
        if not self._leave_if_empty(router):
            self._offer_place(router)

    def _leave_if_empty(self, router: RunRouter) -> bool:
        """Give a shared process with no run in it and none on its way back to the pool (or
        close it, when draining); whether it was."""
        if router.tenants or router.joining:
            return False
        process = router.process
        if self._shares.get(process) is router:
            del self._shares[process]
        self.running.discard(process)
        process.handler = process.on_notify = process.eager = None
        self.release(process, recycle=router.draining)
        return True

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
                  eager: Eager | None = None, deadline_ms: int | None = None,
                  bind: Callable[[SandboxProcess], None] | None = None,
                  abort: asyncio.Future[FlowError] | None = None, group: str | None = None) -> dict[str, Any]:
        """Run a module; `bind` receives the process (for host → sandbox calls during the run)
        once the run's request is written, before any line of the sandbox is read. `eager`
        says which requests the bridge may run at once (process.py `Eager`). When `abort` is
        done first (the host stopped the run), the process is killed at once, with no grace
        (it may be flooding the host), and its error is raised. `group`: the run may share a
        process with runs of the same group (module docstring); None: a process of its own.
        A run of a group that fails `worker-crashed` after another run was in its process
        carries `details["shared"] = True` (the crash may be the other's)."""
        if group is not None and not isinstance(payload.get("run"), str):
            raise ValueError("a run of a group names its run id (a string) in its payload")
        self._refuse_past_the_cap()
        self._reserved += 1
        try:
            process = await self.acquire(group)
            while group is not None and (joined := self._shares.get(process)) is not None \
                    and (joined.draining or not process.alive):  # it changed on the way: give the place back
                joined.joining -= 1
                self._leave_if_empty(joined)
                process = await self.acquire(group)
        finally:
            self._reserved -= 1
        run_id: Any = payload.get("run")  # a string for a run of a group (checked above)
        router = None
        if group is None:
            process.handler, process.on_notify, process.eager = handler, on_notify, eager
        else:
            router = self._enter(process, group, run_id, handler, on_notify, eager)
        self.running.add(process)
        recycle = False
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
            if router is not None and exc.code == "worker-crashed" and router.had_company(run_id):
                exc.details["shared"] = True
            raise
        finally:
            if router is None:
                self.running.discard(process)
                process.handler = process.on_notify = process.eager = None
                self.release(process, recycle=recycle)
            else:
                self._leave(router, run_id, recycle=recycle)

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
    # An empty context: the timer is cancelled at almost every run's end, and a cancelled
    # timer stays in the loop's heap until asyncio purges them (once they are over half of
    # more than 100), holding the context it was made in — in a kernel, the cell's request.
    timer = loop.call_later(timeout, wake, context=contextvars.Context()) if timeout is not None else None
    try:
        await woken
    finally:
        reply.remove_done_callback(wake)
        if abort is not None:
            abort.remove_done_callback(wake)
        if timer is not None:
            timer.cancel()

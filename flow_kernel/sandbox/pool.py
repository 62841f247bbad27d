"""Sandboxes kept warm: a started process is waiting when a run begins, and a spare
is started in the background after one is handed out or recycled.

A run owns its process: deadlines and cancellation first ask the sandbox to stop,
then kill it after a grace period; a process is recycled after a run that ended
in `isolate`, was killed, or grew the wasm heap a lot (wasm memory never shrinks).
"""

from __future__ import annotations

import asyncio
import contextlib
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
from flow_kernel.sandbox.install import ensure_snapshot
from flow_kernel.sandbox.node import find_node
from flow_kernel.sandbox.process import Handler, Notify, SandboxProcess

GRACE = 1.0  # seconds a sandbox gets to stop by itself before it is killed
WARM_UP_TIMEOUT = 30.0
RECYCLE_GROWTH = 64 * 1024 * 1024
# A run that ended with one of these leaves a process that may be stuck, killed or half
# torn down: it is not reused. A hit `limit-exceeded` is the program's, the process is fine.
RECYCLE_CODES = frozenset(FATAL) - {"limit-exceeded"}


class SandboxPool:
    def __init__(self, *, memory_mb: int = 512, use_snapshot: bool = True, warm: int = 1,
                 max_processes: int | None = None, warm_up: dict[str, Any] | None = None) -> None:
        """`max_processes` caps the sandboxes of this pool (the host ceiling `sandboxes`): a run
        that would need one more is refused with `limit-exceeded`, and no spare is started
        past it. None: no cap (a pool for one run). `warm_up`: a `run` payload of a fixed,
        trusted module that every new process runs before it is handed out (see `_warm_up`)."""
        self.memory_mb = memory_mb
        self.warm_up = warm_up
        self.max_processes = max_processes
        self._reserved = 0  # runs between the cap check and holding their process
        self.use_snapshot = use_snapshot
        self.warm = warm
        self.snapshot: Path | None = None
        self.idle: list[SandboxProcess] = []
        self.running: set[SandboxProcess] = set()  # processes with a run in them
        self._starting: set[asyncio.Task[SandboxProcess]] = set()
        self._closing: set[asyncio.Task[None]] = set()  # recycled processes being killed
        self._closed = False
        self.started = 0

    async def _spawn(self, *, warm_up: bool = False) -> SandboxProcess:
        if self.use_snapshot and self.snapshot is None:
            self.snapshot = await asyncio.to_thread(ensure_snapshot, find_node())
        process = await SandboxProcess.start(snapshot=self.snapshot, memory_mb=self.memory_mb)
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

    def _live(self) -> int:
        return len(self.running) + len(self.idle) + len(self._starting) + self._reserved

    def _refill(self) -> None:
        if self._closed or len(self.idle) + len(self._starting) >= self.warm:
            return
        if self.max_processes is not None and self._live() >= self.max_processes:
            return
        self._start(warm_up=True)

    def _start(self, *, warm_up: bool) -> None:
        """Spawn a process in the background; it joins `idle` when ready. Only a spare is
        warmed up: a process a run is waiting for (the prestarted one, one spawned for a
        run) would make that run wait for the warm-up too, which costs more than the first
        run's own compiles."""
        task = asyncio.ensure_future(self._spawn(warm_up=warm_up))
        self._starting.add(task)

        def done(t: asyncio.Task[SandboxProcess]) -> None:
            self._starting.discard(t)
            if t.cancelled() or t.exception() is not None:
                return
            process = t.result()
            if self._closed:
                self._dispose(process)
            else:
                self.idle.append(process)

        task.add_done_callback(done)

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
        while self.idle:
            process = self.idle.pop()
            if process.alive:
                self._refill()
                return process
        if self._starting:
            done, _ = await asyncio.wait(set(self._starting), return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if not task.cancelled() and task.exception() is None:
                    await asyncio.sleep(0)  # let its callback put it in `idle`
                    if self.idle:
                        process = self.idle.pop()
                        self._refill()
                        return process
        process = await self._spawn()
        self._refill()
        return process

    def release(self, process: SandboxProcess, *, recycle: bool) -> None:
        if recycle or not process.alive or self._closed:
            self._dispose(process)
            self._refill()
            return
        self.idle.append(process)

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
        """Run a module; `bind` receives the process (for host → sandbox calls during the run).
        When `abort` is done first (the host stopped the run), the process is killed at once,
        with no grace (it may be flooding the host), and its error is raised."""
        self._refuse_past_the_cap()
        self._reserved += 1
        try:
            process = await self.acquire()
        finally:
            self._reserved -= 1
        self.running.add(process)
        process.handler, process.on_notify = handler, on_notify
        if bind is not None:
            bind(process)
        recycle = False
        run_id = payload.get("run")
        request = asyncio.ensure_future(process.request("run", {**payload, "module": module}))
        try:
            timeout = deadline_ms / 1000 if deadline_ms else None
            await asyncio.wait({request} if abort is None else {request, abort}, timeout=timeout,
                               return_when=asyncio.FIRST_COMPLETED)
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
            recycle = memory - int(process.ready.get("memory") or memory) > RECYCLE_GROWTH
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
        for task in list(self._starting):
            task.cancel()
        await asyncio.gather(*self._starting, return_exceptions=True)
        await asyncio.gather(*(p.close() for p in self.idle), return_exceptions=True)
        self.idle.clear()
        await asyncio.gather(*self._closing, return_exceptions=True)

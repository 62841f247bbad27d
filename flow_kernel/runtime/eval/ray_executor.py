"""Items on a Ray cluster (`--executor ray`, docs/eval.md): `ray.init()` starts a local
cluster, or `address` joins one. Each actor is an async Ray actor holding its own warm
sandbox pool and running items with its own host services (`ItemRunner`), from the
program, scorers and `RunSettings` the driver sends it (providers and configuration
travel; an interactive operator cannot). What an item does comes back to the driver: its
record, the events of each of its runs (the driver writes their journals) and the
cassette answers it recorded (the driver writes them into its cassette).

A worker that dies (killed, out of memory, its node gone) loses only the items it had in
flight: each is sent again to a live actor (a new one replaces the dead), at most
`RETRIES` times, and recorded once — the driver keeps the first record of each item and
the dead actor's calls never return one.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
from collections.abc import Callable
from typing import Any

from flow_kernel.lang.compiler import Compiled
from flow_kernel.runtime.eval.data import Case
from flow_kernel.runtime.eval.items import ItemDone, ItemRunner, RunSettings, warm
from flow_kernel.runtime.eval.scorers import Scorer

RETRIES = 3  # times an item is sent again after its worker died under it
PREFETCH = 2  # items an actor holds per sandbox: one running, one waiting (no round trip between items)


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError("--executor ray needs Ray: pip install 'flow-kernel[ray]'") from None
    return ray


STARTS = 3  # tries at starting a local cluster (below)


def start_ray(address: str | None = None, **options: Any) -> Any:
    """`ray.init` here (a local cluster) or at `address`. A local start is tried again when
    it times out: on a loaded machine the raylet gives its dashboard agent a fixed 15 s to
    write its port file and then exits (ray-project/ray#65983), which a second start,
    a few seconds on, does not meet."""
    ray = _ray()
    if ray.is_initialized():
        return ray
    options = {"logging_level": "ERROR", "log_to_driver": False, "include_dashboard": False, **options}
    for attempt in range(1, STARTS + 1):
        try:
            ray.init(address=address, **options)
            return ray
        except Exception as exc:  # Ray raises a bare Exception for this
            if address is not None or attempt == STARTS or "timed out during startup" not in str(exc):
                raise
            ray.shutdown()
    return ray


class EvalWorker:
    """The actor: one warm sandbox pool, items at once up to its share of the concurrency."""

    def __init__(self, compiled: Compiled, workflow: str, scorers: list[Scorer], settings: RunSettings,
                 pool: int, sandbox: bool, name: str) -> None:
        if sandbox:
            from flow_kernel.runtime.executors import SandboxExecutor

            executor: Any = SandboxExecutor(max_processes=pool, warm=1)
        else:
            from flow_kernel.sandbox.inprocess import InProcessExecutor

            executor = InProcessExecutor()
        self.pool = pool
        self._gate: asyncio.Semaphore | None = None  # made on the actor's own event loop
        self.runner = ItemRunner(compiled, workflow, scorers, executor, settings, collect=True, keep_events=True,
                                 worker=f"{name} pid {os.getpid()}")

    async def ready(self) -> int:
        """Start the sandboxes now (not in the first items' latency); the actor's process id."""
        await warm(self.runner.executor, self.pool)
        return os.getpid()

    async def run(self, case: Case, epoch: int) -> ItemDone:
        # The driver keeps more items here than sandboxes (PREFETCH), so that the next one
        # is waiting when one ends; they take turns at the pool.
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.pool)
        try:
            async with self._gate:
                return await self.runner.run(case, epoch)
        except Exception as exc:  # the item fails, the actor lives on
            from flow_kernel.runtime.eval.runner import crashed

            return crashed(case, epoch, exc, self.runner.worker)

    async def close(self) -> None:
        close = getattr(self.runner.executor, "close", None)
        if close is not None:
            await close()


class RayItems:
    def __init__(self, compiled: Compiled, workflow: str, scorers: list[Scorer], settings: RunSettings, *,
                 concurrency: int = 4, workers: int | None = None, address: str | None = None,
                 sandbox: bool = True) -> None:
        self.args = (compiled, workflow, scorers, settings)
        self.concurrency = concurrency
        self.workers = workers
        self.address = address
        self.sandbox = sandbox
        self.actors: list[Any] = []
        self.pids: list[int] = []  # of the live actors, in `actors` order
        self.deaths = 0
        self._started = 0

    def _start_ray(self) -> Any:
        from flow_kernel.runtime.eval.runner import EvalUsageError

        try:
            return start_ray(self.address)
        except ImportError:
            raise
        except Exception as exc:  # an address nobody answers at, a cluster that did not start: said plainly
            where = f"join the Ray cluster at {self.address}" if self.address else "start a local Ray cluster"
            raise EvalUsageError(f"cannot {where}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") \
                from None

    def _new_actor(self, ray: Any, pool: int) -> Any:
        self._started += 1
        worker = ray.remote(num_cpus=1, max_restarts=0)(EvalWorker)
        return worker.options(max_concurrency=pool * PREFETCH + 2).remote(*self.args, pool, self.sandbox, f"ray-{self._started}")

    async def map(self, tasks: list[tuple[Case, int]], done: Callable[[ItemDone], None]) -> None:
        if not tasks:
            return
        ray = self._start_ray()
        count = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        count = max(1, min(count, len(tasks)))
        pool = max(1, math.ceil(self.concurrency / count))
        self.actors = [self._new_actor(ray, pool) for _ in range(count)]
        self.pids = list(await asyncio.gather(*(a.ready.remote() for a in self.actors)))
        queue = list(reversed(tasks))
        attempts: dict[tuple[str, int], int] = {}
        busy: dict[int, int] = {i: 0 for i in range(count)}  # actor index -> items in flight
        flight: dict[asyncio.Future[Any], tuple[int, Any, Case, int]] = {}
        recorded: set[tuple[str, int]] = set()
        while queue or flight:
            for index in range(len(self.actors)):
                while queue and busy[index] < pool * PREFETCH:
                    case, epoch = queue.pop()
                    attempts[(case.id, epoch)] = attempts.get((case.id, epoch), 0) + 1
                    actor = self.actors[index]
                    future: asyncio.Future[Any] = asyncio.ensure_future(_awaitable(actor.run.remote(case, epoch)))
                    flight[future] = (index, actor, case, epoch)
                    busy[index] += 1
            finished, _ = await asyncio.wait(set(flight), return_when=asyncio.FIRST_COMPLETED)
            for future in finished:
                index, actor, case, epoch = flight.pop(future)
                busy[index] -= 1
                key = (case.id, epoch)
                error = future.exception()
                if error is None:
                    item: ItemDone = future.result()
                    if key in recorded:
                        continue
                    recorded.add(key)
                    item.result.attempts = attempts[key]
                    done(item)
                elif isinstance(error, ray.exceptions.RayActorError):
                    if self.actors[index] is actor:  # the first of its items to report the death
                        self.deaths += 1
                        self.actors[index] = self._new_actor(ray, pool)
                        self.pids[index] = 0
                    if attempts[key] <= RETRIES:
                        queue.append((case, epoch))
                    else:
                        from flow_kernel.errors import FlowWorkerCrashedError
                        from flow_kernel.runtime.eval.runner import crashed

                        recorded.add(key)
                        done(crashed(case, epoch, FlowWorkerCrashedError(
                            f"its Ray worker died {attempts[key]} times under it"), "ray"))
                else:  # Ray itself failed to run it (a task error): a failure with a code, the eval goes on
                    from flow_kernel.runtime.eval.runner import crashed

                    recorded.add(key)
                    done(crashed(case, epoch, error, "ray"))

    async def close(self) -> None:
        if not self.actors:
            return
        ray = _ray()
        for actor in self.actors:
            with contextlib.suppress(Exception):  # a dead actor, or one that cannot close: killed all the same
                await asyncio.wait_for(_awaitable(actor.close.remote()), timeout=10)
            ray.kill(actor)
        self.actors = []


async def _awaitable(ref: Any) -> Any:
    return await ref


__all__ = ["RETRIES", "EvalWorker", "RayItems", "start_ray"]

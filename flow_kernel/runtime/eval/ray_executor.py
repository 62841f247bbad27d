"""Items on a Ray cluster (`--executor ray`, docs/eval.md): `ray.init()` starts a local
cluster, or `address` joins one. Each actor is an async Ray actor holding its own warm
sandbox pool and running items with its own host services (`ItemRunner`), from the
program, scorers and `RunContext` the driver sends it (providers and configuration
travel; an interactive operator cannot).

Items travel in batches, not one remote call each: at a few milliseconds an item, a call
per item (its submission, its result pickled back, on the same cores) cost as much as the
item (docs/performance.md, "Ray eval batches"). The driver keeps one call at a time in
flight to each actor, `exchange`: it brings the items that top the actor up to `pool +
batch` (its sandboxes' running items and a batch waiting, `batch_size`), and returns the
items that ended since the last call, together, in dataset order. The actor answers once
an item has ended and either REPORT_WINDOW has passed since, or less than half a batch is
left waiting (the answer brings more before its sandboxes run dry), or it has nothing
left to run: a result reaches the driver (its results file, `on_result`) at most about
REPORT_WINDOW after its item ends. What comes back is what the driver keeps: the
record (without the case, which the driver has), each run's events only when the driver
writes journals, the cassette answers only when it records.

Each item runs on its own, as locally: a run that fails, times out or loses its sandbox is
that item's failed record with an error code; the other items of its batch go on. A
worker that dies (killed, out of memory, its node gone) loses only the items it had not
reported — running, waiting, or ended in its last REPORT_WINDOW: each is sent again to a
live actor (a new one replaces the dead), at most `RETRIES` times, and recorded once.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import pickle
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from flow_kernel.lang.compiler import Compiled
from flow_kernel.runtime.config import FlowConfig
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.eval.data import Case
from flow_kernel.runtime.eval.items import ItemDone, ItemRunner, warm
from flow_kernel.runtime.eval.ray_cluster import (
    actor_options,
    join,
    keep_private,
    key_names,
    start_private,
)
from flow_kernel.runtime.eval.scorers import Scorer

RETRIES = 3  # times an item is sent again after its worker died under it
BATCHES_PER_WORKER = 16  # a worker's share of the items comes in at least this many batches
MAX_BATCH = 32  # items: enough to keep a sandbox busy through the driver's round trip
# s: how long an actor keeps an ended item to send it with the next ones (an exchange
# costs ~1.5 ms of CPU all told: under 1 % of a core at one per 0.2 s)
REPORT_WINDOW = 0.2


def batch_size(items: int, workers: int) -> int:
    """Items an actor holds waiting beyond the ones its sandboxes run. At the end of an eval
    one actor may still have a batch to run while the others are idle, so a worker's share
    (items / workers) is cut in at least BATCHES_PER_WORKER batches: that tail is at most
    1/16 of the eval's time, whatever an item takes. MAX_BATCH bounds what a worker holds."""
    return max(1, min(MAX_BATCH, math.ceil(items / (max(1, workers) * BATCHES_PER_WORKER))))


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError("--executor ray needs Ray: pip install 'flow-kernel[ray]'") from None
    return ray


STARTS = 3  # tries at starting a local cluster (below)


def start_ray(address: str | None = None, config: FlowConfig | None = None, **options: Any) -> Any:
    """`ray.init` at `address`, or a private local cluster (ray_cluster.py: loopback only,
    its own 0700 folder and token, no credentials of `config` or the environment in its
    processes). A local start is tried again when it times out: on a loaded machine the
    raylet gives its dashboard agent a fixed 15 s to write its port file and then exits
    (ray-project/ray#65983), which a second start, a few seconds on, does not meet."""
    ray = _ray()
    if ray.is_initialized():
        return ray
    options = {"logging_level": "ERROR", "log_to_driver": False, **options}
    if address is not None:
        join(ray, address, include_dashboard=False, **options)
        return ray
    for attempt in range(1, STARTS + 1):
        try:
            start_private(ray, config, **options)
            return ray
        except Exception as exc:  # Ray raises a bare Exception for this
            if attempt == STARTS or "timed out during startup" not in str(exc):
                raise
            ray.shutdown()
    return ray


Task = tuple[int, Case, int]  # (the item's index in the eval's tasks, its case, its epoch)


class EvalWorker:
    """The actor: one warm sandbox pool, `pool` items at once (its share of the
    concurrency), the items the driver sent it waiting their turn."""

    def __init__(self, compiled: Compiled, workflow: str, scorers: list[Scorer], context: RunContext,
                 pool: int, sandbox: bool, name: str, keep_events: bool = True, collect: bool = True,
                 batch: int = 1) -> None:
        if sandbox:
            from flow_kernel.runtime.executors import SandboxExecutor

            executor: Any = SandboxExecutor(max_processes=pool, warm=1)
        else:
            from flow_kernel.sandbox.inprocess import InProcessExecutor

            executor = InProcessExecutor()
        self.pool = pool
        self.low = max(1, (batch + 1) // 2)  # fewer waiting than this: answer now, the driver tops it up
        self.window = REPORT_WINDOW
        self.runner = ItemRunner(compiled, workflow, scorers, executor, context, collect=collect,
                                 keep_events=keep_events, worker=f"{name} pid {os.getpid()}")
        self._waiting: deque[Task] = deque()
        self._ended: list[tuple[int, ItemDone]] = []
        self._first_ended = 0.0  # when the oldest item in `_ended` ended (monotonic)
        self._running = 0
        self._closing = False
        self._lanes: list[asyncio.Task[None]] = []
        self._fed: asyncio.Event | None = None  # items arrived (made on the actor's own loop)
        self._changed: asyncio.Event | None = None  # an item ended

    async def ready(self) -> int:
        """Start the first sandbox now (not in the first items' time; more start as items
        wait for one); the actor's process id."""
        await warm(self.runner.executor)
        return os.getpid()

    async def exchange(self, tasks: list[Task]) -> bytes:
        """Take `tasks`; return (pickled) the items that ended since the last call, in their
        order in the eval — once there is one and REPORT_WINDOW has passed since it ended,
        or less than half a batch waits (the driver's answer brings more), or nothing is
        left to run."""
        if self._fed is None or self._changed is None:
            self._fed, self._changed = asyncio.Event(), asyncio.Event()
            self._lanes = [asyncio.ensure_future(self._lane()) for _ in range(self.pool)]
        self._waiting.extend(tasks)
        if tasks:
            self._fed.set()
        while not self._closing:
            idle = not self._waiting and not self._running
            if idle or (self._ended and (len(self._waiting) < self.low
                                         or time.monotonic() - self._first_ended >= self.window)):
                break
            self._changed.clear()
            wait = self._first_ended + self.window - time.monotonic() if self._ended else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), wait)
        ended, self._ended = self._ended, []
        ended.sort(key=lambda pair: pair[0])
        # Pickled here, with the plain pickler: the records are plain data, and Ray's own
        # serializer (cloudpickle, a hook per object) costs more for the same bytes.
        return pickle.dumps(ended, protocol=pickle.HIGHEST_PROTOCOL)

    async def _lane(self) -> None:
        """One sandbox's worth of items: the next waiting item, one at a time."""
        assert self._fed is not None and self._changed is not None
        while not self._closing:
            if not self._waiting:
                self._fed.clear()
                await self._fed.wait()
                continue
            index, case, epoch = self._waiting.popleft()
            self._running += 1
            try:
                item = await self.runner.run(case, epoch)
            except Exception as exc:  # the item fails, its batch and the actor go on
                from flow_kernel.runtime.eval.runner import crashed

                item = crashed(case, epoch, exc, self.runner.worker)
            finally:
                self._running -= 1
            if self._closing:
                return
            result = item.result  # the driver has the case: not sent back
            result.input, result.expected, result.metadata = {}, None, {}
            if not self._ended:
                self._first_ended = time.monotonic()
            self._ended.append((index, item))
            self._changed.set()

    async def close(self) -> None:
        self._closing = True
        for lane in self._lanes:
            lane.cancel()
        await asyncio.gather(*self._lanes, return_exceptions=True)
        if self._changed is not None:
            self._changed.set()
        close = getattr(self.runner.executor, "close", None)
        if close is not None:
            await close()


class RayItems:
    def __init__(self, compiled: Compiled, workflow: str, scorers: list[Scorer], context: RunContext, *,
                 concurrency: int = 4, workers: int | None = None, address: str | None = None,
                 sandbox: bool = True, keep_events: bool = True, collect: bool = True) -> None:
        """`keep_events`: the driver writes the runs' journals (their events come back);
        `collect`: it records a cassette (the answers come back)."""
        self.args = (compiled, workflow, scorers, context)
        self.keys = key_names(compiled, context.config)  # the variables its models read their keys from
        self.concurrency = concurrency
        self.workers = workers
        self.address = address
        self.sandbox = sandbox
        self.keep_events = keep_events
        self.collect = collect
        self.actors: list[Any] = []
        self.pids: list[int] = []  # of the live actors, in `actors` order
        self.deaths = 0
        self.batch = 0  # the batch size of the last `map`
        self._started = 0

    def _start_ray(self) -> Any:
        from flow_kernel.runtime.eval.runner import EvalUsageError

        try:
            return start_ray(self.address, self.args[3].config)
        except ImportError:
            raise
        except Exception as exc:  # an address nobody answers at, a cluster that did not start: said plainly
            where = f"join the Ray cluster at {self.address}" if self.address else "start a local Ray cluster"
            raise EvalUsageError(f"cannot {where}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") \
                from None

    def _new_actor(self, ray: Any, pool: int) -> Any:
        self._started += 1
        worker = ray.remote(num_cpus=1, max_restarts=0)(EvalWorker)
        # one exchange at a time from the driver, plus `ready` and `close`
        options = {"max_concurrency": 4, **actor_options(self.keys)}
        return worker.options(**options).remote(*self.args, pool, self.sandbox, f"ray-{self._started}",
                                                self.keep_events, self.collect, max(1, self.batch))

    async def map(self, tasks: list[tuple[Case, int]], done: Callable[[ItemDone], None]) -> None:
        if not tasks:
            return
        from flow_kernel.errors import FlowWorkerCrashedError
        from flow_kernel.runtime.eval.runner import crashed

        ray = self._start_ray()
        count = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        count = max(1, min(count, len(tasks)))
        pool = max(1, math.ceil(self.concurrency / count))
        self.batch = batch_size(len(tasks), count)
        hold = pool + self.batch
        self.actors = [self._new_actor(ray, pool) for _ in range(count)]
        self.pids = list(await asyncio.gather(*(a.ready.remote() for a in self.actors)))
        keep_private()  # what the actors' Ray workers made as they started
        waiting: deque[int] = deque(range(len(tasks)))  # indexes into `tasks`, in order
        held: list[set[int]] = [set() for _ in range(count)]  # actor index -> items sent, not reported
        attempts = [0] * len(tasks)
        recorded = [False] * len(tasks)
        calls: dict[asyncio.Future[Any], tuple[int, Any]] = {}  # the exchange in flight -> (actor index, actor)

        def call(index: int) -> None:
            chunk = [waiting.popleft() for _ in range(min(hold - len(held[index]), len(waiting)))]
            if not chunk and not held[index]:
                return
            for i in chunk:
                attempts[i] += 1
                held[index].add(i)
            actor = self.actors[index]
            ref = actor.exchange.remote([(i, *tasks[i]) for i in chunk])
            calls[asyncio.ensure_future(_awaitable(ref))] = (index, actor)

        def record(i: int, item: ItemDone) -> None:
            if recorded[i]:
                return
            recorded[i] = True
            item.result.attempts = attempts[i]
            done(item)

        try:
            for index in range(count):
                call(index)
            while calls:
                finished, _ = await asyncio.wait(set(calls), return_when=asyncio.FIRST_COMPLETED)
                for future in sorted(finished, key=lambda f: calls[f][0]):
                    index, actor = calls.pop(future)
                    error = future.exception()
                    if error is None:
                        for i, item in pickle.loads(future.result()):
                            held[index].discard(i)
                            case = tasks[i][0]
                            item.result.input, item.result.expected, item.result.metadata = \
                                case.input, case.expected, case.metadata
                            record(i, item)
                        continue
                    # The actor died (or its call failed: it is not trusted with more): what it
                    # had not reported runs again on a live actor, a new one in its place.
                    if self.actors[index] is actor:
                        self.deaths += 1
                        if not isinstance(error, ray.exceptions.RayActorError):
                            with contextlib.suppress(Exception):
                                ray.kill(actor)
                        self.actors[index] = self._new_actor(ray, pool)
                        self.pids[index] = 0
                    for i in sorted(held[index], reverse=True):
                        if attempts[i] <= RETRIES:
                            waiting.appendleft(i)
                            continue
                        case, epoch = tasks[i]
                        cause = (FlowWorkerCrashedError(f"its Ray worker died {attempts[i]} times under it")
                                 if isinstance(error, ray.exceptions.RayActorError) else error)
                        record(i, crashed(case, epoch, cause, "ray"))
                    held[index].clear()
                busy = {index for index, _ in calls.values()}
                for index in range(count):
                    if index not in busy:
                        call(index)
        finally:
            for future in calls:  # cancelled (Ctrl-C): `close` kills the actors and their runs
                future.cancel()

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


__all__ = ["BATCHES_PER_WORKER", "MAX_BATCH", "REPORT_WINDOW", "RETRIES", "EvalWorker", "RayItems", "batch_size",
           "start_ray"]

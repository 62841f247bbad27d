"""Runs of one group share a sandbox process while they all wait on the host (sandbox/pool.py,
sandbox/router.py): real sandboxes, modules that call the host through the bridge directly
(the `unrestricted` bypass of the door tests), and a host whose answers the test holds."""

from __future__ import annotations

import asyncio
import collections
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from flow_kernel.errors import FlowError, FlowIsolateError
from flow_kernel.sandbox import pool as pool_module
from flow_kernel.sandbox.pool import SandboxPool

# The run asks the host once (the test holds the answer) and returns it.
WAIT = "import flowbox.bridge as b\nreturn await b._bridge.invoke('wait', {'run': args['run']})\n"
# The run computes, yielding to the sandbox's loop, and never asks the host.
BUSY = "import asyncio, time\nend = time.time() + 60\nwhile time.time() < end:\n    await asyncio.sleep(0)\nreturn 'busy'\n"


def module(body: str) -> str:
    return "async def main(rt, args):\n" + textwrap.indent(body, "    ")


@dataclass
class Run:
    """One run in the pool: the host's answer it waits for (`gate`), when it asked (`asked`),
    its process, the events it was sent and its task."""
    id: str
    gate: asyncio.Future[Any] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    requests: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    pid: int | None = None
    task: asyncio.Task[Any] | None = None

    async def result(self) -> Any:
        assert self.task is not None
        return await self.task

    async def error(self) -> FlowError:
        with pytest.raises(FlowError) as caught:
            await self.result()
        return caught.value


def start(pool: SandboxPool, run_id: str, body: str = WAIT, *, group: str | None = "g",
          abort: asyncio.Future[FlowError] | None = None) -> Run:
    run = Run(run_id)

    async def handler(op: str, payload: dict[str, Any]) -> Any:
        run.requests.append(payload)
        run.asked.set()
        return await run.gate

    def bind(process: Any) -> None:
        run.pid = process.pid

    run.task = asyncio.ensure_future(pool.run(
        module(body), {"run": run_id, "unrestricted": True, "args": {"run": run_id}}, handler=handler,
        on_notify=lambda op, payload: run.events.append(payload), bind=bind, abort=abort, group=group))
    return run


async def asked(*runs: Run) -> None:
    async with asyncio.timeout(60):
        for run in runs:
            await run.asked.wait()


@pytest.fixture
def no_early_start(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A run waiting for a process does not start one for 30 s: what it gets is shared or released."""
    monkeypatch.setattr(pool_module, "SPAWN_AFTER", 30.0)
    monkeypatch.setattr(pool_module, "SPAWN_AFTER_BOUNDS", (30.0, 30.0))
    yield


def test_runs_of_one_group_share_a_process_while_they_wait_on_the_host(no_early_start: None) -> None:
    async def go() -> None:
        pool = SandboxPool(warm=0)
        try:
            runs = [start(pool, f"r{i}") for i in range(4)]
            await asked(*runs)
            assert len({r.pid for r in runs}) == 1 and pool.started == 1
            assert len(pool.running) == 1 and len(pool.pids()) == 1
            for i, run in enumerate(runs):  # each answer reached the run that asked for it
                run.gate.set_result(f"answer {i}")
            assert [(await r.result())["result"] for r in runs] == [f"answer {i}" for i in range(4)]
            assert [r.requests for r in runs] == [[{"run": f"r{i}"}] for i in range(4)]
            await asyncio.sleep(0)
            assert len(pool.idle) == 1 and not pool.running  # given back once the last left
            later = start(pool, "later")  # and used again
            later.gate.set_result("again")
            assert (await later.result())["result"] == "again" and pool.started == 1
        finally:
            await pool.close()

    asyncio.run(go())


def test_a_run_that_does_not_wait_on_the_host_is_not_joined() -> None:
    async def go() -> None:
        pool = SandboxPool(warm=0)
        try:
            busy = start(pool, "busy", BUSY)
            async with asyncio.timeout(60):
                while busy.pid is None:
                    await asyncio.sleep(0.01)
            other = start(pool, "other")  # same group: it waits for a process of its own
            await asked(other)
            assert other.pid != busy.pid and pool.started == 2
            other.gate.set_result(1)
            await other.result()
            assert busy.task is not None
            busy.task.cancel()
            with pytest.raises((asyncio.CancelledError, FlowError)):
                await busy.task
        finally:
            await pool.close()

    asyncio.run(go())


def test_other_groups_and_exclusive_runs_never_share() -> None:
    async def go() -> None:
        pool = SandboxPool(warm=0)
        try:
            first = start(pool, "g1")
            await asked(first)
            stranger = start(pool, "h1", group="h")
            alone = start(pool, "x1", group=None)
            await asked(stranger, alone)
            assert len({first.pid, stranger.pid, alone.pid}) == 3
            mate = start(pool, "g2")  # the group's own run still joins
            await asked(mate)
            assert mate.pid == first.pid
            for run in (first, stranger, alone, mate):
                run.gate.set_result(run.id)
                assert (await run.result())["result"] == run.id
        finally:
            await pool.close()

    asyncio.run(go())


def test_a_process_holds_at_most_its_cap_of_runs() -> None:
    async def go() -> None:
        pool = SandboxPool(warm=0)
        pool.shared_runs = 3
        try:
            runs = [start(pool, f"r{i}") for i in range(5)]
            await asked(*runs)
            per_process = collections.Counter(r.pid for r in runs)
            assert max(per_process.values()) == 3 and len(per_process) >= 2, per_process
            assert per_process[runs[0].pid] == 3
            for run in runs:
                run.gate.set_result(run.id)
                await run.result()
        finally:
            await pool.close()

    asyncio.run(go())


def test_a_forged_run_id_gets_capability_violation_and_its_events_are_dropped(no_early_start: None) -> None:
    forge = ("import flowbox.bridge as b\n"
             "b._bridge.notify('event', {'run': 'nobody', 'type': 'log', 'data': {}})\n"
             "b._bridge.notify('event', {'type': 'log', 'data': {}})\n"
             "try:\n"
             "    await b._bridge.invoke('wait', {'run': 'nobody'})\n"
             "except Exception as exc:\n"
             "    return [exc.code, str(exc)]\n"
             "return 'answered'\n")

    async def go() -> None:
        pool = SandboxPool(warm=0)
        try:
            honest = start(pool, "honest")
            await asked(honest)
            forger = start(pool, "forger", forge)
            result = (await forger.result())["result"]
            assert result[0] == "capability-violation" and "names no run" in result[1]
            assert forger.pid == honest.pid  # it was in the shared process
            assert forger.requests == [] and honest.requests == [{"run": "honest"}]
            assert forger.events == [] and honest.events == []  # no run's sink heard the forged events
            honest.gate.set_result("fine")
            assert (await honest.result())["result"] == "fine"
        finally:
            await pool.close()

    asyncio.run(go())


def test_a_process_draining_after_a_recycle_takes_no_run_and_closes_after_the_last() -> None:
    grow = WAIT.replace("return await", "answer = await") + "x = [bytearray(10**6) for _ in range(150)]\ndel x\nreturn answer\n"

    async def go() -> None:
        pool = SandboxPool(warm=0)
        try:
            grower = start(pool, "grower", grow)
            await asked(grower)
            stays = start(pool, "stays")
            await asked(stays)
            assert stays.pid == grower.pid
            shared = next(iter(pool.running))
            grower.gate.set_result("grew")
            assert (await grower.result())["result"] == "grew"  # the heap grew by 150 MB: recycled
            assert shared.alive and shared in pool.running
            late = start(pool, "late")
            await asked(late)
            assert late.pid != shared.pid  # a draining process takes no new run
            stays.gate.set_result("done")
            assert (await stays.result())["result"] == "done"
            async with asyncio.timeout(30):
                while shared.alive:
                    await asyncio.sleep(0.05)
            assert shared not in pool.idle and shared.pid not in pool.pids()
            late.gate.set_result("late")
            await late.result()
        finally:
            await pool.close()

    asyncio.run(go())


def test_a_kill_fails_the_co_tenants_worker_crashed_marked_shared(no_early_start: None) -> None:
    async def go() -> None:
        pool = SandboxPool(warm=0)
        try:
            abort: asyncio.Future[FlowError] = asyncio.get_running_loop().create_future()
            culprit = start(pool, "culprit", abort=abort)
            await asked(culprit)
            tenants = [start(pool, f"t{i}") for i in range(2)]
            await asked(*tenants)
            assert {t.pid for t in tenants} == {culprit.pid}
            abort.set_result(FlowIsolateError("the host stopped it"))  # killed at once, no grace
            assert (await culprit.error()).message == "the host stopped it"
            for tenant in tenants:
                error = await tenant.error()
                assert error.code == "worker-crashed" and error.details.get("shared") is True
            assert not pool.running and not pool.idle  # the killed process was not kept
            alone = start(pool, "alone")  # a process of its own now: a crash there is not marked
            await asked(alone)
            assert alone.pid != culprit.pid
            kill = next(iter(pool.running)).kill()
            await kill
            error = await alone.error()
            assert error.code == "worker-crashed" and "shared" not in error.details
        finally:
            await pool.close()

    asyncio.run(go())

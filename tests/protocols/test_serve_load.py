"""200 callers at once against `flow serve --a2a` on loopback (docs/security.md, "Serving
workflows"): each client holds its own credential (`--issue-token`), runs a cheap workflow
over and over for a bounded time, and checks after every run that it sees only its own tasks
(`ListTasks`) and that another client's task is "not found" to it (`GetTask`, `CancelTask`).
The server's memory (RSS) is read after a warm-up and at the end and printed; only a
generous bound is asserted (no growth without bound), no timings."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.protocols.helpers import Served, flow_serve, free_port
from tests.security.serve_helpers import A2A_VERSION, start_message

RELEASE = Path(__file__).resolve().parents[1] / "security" / "release.flow"
CLIENTS = 200
# The suite runs 20 s of load (the whole test stays within about a minute); FLOW_LOAD_SECONDS=60
# gives the figure docs/protocols.md reports.
LOAD_SECONDS = float(os.environ.get("FLOW_LOAD_SECONDS", "20"))
WARM_UP_SECONDS = 10.0
KEPT = 10  # finished tasks kept per caller: past the warm-up the server holds about as many as it drops
TASK_NOT_FOUND = -32001
ALL_SERVED_WITHIN = 180.0  # seconds past the load's end for the last callers' first runs

pytestmark = pytest.mark.bench


@dataclass
class Caller:
    name: str
    http: httpx.AsyncClient
    tasks: list[str] = field(default_factory=list)
    crossings: list[str] = field(default_factory=list)  # anything of another caller it saw
    refused: list[str] = field(default_factory=list)  # tasks failed: too many runs waiting for a turn

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        response = await self.http.post("", json=body)
        response.raise_for_status()
        answer: dict[str, Any] = response.json()
        return answer


def _refused_for_load(task: dict[str, Any]) -> bool:
    """A task failed `limit-exceeded` by the server's bound on runs waiting for a turn."""
    parts = (task["status"].get("message") or {}).get("parts") or [{}]
    said = str(parts[0].get("text", ""))
    return task["status"]["state"] == "TASK_STATE_FAILED" and said.startswith("limit-exceeded: ")


def _rss(pid: int) -> int:
    return int(psutil.Process(pid).memory_info().rss)


async def _load(agent: Served, until: float, marks: dict[str, int]) -> list[Caller]:
    callers = [Caller(name, httpx.AsyncClient(base_url=agent.url, headers={**A2A_VERSION, **agent.auth(name)},
                                              timeout=httpx.Timeout(120)))
               for name in agent.issued]
    owner = {}  # task id -> its caller's name, as the test learns them

    async def work(me: Caller) -> None:
        n = 0
        # Past the load's end, a caller still without a run goes on until it has one (a deadline
        # for a loaded machine, not a timing): every caller is served in the end.
        while time.monotonic() < until or (not me.tasks and time.monotonic() < until + ALL_SERVED_WITHIN):
            n += 1
            sent = await me.call("SendMessage", start_message("echo", {"text": f"{me.name}-{n}"}, f"{me.name}-{n}"))
            task = sent["result"]["task"]
            if _refused_for_load(task):  # more callers than turns and waiting places: back off, go on
                me.refused.append(task["id"])  # still its own task: it lists among them
                await asyncio.sleep(random.uniform(0.5, 2.0))
                continue
            assert task["status"]["state"] == "TASK_STATE_COMPLETED", sent
            me.tasks.append(task["id"])
            owner[task["id"]] = me.name
            listed = (await me.call("ListTasks", {"pageSize": 100}))["result"]
            me.crossings += [t["id"] for t in listed["tasks"] if t["id"] not in me.tasks + me.refused]
            others = [t for t, who in owner.items() if who != me.name]
            if others:
                theirs = random.choice(others)
                for method in ("GetTask", "CancelTask"):
                    answer = await me.call(method, {"id": theirs})
                    if answer.get("error", {}).get("code") != TASK_NOT_FOUND:
                        me.crossings.append(f"{method} {theirs}: {answer}")

    async def mark_warm() -> None:
        await asyncio.sleep(WARM_UP_SECONDS)
        marks["warm"] = _rss(agent.process.pid)

    try:
        await asyncio.gather(mark_warm(), *(work(c) for c in callers))
    finally:
        for caller in callers:
            await caller.http.aclose()
    return callers


def test_two_hundred_callers_each_see_only_their_own_tasks(tmp_path: Path) -> None:
    shutil.copy(RELEASE, tmp_path / "release.flow")
    port = free_port()
    names = [f"client{i:03d}" for i in range(CLIENTS)]
    with flow_serve(["serve", str(tmp_path / "release.flow"), "--a2a", f"127.0.0.1:{port}",
                     "--keep-tasks", str(KEPT)], port,
                    issue=names) as agent:
        marks = {"start": _rss(agent.process.pid)}
        started = time.monotonic()
        callers = asyncio.run(_load(agent, started + LOAD_SECONDS, marks))
        seconds = time.monotonic() - started
        marks["end"] = _rss(agent.process.pid)
    runs = sum(len(c.tasks) for c in callers)
    refused = sum(len(c.refused) for c in callers)
    mib = {k: v / (1 << 20) for k, v in marks.items()}
    print(f"\n{CLIENTS} callers, {runs} runs ({refused} refused: too many waiting) in {seconds:.0f} s; server RSS: {mib['start']:.0f} MiB at start, "
          f"{mib['warm']:.0f} MiB after {WARM_UP_SECONDS:.0f} s, {mib['end']:.0f} MiB at the end")
    # Every caller got runs through, whatever refusals it met while more than the server's turns
    # and waiting places (64) were taken.
    assert [c.name for c in callers if not c.tasks] == []
    assert [c.crossings for c in callers if c.crossings] == []  # no task seen across callers
    assert marks["end"] < 2 * marks["warm"] + (200 << 20)  # flat enough: no growth without bound

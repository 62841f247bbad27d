"""Cancelling an eval (Ctrl-C in `flow eval`, a cancelled `%eval` or `eval_async` task):
what ended is in the results file, the sandboxes (local) or the Ray actors and their
sandboxes (ray) are closed, nothing is left running, and `--resume` runs the rest, each
item recorded once (docs/eval.md, "Executors")."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from flow_kernel.runtime.session import Session
from tests.eval.cases import PROGRAM, write_cases

# Even numbers wait 200 ms for their answer, so items are in flight when the eval is cancelled.
SLOW = PROGRAM.replace('{ label: "even" }),', 'slow(200ms, { label: "even" })),', 1)
N = 24


def _sandboxes() -> set[int]:
    """This process's sandbox processes (Node running the runner)."""
    found = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if any("runner.mjs" in part for part in child.cmdline()):
                found.add(child.pid)
        except psutil.Error:
            continue
    return found


def _cancel_after(tmp_path: Path, count: int, **options: Any) -> list[Any]:
    """Run the eval in a task and cancel it once `count` items have ended; the results it saw."""
    seen: list[Any] = []

    async def main() -> None:
        session = Session(directory=tmp_path, journal_dir=None)
        task: asyncio.Task[Any] | None = None

        def on_result(result: Any) -> None:
            seen.append(result)
            if len(seen) == count and task is not None:
                task.cancel()

        try:
            task = asyncio.ensure_future(session.eval_async(
                "classify", "cases.jsonl", program=SLOW, scorers=["field:parity"], out="results.jsonl",
                on_result=on_result, **options))
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            await session.aclose()

    asyncio.run(main())
    return seen


def _recorded(tmp_path: Path) -> list[str]:
    lines = (tmp_path / "results.jsonl").read_text(encoding="utf-8").splitlines()[1:]  # after the header
    return [json.loads(line)["id"] for line in lines]


def _resume_and_check(tmp_path: Path, seen: list[Any], **options: Any) -> None:
    # What ended before the cancel is on file, once each, and nothing else is.
    assert sorted(_recorded(tmp_path)) == sorted(r.id for r in seen)
    assert len(seen) < N, "the cancel came too late to leave anything to resume"
    report = Session(directory=tmp_path, journal_dir=None).eval(
        "classify", "cases.jsonl", program=SLOW, scorers=["field:parity"], out="results.jsonl", resume=True, **options)
    assert [r.id for r in report.results] == [f"n{i}" for i in range(N)]
    assert report.resumed == len(seen)
    assert sorted(_recorded(tmp_path)) == sorted(f"n{i}" for i in range(N))  # the rest appended, none twice


def test_a_cancelled_local_eval_closes_its_sandboxes_and_resumes(tmp_path: Path) -> None:
    write_cases(tmp_path / "cases.jsonl", N, bad=False)
    before = _sandboxes()
    seen = _cancel_after(tmp_path, 5, concurrency=3)
    assert _sandboxes() - before == set()  # the eval's pool is closed: no sandbox left running
    _resume_and_check(tmp_path, seen, concurrency=3)


@pytest.mark.ray
def test_a_cancelled_ray_eval_closes_its_workers_and_resumes(tmp_path: Path, ray_cluster: Any) -> None:
    write_cases(tmp_path / "cases.jsonl", N, bad=False)
    seen = _cancel_after(tmp_path, 5, concurrency=4, executor="ray", workers=2)
    pids = {int(r.worker.rsplit(" ", 1)[1]) for r in seen if r.worker}
    assert pids, "the items say which worker ran them"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(psutil.pid_exists(pid) and _alive(pid) for pid in pids):
        time.sleep(0.2)
    assert not any(psutil.pid_exists(pid) and _alive(pid) for pid in pids), "a Ray worker outlived the cancel"
    _resume_and_check(tmp_path, seen, concurrency=4, executor="ray", workers=2)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


"""`--executor ray` on one local cluster for the whole test session (`ray_cluster`,
ray.init(num_cpus=2)): the same results as the local executor, and a worker killed with
SIGKILL mid-eval loses nothing — its in-flight items run again elsewhere, each is counted
once. Skipped only where Ray is not installed (CI installs it)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.runtime.session import Session
from tests.eval.cases import FAILING, PROGRAM, SCORERS, write_cases

pytest.importorskip("ray")  # the `ray_cluster` fixture is in conftest.py
pytestmark = pytest.mark.ray


def _comparable(report: Any) -> list[tuple[Any, ...]]:
    return [(r.id, r.epoch, json.dumps(r.output, sort_keys=True), r.error and r.error["code"],
             {name: (s.score, s.passed, s.error) for name, s in r.scores.items()}) for r in report.results]


def test_ray_gives_the_same_results_as_local(tmp_path: Path, ray_cluster: Any) -> None:
    write_cases(tmp_path / "cases.jsonl", 60, bad=False)
    local = Session(directory=tmp_path).eval("classify", "cases.jsonl", program=PROGRAM, scorers=SCORERS,
                                             concurrency=2)
    on_ray = Session(directory=tmp_path, record="ray.cassette").eval(
        "classify", "cases.jsonl", program=PROGRAM, scorers=SCORERS, concurrency=2, executor="ray", out="ray.jsonl")
    assert _comparable(on_ray) == _comparable(local)
    assert on_ray.summary.to_json()["scorers"] == local.summary.to_json()["scorers"]
    assert {r.worker.split(" ")[0] for r in on_ray.results if r.worker} == {"ray-1", "ray-2"}  # both workers ran items
    # the journals and the cassette answers came back to the driver
    runs = {p.stem for p in (tmp_path / ".flow" / "runs").glob("*.jsonl")}
    assert {r.run for r in on_ray.results} <= runs
    assert all(s.run in runs for r in on_ray.results for s in r.scores.values() if s.run)
    cassette = [json.loads(line) for line in (tmp_path / "ray.cassette").read_text().splitlines()]
    assert len(cassette) == 2 * (60 - len([i for i in FAILING if i < 60]))  # classifier + judge per item that ran


def test_a_killed_worker_loses_nothing_and_counts_nothing_twice(tmp_path: Path, ray_cluster: Any) -> None:
    slow = PROGRAM.replace('{ label: "even" }),', 'slow(200ms, { label: "even" })),', 1)
    n = 40
    write_cases(tmp_path / "cases.jsonl", n, bad=False)
    killed: list[int] = []

    def kill_one(result: Any) -> None:
        # After the first item (an odd n: its answer is not delayed), kill the worker that ran it:
        # the even item it took with it waits 200 ms for its answer, so it is in flight.
        if not killed and result.worker:
            pid = int(result.worker.rsplit(" ", 1)[1])
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    report = Session(directory=tmp_path, journal_dir=None).eval(
        "classify", "cases.jsonl", program=slow, scorers=["field:parity"], concurrency=4, executor="ray",
        out="results.jsonl", on_result=kill_one)
    assert killed
    assert [r.id for r in report.results] == [f"n{i}" for i in range(n)]  # every item, once
    retried = [r for r in report.results if r.attempts > 1]
    assert retried, "the killed worker had items in flight"
    assert all(str(killed[0]) not in (r.worker or "") for r in retried)  # they ran elsewhere
    assert report.summary.failures == {"assertion": 1}  # n36 only: no worker-crashed failure
    assert report.summary.scorers["field:parity"].pass_rate == 35 / 40
    lines = (tmp_path / "results.jsonl").read_text().splitlines()[1:]
    assert sorted(json.loads(line)["id"] for line in lines) == sorted(f"n{i}" for i in range(n))


def test_flow_eval_joins_a_cluster_by_address(tmp_path: Path, ray_cluster: Any) -> None:
    """`flow eval --executor ray --ray-address`: another process joins the session's cluster
    (the one cluster of the test run) as a driver, and its items run on that cluster."""
    import subprocess
    import sys

    address = ray_cluster.get_runtime_context().gcs_address
    (tmp_path / "parity.flow").write_text(PROGRAM)
    write_cases(tmp_path / "cases.jsonl", 10, bad=False)
    done = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "eval", "parity.flow", "classify", "--data",
                           "cases.jsonl", "--scorer", "field:parity,min=0.9", "--executor", "ray", "--ray-address",
                           address, "--workers", "2", "--format", "json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["summary"]["scorers"]["field:parity"]["pass_rate"] == 0.9  # n9 misclassified
    assert {item["worker"].split(" ")[0] for item in report["items"]} <= {"ray-1", "ray-2"}
    assert all(item["worker"].startswith("ray-") for item in report["items"])

"""`--executor ray` on one local cluster for the whole test session (`ray_cluster`,
ray.init(num_cpus=2)): the same results as the local executor, a batch whose items fail
(a timeout, a sandbox out of memory, a `require`) gives every item its own record, and a
worker killed with SIGKILL mid-eval loses nothing — its unreported items run again
elsewhere, each is counted once. Skipped only where Ray is not installed (CI installs it)."""

from __future__ import annotations

import json
import os
import pickle
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


# Items 2 and 4 lose their sandbox mid-batch (killed past its `duration`; out of memory),
# item 5 fails; the others of the batch run on, in fresh sandboxes where theirs died.
# Item 4's memory bomb must meet the sandbox's memory ceiling (`isolate`) before the
# deadline that ends item 2's loop (`workflow-timeout`): 3 s leaves it room on a loaded
# machine, where 1 s did not (a CI run read `workflow-timeout` for it).
FAILING_BATCH = """workflow item(n: int) -> int {
  limits { steps: 100000000, duration: 3s }
  if n == 2 {
    var i = 0
    while true { i = i + 1 }
  }
  if n == 4 {
    var s = "xxxxxxxxxxxxxxxx"
    var xs: string[] = []
    while true { s = s + s
      xs = xs + [s] }
  }
  require n != 5 : "refused ${n}"
  return n * n
}
"""


@pytest.mark.alone  # a crash that must read `isolate` read `workflow-timeout` under the other worker's load: it waits (tests/workers.py)
def test_a_batch_with_failing_items_gives_every_item_its_record_in_order(ray_cluster: Any) -> None:
    from flow_kernel.lang.compiler import compile_source
    from flow_kernel.runtime.context import RunContext
    from flow_kernel.runtime.eval.data import Case
    from flow_kernel.runtime.eval.ray_executor import RayItems
    from flow_kernel.source import SourceFile

    compiled = compile_source(SourceFile("batch.flow", FAILING_BATCH))
    items = RayItems(compiled, "item", [], RunContext(), concurrency=1, workers=1, keep_events=False, collect=False)
    actor = items._new_actor(ray_cluster, 1)  # the actor `map` makes: one sandbox, the batch waiting its turn
    try:
        pid = ray_cluster.get(actor.ready.remote(), timeout=120)
        batch = [(i, Case(f"n{i}", i + 1, {"n": i}, has_expected=False), 1) for i in range(8)]
        groups = [pickle.loads(ray_cluster.get(actor.exchange.remote(batch), timeout=120))]
        while sum(map(len, groups)) < len(batch) and groups[-1]:
            groups.append(pickle.loads(ray_cluster.get(actor.exchange.remote([]), timeout=120)))
        assert ray_cluster.get(actor.exchange.remote([]), timeout=30) == pickle.dumps([], pickle.HIGHEST_PROTOCOL)
    finally:
        ray_cluster.kill(actor)
    for group in groups:  # each answer in the eval's order
        assert [i for i, _ in group] == sorted(i for i, _ in group)
    done = {i: item for group in groups for i, item in group}
    assert sorted(done) == list(range(8)) and sum(map(len, groups)) == 8  # every item, once
    errors = {i: item.result.error["code"] for i, item in done.items() if item.result.error}
    assert errors == {2: "workflow-timeout", 4: "isolate", 5: "assertion"}, errors
    assert {i: item.result.output for i, item in done.items() if i not in errors} == {i: i * i for i in (0, 1, 3, 6, 7)}
    assert {item.result.worker for item in done.values()} == {f"ray-1 pid {pid}"}  # the actor lived on
    # What came back is what a driver that neither journals nor records keeps: no events,
    # no answers, and not the case (the driver has it).
    assert all(item.runs == {} and item.recorded == [] and item.result.input == {} for item in done.values())


def test_the_batch_size_rule() -> None:
    from flow_kernel.runtime.eval.ray_executor import batch_size

    assert batch_size(1000, 2) == 32  # 1000 / (2 workers x 16 batches) = 31.25
    assert batch_size(200, 2) == 7
    assert batch_size(40, 4) == 1
    assert batch_size(10**6, 2) == 32  # at most MAX_BATCH


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

"""Ray section of `flow bench`: 1,000 items of a CPU-bound workflow through
`flow eval`'s local executor with one sandbox, then through `--executor ray` with two
workers on a local cluster (ray.init(num_cpus=2), started before the timing), and the
ratio of items/s — the target is ≥ 1.6× on 2 cores. Items/s are counted from the first
item's end (the steady pace: a Ray worker's start, importing Flow and warming its
sandboxes, is paid once a cluster, not per item) — from the first report of ended items,
counting only the items reported after it: Ray workers report items in batches, and the
items that come with the first are not the pace's; the end-to-end seconds are reported
beside, and so is what the machine gives two CPU-bound processes at once in the same run
(two busy loops against one): on a machine shared with other work the ratio cannot beat
that. Full runs only (starting a cluster takes seconds); skipped where Ray is not
installed."""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path

from flow_kernel.bench.measure import Figures, Row, Target

NAME = "evals_ray"

CPU = """workflow crunch(n: int) -> int {
  limits { steps: 50000000, duration: 1m }
  var acc = 0
  var i = 0
  while i < 5000 {
    acc = (acc + i * n) % 1000003
    i = i + 1
  }
  return acc
}
"""


def measure(quick: bool) -> Figures:
    if quick:
        return {"skipped": "quick run: the Ray figure is in the full bench (a cluster takes seconds to start)"}
    try:
        import ray
    except ImportError:
        return {"skipped": "Ray is not installed (pip install 'flow-kernel[ray]')"}
    items = 1000
    figures: Figures = {"items": items}
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "cases.jsonl").write_text("".join(json.dumps({"n": i}) + "\n" for i in range(items)))
        figures["local_1_sandbox_s"], figures["local_items_per_s"] = asyncio.run(_eval_s(Path(folder), "local", 1))
        owned = not ray.is_initialized()
        if owned:
            from flow_kernel.runtime.eval.ray_executor import start_ray

            start_ray(num_cpus=2)
        try:
            figures["ray_2_workers_s"], figures["ray_items_per_s"] = asyncio.run(_eval_s(Path(folder), "ray", 2))
        finally:
            if owned:
                ray.shutdown()
    figures["ratio_ray_to_local"] = figures["ray_items_per_s"] / figures["local_items_per_s"]
    figures["machine_two_process_ratio"] = _two_processes()
    figures["ratio_end_to_end"] = figures["local_1_sandbox_s"] / figures["ray_2_workers_s"]
    return figures


def _two_processes() -> float:
    """How much faster two CPU-bound processes finish than one, twice over: 2.0 on two free cores."""
    import subprocess
    import sys

    loop = [sys.executable, "-c", "s = 0\nfor i in range(8_000_000): s += i"]
    started = time.perf_counter()
    subprocess.run(loop, check=True)
    one = time.perf_counter() - started
    started = time.perf_counter()
    both = [subprocess.Popen(loop) for _ in range(2)]
    for process in both:
        process.wait()
    return 2 * one / (time.perf_counter() - started)


async def _eval_s(folder: Path, executor: str, workers: int) -> tuple[float, float]:
    """The eval's seconds end to end, and its items/s from the first item's end."""
    from flow_kernel.runtime.session import Session

    session = Session(directory=folder, journal_dir=None)
    loop = asyncio.get_running_loop()
    reported = [0]
    first: list[tuple[float, int]] = []  # when the first report of ended items was over, and how many it held

    def ended_one(_result: object) -> None:
        reported[0] += 1
        if reported[0] == 1:  # the items reported with it come in the same step of the loop
            loop.call_soon(lambda: first.append((time.perf_counter(), reported[0])))

    started = time.perf_counter()
    try:
        report = await session.eval_async("crunch", "cases.jsonl", program=CPU, concurrency=workers,
                                          executor=executor, workers=workers if executor == "ray" else None,
                                          on_result=ended_one)
    finally:
        await session.aclose()
    ended = time.perf_counter()
    if report.summary.completed != report.summary.items:
        raise SystemExit(f"benchmark eval failed: {report.summary.to_json()}")
    since, counted = first[0]
    return ended - started, (report.summary.items - counted) / (ended - since)


def rows(f: Figures) -> list[Row]:
    if "skipped" in f:
        return [Row("eval on Ray", f"skipped: {f['skipped']}")]

    def one(x: float) -> dict[str, float]:
        return {"median": x, "min": x, "max": x}

    return [Row(f"eval of {f['items']:,} CPU-bound items, local, one sandbox", one(f["local_items_per_s"]), "items/s",
                "{:,.1f}"),
            Row("  --executor ray, 2 workers (2 cores)", one(f["ray_items_per_s"]), "items/s", "{:,.1f}"),
            Row("  end to end, local", one(f["local_1_sandbox_s"]), "s", "{:.1f}"),
            Row("  end to end, ray (with the workers' start)", one(f["ray_2_workers_s"]), "s", "{:.1f}"),
            Row("  two CPU-bound processes vs one, this machine now", one(f["machine_two_process_ratio"]), "×",
                "{:.2f}")]


TARGETS = [
    Target(
        "eval on Ray, 2 workers vs local, 1 sandbox (1,000 CPU-bound items)",
        lambda f: f"{f['ray_items_per_s']:,.1f} items/s ({f['ray_2_workers_s']:.1f} s end to end)",
        lambda f: f"local {f['local_items_per_s']:,.1f} items/s ({f['local_1_sandbox_s']:.1f} s); "
                  f"the machine gives 2 processes {f['machine_two_process_ratio']:.2f}×",
        lambda f: float(f["ratio_ray_to_local"]),
        1.6,
        at_least=True,
    ),
]

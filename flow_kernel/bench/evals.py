"""Eval section of `flow bench`: items per second of `flow eval`'s local executor
with a 50 ms agent at concurrency 50, against the ideal — concurrency / 50 ms — and the
same through the in-process executor (what the eval driver itself costs); beside it, the
sandboxes the pool started while the timed items ran (the items share a process while they
wait on their agent: sandbox/pool.py) and the CPU an item cost the host and the sandboxes.
`--quick`: 4 at once, 40 items. The Ray figure is its own section (evals_ray.py). No
target: on 2 cores the figure is bound by the pool's growth (one start at a time, ~0.6 s
of CPU each) and each item's CPU around the agent's 50 ms — ~0.7 ms of host and ~0.8 ms of
sandbox work with the items in one shared process (1.3 and 7.9 ms, most of it starts,
when each item in flight held a process of its own: 5 started while the items ran) — not
by the eval's scheduling; the in-process figure shows the driver's own share."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from flow_kernel.bench.measure import Figures, Row, Target, descendants, stats
from flow_kernel.bench.notebooks import cpu_ticks
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.policy.ceilings import Ceilings

NAME = "evals"

AGENT = """agent echo {{ model: "scripted", output: {{ id: int }}, script: [slow({delay}ms, {{ id: 1 }})] }}
workflow fetch(n: int) -> int {{
  let _r = echo("item ${{n}}")
  return n
}}
"""


def measure(quick: bool) -> Figures:
    repeat = 1 if quick else 3
    items, conc, delay = (40, 4, 50) if quick else (500, 50, 50)
    figures: Figures = {"repeat": repeat, "items": items, "concurrency": conc, "delay_ms": delay}
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "cases.jsonl"
        data.write_text("".join(json.dumps({"n": i}) + "\n" for i in range(items)), encoding="utf-8")
        for sandbox in (True, False):
            rates: list[float] = []
            started: list[float] = []
            host_ms: list[float] = []
            sandbox_ms: list[float] = []
            for run in range(repeat + 1):  # the first is the warm-up
                timed = asyncio.run(_items_per_s(Path(folder), AGENT.format(delay=delay), conc, sandbox, items))
                if run:
                    rates.append(timed.rate)
                    started.append(timed.started)
                    host_ms.append(timed.host_ms)
                    sandbox_ms.append(timed.sandbox_ms)
            figures["items_per_s" if sandbox else "items_per_s_in_process"] = stats(rates)
            if sandbox:
                figures["sandboxes_started"] = stats(started)
                figures["host_cpu_ms_per_item"] = stats(host_ms)
                figures["sandbox_cpu_ms_per_item"] = stats(sandbox_ms)
    figures["ideal_items_per_s"] = conc / (delay / 1000)
    figures["ratio_to_ideal"] = figures["items_per_s"]["median"] / figures["ideal_items_per_s"]
    return figures


@dataclasses.dataclass
class Timed:
    """One timed eval, from its first item's end to its last: items per second, the
    sandboxes started meanwhile (alive at the end), and the CPU per item of the host
    process and of those sandboxes (from the first item's end, or their start)."""
    rate: float
    started: int
    host_ms: float
    sandbox_ms: float


async def _items_per_s(folder: Path, program: str, concurrency: int, sandbox: bool, items: int) -> Timed:
    from flow_kernel.runtime.session import Session

    ceilings = dataclasses.replace(Ceilings.from_env(), sandboxes=concurrency)  # the person's --concurrency
    session = Session(directory=folder, journal_dir=None, sandbox=sandbox, context=RunContext(ceilings=ceilings))
    ends: list[dict[str, Any]] = []  # as the first item ended, and as the last did
    seen = [0]

    def look() -> dict[str, Any]:
        return {"at": time.perf_counter(), "cpu": time.process_time(),
                "ticks": {pid: cpu_ticks([pid]) for pid in _sandbox_pids()}}

    def ended(_result: object) -> None:  # timed from the first item: the sandboxes' start is not the eval's pace
        seen[0] += 1
        if seen[0] == 1 or seen[0] == items:  # the last before the eval closes its sandboxes
            ends.append(look())

    try:
        report = await session.eval_async("fetch", "cases.jsonl", program=program, concurrency=concurrency, on_result=ended)
    finally:
        await session.aclose()
    if report.summary.completed != report.summary.items or len(ends) != 2:
        raise SystemExit(f"benchmark eval failed: {report.summary.to_json()}")
    first, last = ends
    ticks = sum(t - first["ticks"].get(pid, 0) for pid, t in last["ticks"].items())
    timed = items - 1  # items after the first, over the time since it ended (each waits 50 ms at least)
    return Timed(timed / max(1e-9, last["at"] - first["at"]), len(last["ticks"].keys() - first["ticks"].keys()),
                 (last["cpu"] - first["cpu"]) * 1000 / timed, ticks / os.sysconf("SC_CLK_TCK") * 1000 / timed)


def _sandbox_pids() -> list[int]:
    """The processes below this one that run the sandbox's runner (the eval's pool is its own)."""
    pids = []
    for pid in descendants(os.getpid()):
        try:
            if b"runner.mjs" in Path(f"/proc/{pid}/cmdline").read_bytes():
                pids.append(pid)
        except OSError:
            continue
    return pids


def rows(f: Figures) -> list[Row]:
    label = f"eval items/s, {f['delay_ms']} ms agent, concurrency {f['concurrency']} ({f['items']} items)"
    started = f.get("sandboxes_started")  # absent from a --json written before it was measured
    return [Row(label, f["items_per_s"], "items/s", "{:,.0f}"),
            *([Row("  sandboxes started while the timed items ran", started, "", "{:.0f}"),
               Row("  host CPU per item", f["host_cpu_ms_per_item"], "ms", "{:.2f}"),
               Row("  sandbox CPU per item", f["sandbox_cpu_ms_per_item"], "ms", "{:.2f}")] if started else []),
            Row("  with the in-process executor", f["items_per_s_in_process"], "items/s", "{:,.0f}"),
            Row("  ideal (concurrency / agent latency)", {"median": f["ideal_items_per_s"], "min": f["ideal_items_per_s"],
                                                            "max": f["ideal_items_per_s"]}, "items/s", "{:,.0f}")]


TARGETS: list[Target] = []  # a figure against its ideal, reported, not a target (see the docstring)

"""Eval section of `flow bench`: items per second of `flow eval`'s local executor
with a 50 ms agent at concurrency 50 (a warm sandbox per item in flight), against the
ideal — concurrency / 50 ms — and the same through the in-process executor (what the eval
driver itself costs). `--quick`: 4 at once, 40 items. The Ray figure is its own section
(evals_ray.py). No target: on 2 cores the figure is bound by each run's CPU (≈13 ms of
host and sandbox work around the agent's 50 ms), not by the eval's scheduling — the
in-process figure shows the driver's own share."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import tempfile
import time
from pathlib import Path

from flow_kernel.bench.measure import Figures, Row, Target, stats
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
            rates = []
            for run in range(repeat + 1):  # the first is the warm-up
                rate = asyncio.run(_items_per_s(Path(folder), AGENT.format(delay=delay), conc, sandbox))
                if run:
                    rates.append(rate)
            figures["items_per_s" if sandbox else "items_per_s_in_process"] = stats(rates)
    figures["ideal_items_per_s"] = conc / (delay / 1000)
    figures["ratio_to_ideal"] = figures["items_per_s"]["median"] / figures["ideal_items_per_s"]
    return figures


async def _items_per_s(folder: Path, program: str, concurrency: int, sandbox: bool) -> float:
    from flow_kernel.runtime.session import Session

    ceilings = dataclasses.replace(Ceilings.from_env(), sandboxes=concurrency)  # the person's --concurrency
    session = Session(directory=folder, journal_dir=None, sandbox=sandbox, context=RunContext(ceilings=ceilings))
    started: list[float] = []

    def first(_result: object) -> None:  # timed from the first item: the sandboxes' start is not the eval's pace
        if not started:
            started.append(time.perf_counter())

    try:
        report = await session.eval_async("fetch", "cases.jsonl", program=program, concurrency=concurrency, on_result=first)
    finally:
        await session.aclose()
    if report.summary.completed != report.summary.items:
        raise SystemExit(f"benchmark eval failed: {report.summary.to_json()}")
    # items after the first, over the time since it ended (each item waits 50 ms at least)
    return (report.summary.items - 1) / max(1e-9, time.perf_counter() - started[0])


def rows(f: Figures) -> list[Row]:
    label = f"eval items/s, {f['delay_ms']} ms agent, concurrency {f['concurrency']} ({f['items']} items)"
    return [Row(label, f["items_per_s"], "items/s", "{:,.0f}"),
            Row("  with the in-process executor", f["items_per_s_in_process"], "items/s", "{:,.0f}"),
            Row("  ideal (concurrency / agent latency)", {"median": f["ideal_items_per_s"], "min": f["ideal_items_per_s"],
                                                            "max": f["ideal_items_per_s"]}, "items/s", "{:,.0f}")]


TARGETS: list[Target] = []  # a figure against its ideal, reported, not a target (see the docstring)

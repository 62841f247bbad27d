"""Agent pipeline benchmark: `python -m flow_kernel.bench.agents [--quick] [--json FILE]`.

Two figures of issue 4, each the median (min–max) of repeats after a warm-up, in one run:
- fan-out: `parallelMap` over 200 items with a 50 ms scripted agent at concurrency 20,
  against the ideal 200 / 20 × 50 ms = 500 ms (the ratio is the pipeline's overhead);
- throughput: 10,000 zero-latency scripted agent calls through the whole pipeline
  (sandbox → bridge → budgets, gate, contract, events → back), in calls/s, against raw
  sandbox → host bridge round trips/s measured alongside (`echo_bench`, concurrent).
Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from typing import Any

from flow_kernel.bench.sandbox import _compile, _stats, _timed
from flow_kernel.runtime.executors import SandboxExecutor
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor
from flow_kernel.sandbox.install import ensure_snapshot
from flow_kernel.sandbox.node import find_node
from flow_kernel.sandbox.pool import SandboxPool
from flow_kernel.sandbox.process import SandboxProcess

FANOUT = """limits {{ agent_runs: {n}, steps: 1000000 }}
agent a {{ model: "scripted", script: [slow({delay}ms, "ok")] }}
workflow fan() -> int {{
  limits {{ concurrency: {conc}, agent_runs: {n}, steps: 1000000 }}
  return len(parallelMap(range({n}), i => a("item ${{i}}"), concurrency: {conc}))
}}
fan()
"""

THROUGHPUT = """limits {{ agent_runs: {n}, steps: 10000000, duration: 10m }}
agent a {{ model: "scripted", script: ["ok"] }}
workflow many() -> int {{
  limits {{ concurrency: {conc}, agent_runs: {n}, steps: 10000000, duration: 10m }}
  return len(parallelMap(range({n}), i => a("item"), concurrency: {conc}))
}}
many()
"""


def _checked(outcome: RunOutcome, expected: int) -> None:
    if outcome.error is not None or outcome.result != expected:
        raise SystemExit(f"benchmark run failed: {outcome.to_json()}")


async def measure(quick: bool) -> dict[str, Any]:
    repeat = 3 if quick else 5
    items, delay, conc = (60, 50, 20) if quick else (200, 50, 20)
    calls = 1000 if quick else 10000
    figures: dict[str, Any] = {"repeat": repeat, "fanout_items": items, "fanout_delay_ms": delay,
                               "fanout_concurrency": conc, "throughput_calls": calls}
    pool = SandboxPool()
    executor = SandboxExecutor(pool)
    try:
        fanout = _compile(FANOUT.format(n=items, delay=delay, conc=conc))

        async def fan() -> None:
            _checked(await run_compiled(fanout, executor), items)

        samples = await _timed(fan, repeat)
        ideal = items / conc * delay / 1000
        figures["fanout_s"] = _stats(samples)
        figures["fanout_ideal_s"] = ideal
        figures["ratio_fanout_to_ideal"] = statistics.median(samples) / ideal

        throughput = _compile(THROUGHPUT.format(n=calls, conc=50))

        async def many_sandbox() -> None:
            _checked(await run_compiled(throughput, executor), calls)

        async def many_in_process() -> None:
            _checked(await run_compiled(throughput, InProcessExecutor()), calls)

        sandboxed = await _timed(many_sandbox, repeat)
        in_process = await _timed(many_in_process, repeat)
        figures["pipeline_calls_per_s"] = _stats([calls / t for t in sandboxed])
        figures["pipeline_calls_per_s_in_process"] = _stats([calls / t for t in in_process])
    finally:
        await pool.close()

    process = await SandboxProcess.start(snapshot=ensure_snapshot(find_node()))

    async def echo(op: str, payload: dict[str, Any]) -> Any:
        return payload

    process.handler = echo
    try:
        await process.request("echo_bench", {"n": 200, "concurrent": True})  # warm-up
        rates = []
        for _ in range(repeat):
            result = await process.request("echo_bench", {"n": calls, "concurrent": True})
            rates.append(calls / result["seconds"])
    finally:
        await process.close()
    figures["bridge_calls_per_s"] = _stats(rates)
    figures["ratio_pipeline_to_bridge"] = figures["pipeline_calls_per_s"]["median"] / figures["bridge_calls_per_s"]["median"]
    return figures


def report(f: dict[str, Any]) -> str:
    def line(name: str, s: dict[str, float], unit: str, fmt: str) -> str:
        return f"{name:<42} {fmt.format(s['median'])} {unit}  ({fmt.format(s['min'])}–{fmt.format(s['max'])})"

    fan = f"parallelMap {f['fanout_items']} × {f['fanout_delay_ms']} ms, conc {f['fanout_concurrency']}"
    return "\n".join([
        line(fan, f["fanout_s"], "s", "{:.3f}"),
        f"{'  ideal':<42} {f['fanout_ideal_s']:.3f} s",
        f"{'  ratio fan-out / ideal':<42} {f['ratio_fanout_to_ideal']:.2f}×",
        line(f"agent calls/s, pipeline ({f['throughput_calls']:,} calls)", f["pipeline_calls_per_s"], "calls/s", "{:,.0f}"),
        line("agent calls/s, pipeline in-process", f["pipeline_calls_per_s_in_process"], "calls/s", "{:,.0f}"),
        line("raw bridge calls/s (sandbox → host)", f["bridge_calls_per_s"], "calls/s", "{:,.0f}"),
        f"{'  ratio pipeline / raw bridge':<42} {f['ratio_pipeline_to_bridge']:.2f}×",
    ])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m flow_kernel.bench.agents", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and smaller inputs (a smoke run)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    figures = asyncio.run(measure(args.quick))
    if not args.quiet:
        print(report(figures))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=2)
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])

"""Sandbox benchmark: `python -m flow_kernel.bench.sandbox [--quick] [--json FILE]`.

Prints, in one run, each figure as median (min–max) over repeats after a warm-up:
- cold start (spawn → ready, no snapshot) vs snapshot start, and their ratio;
- a trivial Flow run on a warm sandbox (compile excluded), ms;
- a host → sandbox bridge round trip (ping), µs;
- sandbox → host calls/s, sequential and concurrent (`echo_bench`);
- a CPU-bound Flow program in the sandbox vs the same generated module in host
  CPython (the in-process executor), and their ratio.
Nothing here asserts a time; ratios are what hold on a noisy machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import Compiled, compile_source
from flow_kernel.runtime.executors import SandboxExecutor
from flow_kernel.runtime.run import run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor
from flow_kernel.sandbox.install import ensure_snapshot
from flow_kernel.sandbox.node import find_node
from flow_kernel.sandbox.pool import SandboxPool
from flow_kernel.sandbox.process import SandboxProcess

CPU_BOUND = """
limits { steps: 100000000 }
workflow primes(n: int) -> int {
  limits { steps: 100000000 }
  var found = 0
  for x in range(2, n) {
    var d = 2
    var prime = true
    while d * d <= x {
      if x % d == 0 { prime = false
        break }
      d = d + 1
    }
    if prime { found = found + 1 }
  }
  return found
}
let words = map(range(2000), i => "w${i % 37}")
let groups = groupBy(words, w => w)
[primes(N), len(groups), sum(map(range(20000), i => i * 2))]
"""


def _stats(samples: list[float]) -> dict[str, float]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples)}


async def _timed(fn: Callable[[], Awaitable[Any]], repeat: int, warmup: int = 1) -> list[float]:
    for _ in range(warmup):
        await fn()
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - started)
    return out


def _compile(source: str) -> Compiled:
    compiled = compile_source(SourceFile("bench.flow", source))
    if not compiled.ok:
        raise SystemExit("benchmark program does not compile: " + "; ".join(d.message for d in compiled.check.errors))
    return compiled


async def measure(quick: bool) -> dict[str, Any]:
    repeat = 3 if quick else 7
    trivial = _compile("1 + 1")
    cpu = _compile(CPU_BOUND.replace("N", "3000" if quick else "20000"))
    snapshot = ensure_snapshot(find_node())
    figures: dict[str, Any] = {"repeat": repeat, "snapshot": snapshot is not None}

    async def start(snap: Any) -> None:
        process = await SandboxProcess.start(snapshot=snap)
        await process.close()

    figures["cold_start_s"] = _stats(await _timed(lambda: start(None), max(2, repeat // 2), warmup=0))
    if snapshot is not None:
        figures["snapshot_start_s"] = _stats(await _timed(lambda: start(snapshot), repeat, warmup=0))
        figures["ratio_snapshot_to_cold"] = figures["snapshot_start_s"]["median"] / figures["cold_start_s"]["median"]

    pool = SandboxPool()
    executor = SandboxExecutor(pool)
    figures["trivial_run_ms"] = {k: v * 1000 for k, v in _stats(await _timed(lambda: run_compiled(trivial, executor), repeat * 3)).items()}

    process = await SandboxProcess.start(snapshot=snapshot)

    async def echo(op: str, payload: dict[str, Any]) -> Any:
        return payload

    process.handler = echo
    pings = 200 if quick else 2000
    samples = []
    for _ in range(pings):
        started = time.perf_counter()
        await process.request("ping", {"n": 1})
        samples.append(time.perf_counter() - started)
    figures["round_trip_us"] = {k: v * 1e6 for k, v in _stats(samples).items()}
    n = 2000 if quick else 10000
    sequential = await process.request("echo_bench", {"n": n, "concurrent": False})
    concurrent = await process.request("echo_bench", {"n": n, "concurrent": True})
    figures["sandbox_calls_per_s"] = {"sequential": n / sequential["seconds"], "concurrent": n / concurrent["seconds"]}
    await process.close()

    host = InProcessExecutor()
    sandboxed = await _timed(lambda: run_compiled(cpu, executor), repeat)
    in_process = await _timed(lambda: run_compiled(cpu, host), repeat)
    figures["cpu_sandbox_s"] = _stats(sandboxed)
    figures["cpu_host_cpython_s"] = _stats(in_process)
    figures["ratio_cpu_sandbox_to_cpython"] = statistics.median(sandboxed) / statistics.median(in_process)
    await pool.close()
    return figures


def report(f: dict[str, Any]) -> str:
    def line(name: str, s: dict[str, float], unit: str, fmt: str = "{:.3f}") -> str:
        return f"{name:<34} {fmt.format(s['median'])} {unit}  ({fmt.format(s['min'])}–{fmt.format(s['max'])})"

    rows = [line("cold start (spawn → ready)", f["cold_start_s"], "s")]
    if "snapshot_start_s" in f:
        rows.append(line("snapshot start (spawn → ready)", f["snapshot_start_s"], "s"))
        rows.append(f"{'  ratio snapshot / cold':<34} {f['ratio_snapshot_to_cold']:.2f}×")
    rows.append(line("trivial run, warm sandbox", f["trivial_run_ms"], "ms", "{:.1f}"))
    rows.append(line("bridge round trip (host → sandbox)", f["round_trip_us"], "µs", "{:.0f}"))
    calls = f["sandbox_calls_per_s"]
    rows.append(f"{'sandbox → host calls/s':<34} {calls['sequential']:,.0f} sequential, {calls['concurrent']:,.0f} concurrent")
    rows.append(line("CPU-bound program, sandbox", f["cpu_sandbox_s"], "s"))
    rows.append(line("CPU-bound program, host CPython", f["cpu_host_cpython_s"], "s"))
    rows.append(f"{'  ratio sandbox / CPython':<34} {f['ratio_cpu_sandbox_to_cpython']:.2f}×")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m flow_kernel.bench.sandbox", description=__doc__.splitlines()[0])
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

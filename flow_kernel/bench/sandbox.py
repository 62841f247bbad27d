"""Sandbox section of `flow bench`, each figure the median (min–max) of repeats after a warm-up:
- cold start (spawn → ready, no snapshot) vs snapshot start, and their ratio;
- a trivial Flow run on a warm sandbox (compile excluded), ms;
- a host → sandbox bridge round trip (ping), µs;
- sandbox → host calls/s, sequential and concurrent (`echo_bench`);
- a CPU-bound Flow program in the sandbox vs the same generated module in host
  CPython (the in-process executor), and their ratio; the target's figure is the prime
  counter (CPU_BOUND), two more programs are detail rows: string building and
  interpolation (TEXT_BOUND) and records in nested loops (RECORDS_BOUND).
Ratios are what hold on a noisy machine. Each of the three programs is also measured in
CPU time (detail rows, Linux): the sandbox's Node main thread against this process's, which
the machine's load moves far less than the wall clock.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import statistics
import time
from pathlib import Path
from typing import Any

from flow_kernel.bench.measure import Figures, Row, Target, compile_flow, stats, timed_async
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

# Text processing: interpolation, split, upper, string concatenation and length tests.
TEXT_BOUND = """
limits { steps: 100000000 }
workflow text(n: int) -> int {
  limits { steps: 100000000 }
  var total = 0
  var longest = ""
  for i in range(n) {
    let line = "item ${i}: ${i % 7} of ${n} [${i * 3}]"
    var acc = ""
    for p in split(line, " ") {
      if len(p) > 2 { acc = acc + upper(p) + "-" } else { acc = "${acc}${p}." }
    }
    if len(acc) > len(longest) { longest = acc }
    total = total + len(acc)
  }
  return total + len(longest)
}
text(N)
"""

# Records: objects built by `map`, then compared field by field in a nested loop.
RECORDS_BOUND = """
limits { steps: 100000000 }
workflow records(n: int) -> int {
  limits { steps: 100000000 }
  let people = map(range(n), i => ({name: "p${i}", age: i % 90, score: (i * 37) % 101}))
  var best = 0
  for p in people {
    var hits = 0
    for q in people {
      if q.age == p.age and q.score > p.score { hits = hits + 1 }
    }
    if hits > best { best = hits }
  }
  return best
}
records(N)
"""

# (figure key, program, N quick, N full, label of its detail rows)
MORE_PROGRAMS = [
    ("text", TEXT_BOUND, "2000", "15000", "text program (interpolation, split)"),
    ("records", RECORDS_BOUND, "300", "800", "records program (nested loops, objects)"),
]


NAME = "sandbox"


def measure(quick: bool) -> Figures:
    return asyncio.run(_measure(quick))


async def _measure(quick: bool) -> Figures:
    repeat = 3 if quick else 7
    trivial = compile_flow("1 + 1")
    cpu = compile_flow(CPU_BOUND.replace("N", "3000" if quick else "20000"))
    snapshot = ensure_snapshot(find_node())
    figures: Figures = {"repeat": repeat, "snapshot": snapshot is not None}

    async def start(snap: Any) -> None:
        process = await SandboxProcess.start(snapshot=snap)
        await process.close()

    # A cold start takes seconds; the kernel section measures it again against the first cell.
    figures["cold_start_s"] = stats(await timed_async(lambda: start(None), 1 if quick else 3, warmup=0))
    if snapshot is not None:
        figures["snapshot_start_s"] = stats(await timed_async(lambda: start(snapshot), repeat, warmup=0))
        figures["ratio_snapshot_to_cold"] = figures["snapshot_start_s"]["median"] / figures["cold_start_s"]["median"]

    pool = SandboxPool()
    executor = SandboxExecutor(pool)
    figures["trivial_run_ms"] = stats(await timed_async(lambda: run_compiled(trivial, executor), repeat * 3), 1000)

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
    figures["round_trip_us"] = stats(samples, 1e6)
    n = 2000 if quick else 10000
    sequential = await process.request("echo_bench", {"n": n, "concurrent": False})
    concurrent = await process.request("echo_bench", {"n": n, "concurrent": True})
    figures["sandbox_calls_per_s"] = {"sequential": n / sequential["seconds"], "concurrent": n / concurrent["seconds"]}
    await process.close()

    host = InProcessExecutor()
    sandboxed = await timed_async(lambda: run_compiled(cpu, executor), repeat)
    in_process = await timed_async(lambda: run_compiled(cpu, host), repeat)
    figures["cpu_sandbox_s"] = stats(sandboxed)
    figures["cpu_host_cpython_s"] = stats(in_process)
    figures["ratio_cpu_sandbox_to_cpython"] = statistics.median(sandboxed) / statistics.median(in_process)
    cpu_times = await _cpu_times(cpu, executor, host, repeat)
    if cpu_times is not None:
        figures["cpu_sandbox_thread_cpu_s"] = stats(cpu_times[0])
        figures["cpu_host_cpython_cpu_s"] = stats(cpu_times[1])
        figures["ratio_cpu_time_sandbox_to_cpython"] = statistics.median(cpu_times[0]) / statistics.median(cpu_times[1])
    for key, source, quick_n, full_n, _label in MORE_PROGRAMS:
        program = compile_flow(source.replace("N", quick_n if quick else full_n))
        sandboxed = await timed_async(functools.partial(run_compiled, program, executor), repeat)
        in_process = await timed_async(functools.partial(run_compiled, program, host), repeat)
        figures[f"cpu_{key}_sandbox_s"] = stats(sandboxed)
        figures[f"cpu_{key}_host_cpython_s"] = stats(in_process)
        figures[f"ratio_cpu_{key}_sandbox_to_cpython"] = statistics.median(sandboxed) / statistics.median(in_process)
        cpu_times = await _cpu_times(program, executor, host, repeat)
        if cpu_times is not None:
            figures[f"cpu_{key}_sandbox_thread_cpu_s"] = stats(cpu_times[0])
            figures[f"cpu_{key}_host_cpython_cpu_s"] = stats(cpu_times[1])
            figures[f"ratio_cpu_time_{key}_sandbox_to_cpython"] = (statistics.median(cpu_times[0])
                                                                   / statistics.median(cpu_times[1]))
    await pool.close()
    return figures


def thread_cpu_s(pid: int) -> float | None:
    """CPU seconds the main thread of process `pid` has run (Linux `schedstat`, in ns), or None."""
    try:
        return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


async def _cpu_times(program: Any, executor: SandboxExecutor, host: InProcessExecutor,
                     repeat: int) -> tuple[list[float], list[float]] | None:
    """CPU seconds of `repeat` runs of `program` each way, alternated, after the runs before
    (the warm-up): the sandbox's Node main thread (where Python runs; the bridge's and the
    host's side of a run are not in it) and this process's for the in-process run. None
    where the thread's CPU cannot be read, or the pool holds more than one sandbox."""
    sandbox: list[float] = []
    in_process: list[float] = []
    for _ in range(repeat):
        pids = executor.pool.pids()
        before = thread_cpu_s(pids[0]) if len(pids) == 1 else None
        if before is None:
            return None
        gc.collect()
        await run_compiled(program, executor)
        after = thread_cpu_s(pids[0])
        if after is None or executor.pool.pids() != pids:  # the process ended or was replaced
            return None
        sandbox.append(after - before)
        gc.collect()
        started = time.process_time()
        await run_compiled(program, host)
        in_process.append(time.process_time() - started)
    return sandbox, in_process


def rows(f: Figures) -> list[Row]:
    out = [Row("cold start (spawn → ready, no snapshot)", f["cold_start_s"], "s", "{:.3f}")]
    if "snapshot_start_s" in f:
        out.append(Row("snapshot start (spawn → ready)", f["snapshot_start_s"], "s", "{:.3f}"))
        out.append(Row("  ratio snapshot / cold", f["ratio_snapshot_to_cold"], "×", "{:.2f}"))
    calls = f["sandbox_calls_per_s"]
    out += [
        Row("trivial run, warm sandbox", f["trivial_run_ms"], "ms"),
        Row("bridge round trip (host → sandbox ping)", f["round_trip_us"], "µs", "{:.0f}"),
        Row("sandbox → host calls/s", f"{calls['sequential']:,.0f} sequential, {calls['concurrent']:,.0f} concurrent"),
        Row("CPU-bound program, sandbox", f["cpu_sandbox_s"], "s", "{:.3f}"),
        Row("CPU-bound program, host CPython (in-process)", f["cpu_host_cpython_s"], "s", "{:.3f}"),
    ]
    if "cpu_sandbox_thread_cpu_s" in f:  # Linux only, and absent from figures taken before
        out += [
            Row("  CPU time: sandbox's Node main thread", f["cpu_sandbox_thread_cpu_s"], "s", "{:.3f}"),
            Row("  CPU time: host CPython (this process)", f["cpu_host_cpython_cpu_s"], "s", "{:.3f}"),
            Row("    ratio sandbox / host CPython, CPU time", f["ratio_cpu_time_sandbox_to_cpython"], "×", "{:.2f}"),
        ]
    for key, _source, _quick_n, _full_n, label in MORE_PROGRAMS:
        if f"cpu_{key}_sandbox_s" in f:  # absent from figures taken before these programs were added
            out += [
                Row(f"{label}, sandbox", f[f"cpu_{key}_sandbox_s"], "s", "{:.3f}"),
                Row(f"{label}, host CPython", f[f"cpu_{key}_host_cpython_s"], "s", "{:.3f}"),
                Row("  ratio sandbox / host CPython", f[f"ratio_cpu_{key}_sandbox_to_cpython"], "×", "{:.2f}"),
            ]
        if f"ratio_cpu_time_{key}_sandbox_to_cpython" in f:  # Linux only, and absent from figures taken before
            out += [
                Row("  CPU time: sandbox's Node main thread", f[f"cpu_{key}_sandbox_thread_cpu_s"], "s", "{:.3f}"),
                Row("  CPU time: host CPython (this process)", f[f"cpu_{key}_host_cpython_cpu_s"], "s", "{:.3f}"),
                Row("    ratio sandbox / host CPython, CPU time", f[f"ratio_cpu_time_{key}_sandbox_to_cpython"], "×",
                    "{:.2f}"),
            ]
    return out


TARGETS = [
    Target(
        "CPU-bound Flow program in the sandbox",
        lambda f: f"{f['cpu_sandbox_s']['median'] * 1000:,.0f} ms",
        lambda f: f"host CPython {f['cpu_host_cpython_s']['median'] * 1000:,.0f} ms",
        lambda f: float(f["ratio_cpu_sandbox_to_cpython"]),
        2.5,
        goal=1.5,
    ),
]

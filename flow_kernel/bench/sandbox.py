"""Sandbox section of `flow bench`, each figure the median (min–max) of repeats after a warm-up:
- cold start (spawn → ready, no snapshot) vs snapshot start, and their ratio;
- a trivial Flow run on a warm sandbox (compile excluded), ms;
- a host → sandbox bridge round trip (ping), µs;
- sandbox → host calls/s, sequential and concurrent (`echo_bench`);
- a CPU-bound Flow program in the sandbox vs the same generated module in host
  CPython (the in-process executor), and their ratio; the target's figure is the prime
  counter (CPU_BOUND), two more programs are detail rows: string building and
  interpolation (TEXT_BOUND) and records in nested loops (RECORDS_BOUND).
Ratios are what hold on a noisy machine: each program's sandboxed and in-process runs
alternate, run by run, so that a burst of other work on the machine falls on both sides.
Each of the three programs is also measured in CPU time (detail rows, Linux): the sandbox's
Node main thread against this process's, which the machine's load moves far less than the
wall clock; for the prime counter a row splits those runs' wall clock into the main
thread's CPU, its time waiting for a CPU, and the rest (the bridge, the host's side).
The prime counter's first run in a sandbox just started (as a kernel's first sandbox is),
sent as soon as it is ready, is a detail row beside the warm runs: compiled wasm code is
not in the memory snapshot, so that run pays V8's lazy compiles, and while the optimizing
tier's code for the interpreter is still being compiled in the background it runs at the
baseline tier (docs/performance.md, "The first CPU-heavy run after a start").
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import statistics
import time
from dataclasses import dataclass, field
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
    sandboxed, in_process = await _alternated(cpu, executor, host, repeat)
    figures["cpu_sandbox_s"] = stats(sandboxed)
    figures["cpu_host_cpython_s"] = stats(in_process)
    figures["ratio_cpu_sandbox_to_cpython"] = statistics.median(sandboxed) / statistics.median(in_process)
    cpu_times = await _cpu_times(cpu, executor, host, repeat)
    if cpu_times is not None:
        figures["cpu_sandbox_thread_cpu_s"] = stats(cpu_times.sandbox)
        figures["cpu_host_cpython_cpu_s"] = stats(cpu_times.in_process)
        figures["ratio_cpu_time_sandbox_to_cpython"] = (statistics.median(cpu_times.sandbox)
                                                        / statistics.median(cpu_times.in_process))
        figures["cpu_sandbox_wall_split_ms"] = cpu_times.split()
    first = await _first_runs(cpu, 2 if quick else repeat)
    if first is not None:
        figures["cpu_first_run_after_start_s"] = stats(first.wall)
        figures["cpu_first_run_after_start_split_ms"] = first.split()
    for key, source, quick_n, full_n, _label in MORE_PROGRAMS:
        program = compile_flow(source.replace("N", quick_n if quick else full_n))
        sandboxed, in_process = await _alternated(program, executor, host, repeat)
        figures[f"cpu_{key}_sandbox_s"] = stats(sandboxed)
        figures[f"cpu_{key}_host_cpython_s"] = stats(in_process)
        figures[f"ratio_cpu_{key}_sandbox_to_cpython"] = statistics.median(sandboxed) / statistics.median(in_process)
        cpu_times = await _cpu_times(program, executor, host, repeat)
        if cpu_times is not None:
            figures[f"cpu_{key}_sandbox_thread_cpu_s"] = stats(cpu_times.sandbox)
            figures[f"cpu_{key}_host_cpython_cpu_s"] = stats(cpu_times.in_process)
            figures[f"ratio_cpu_time_{key}_sandbox_to_cpython"] = (statistics.median(cpu_times.sandbox)
                                                                   / statistics.median(cpu_times.in_process))
    await pool.close()
    return figures


def thread_sched_s(pid: int) -> tuple[float, float] | None:
    """(seconds run on a CPU, seconds waited on a run queue) of the main thread of process
    `pid` (Linux `schedstat`, in ns), or None."""
    try:
        fields = Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()
        return int(fields[0]) / 1e9, int(fields[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def threads_cpu_s(pid: int) -> float | None:
    """CPU seconds all threads of process `pid` have run (Linux `schedstat` of each task), or
    None. A thread that ended is not counted: read it around work that ends no thread."""
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError):  # a thread ending between the listing and the read
                total += int((task / "schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e9


def thread_cpu_s(pid: int) -> float | None:
    """CPU seconds the main thread of process `pid` has run (Linux `schedstat`, in ns), or None."""
    sched = thread_sched_s(pid)
    return sched[0] if sched is not None else None


async def _alternated(program: Any, executor: SandboxExecutor, host: InProcessExecutor,
                      repeat: int) -> tuple[list[float], list[float]]:
    """Wall seconds of `repeat` runs of `program` in the sandbox and in-process, one of each
    in turn after one warm-up run each, a collection before each."""
    sandboxed: list[float] = []
    in_process: list[float] = []
    for _ in range(repeat + 1):
        for runner, samples in ((executor, sandboxed), (host, in_process)):
            gc.collect()
            started = time.perf_counter()
            await run_compiled(program, runner)
            samples.append(time.perf_counter() - started)
    return sandboxed[1:], in_process[1:]


@dataclass
class CpuTimes:
    """Per run, seconds: the sandbox's Node main thread on a CPU and waiting for one, the
    sandboxed run's wall clock, and this process's CPU for the in-process run."""

    sandbox: list[float] = field(default_factory=list)
    waiting: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    in_process: list[float] = field(default_factory=list)

    def split(self) -> dict[str, float]:
        """The sandboxed runs' wall clock as medians, ms: the main thread's CPU, its wait for a
        CPU (other work on the machine, or the process's own V8 threads), and the rest — what
        neither is: the bridge's lines, the host's side of the run, the wake-ups between."""
        rest = [w - c - q for w, c, q in zip(self.wall, self.sandbox, self.waiting, strict=True)]
        return {name: statistics.median(values) * 1000 for name, values in
                (("wall", self.wall), ("thread_cpu", self.sandbox), ("waiting", self.waiting), ("rest", rest))}


async def _cpu_times(program: Any, executor: SandboxExecutor, host: InProcessExecutor, repeat: int) -> CpuTimes | None:
    """CPU seconds of `repeat` runs of `program` each way, alternated, after the runs before
    (the warm-up): the sandbox's Node main thread (where Python runs; the bridge's and the
    host's side of a run are not in it) and this process's for the in-process run; with
    the sandboxed runs' wall clock and the main thread's wait for a CPU. None where the
    thread's CPU cannot be read, or the pool holds more than one sandbox."""
    times = CpuTimes()
    for _ in range(repeat):
        pids = executor.pool.pids()
        before = thread_sched_s(pids[0]) if len(pids) == 1 else None
        if before is None:
            return None
        gc.collect()
        started = time.perf_counter()
        await run_compiled(program, executor)
        wall = time.perf_counter() - started
        after = thread_sched_s(pids[0])
        if after is None or executor.pool.pids() != pids:  # the process ended or was replaced
            return None
        times.sandbox.append(after[0] - before[0])
        times.waiting.append(after[1] - before[1])
        times.wall.append(wall)
        gc.collect()
        started = time.process_time()
        await run_compiled(program, host)
        times.in_process.append(time.process_time() - started)
    return times


@dataclass
class FirstRuns:
    """Per new sandbox, seconds, of the first run in it: the wall clock, the Node main
    thread's CPU, and the CPU of the process's other threads (V8's compiles, GC helpers)."""

    wall: list[float] = field(default_factory=list)
    main: list[float] = field(default_factory=list)
    others: list[float] = field(default_factory=list)

    def split(self) -> dict[str, float]:
        """Medians, ms."""
        return {name: statistics.median(values) * 1000 for name, values in
                (("wall", self.wall), ("thread_cpu", self.main), ("other_threads_cpu", self.others))}


def _main_and_all_cpu_s(pid: int) -> tuple[float, float] | None:
    """CPU seconds of process `pid`'s main thread and of all its threads, or None."""
    main, every = thread_cpu_s(pid), threads_cpu_s(pid)
    return None if main is None or every is None else (main, every)


async def _first_runs(program: Any, starts: int) -> FirstRuns | None:
    """The first run of `program` in each of `starts` new sandboxes, one at a time, each
    started as a kernel's first sandbox is (a pool of one, prestarted from the snapshot, no
    warm-up run: only spares run one) and run as soon as it is ready. None where the
    threads' CPU cannot be read."""
    first = FirstRuns()
    for _ in range(starts):
        executor = SandboxExecutor(max_processes=1)
        try:
            await executor.pool.prestart()
            pids = executor.pool.pids()
            if len(pids) != 1:
                return None
            before = _main_and_all_cpu_s(pids[0])
            gc.collect()
            started = time.perf_counter()
            await run_compiled(program, executor)
            wall = time.perf_counter() - started
            after = _main_and_all_cpu_s(pids[0])
            if before is None or after is None or executor.pool.pids() != pids:
                return None
            first.wall.append(wall)
            first.main.append(after[0] - before[0])
            first.others.append((after[1] - after[0]) - (before[1] - before[0]))
        finally:
            await executor.close()
    return first


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
    if "cpu_sandbox_wall_split_ms" in f:  # absent from figures taken before it was added
        split = f["cpu_sandbox_wall_split_ms"]
        out.append(Row("  those sandboxed runs' wall clock", f"{split['wall']:.1f} ms = main thread {split['thread_cpu']:.1f} "
                       f"+ waiting for a CPU {split['waiting']:.1f} + the rest (bridge, host) {split['rest']:.1f}"))
    if "cpu_first_run_after_start_s" in f:  # Linux only, and absent from figures taken before it was added
        first = f["cpu_first_run_after_start_split_ms"]
        warm = f"warm {f['cpu_sandbox_s']['median'] * 1000:.0f} ms"
        if "cpu_sandbox_thread_cpu_s" in f:
            warm += f", main thread {f['cpu_sandbox_thread_cpu_s']['median'] * 1000:.0f} ms"
        out += [
            Row("  first CPU-bound run after a sandbox starts", f["cpu_first_run_after_start_s"], "s", "{:.3f}"),
            Row("    its CPU", f"main thread {first['thread_cpu']:.0f} ms + V8's other threads "
                f"{first['other_threads_cpu']:.0f} ms (wall {first['wall']:.0f} ms; {warm})"),
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

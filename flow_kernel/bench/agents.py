"""Agent section of `flow bench`, each figure the median (min–max) of repeats after a warm-up:
- fan-out: `parallelMap` over 200 items with a 50 ms scripted agent at concurrency 20,
  against the ideal 200 / 20 × 50 ms = 500 ms (the ratio is the pipeline's overhead);
  beside it, from extra runs whose sink notes when each call's `agent.started` and
  `agent.completed` reach the host, where the time beyond the ideal goes: the run's start
  to the first call, each wave's last start after the wave before beyond the agent's
  latency (the critical path), a wave's spread of starts, the last call to the run's end;
- throughput: 10,000 zero-latency scripted agent calls through the whole pipeline
  (sandbox → bridge → budgets, gate, contract, events → back), in calls/s, against raw
  sandbox → host bridge round trips/s measured alongside (`echo_bench`, concurrent);
- the throughput program again with a host that answers each agent call at once and does
  none of its own work (`AnsweringAtOnce`): the sandbox's side alone — the generated code,
  `parallelMap`'s workers, the request and its reply — and so the most any host pipeline
  could reach on this bridge, as a ratio to the raw bridge beside the pipeline's;
- beside each throughput, the CPU per call of the host process (`process_time`) and of the
  sandbox processes (utime + stime, 10 ms ticks): figures the load of other processes
  moves far less than calls/s, and which side bounds the rate; and, on Linux, of the
  sandbox's Node main thread alone (`schedstat`, ns: where its Python and the bridge's
  JavaScript run), precise enough to show a change of a µs a call.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from flow_kernel.bench.measure import Figures, Row, Target, compile_flow, stats, timed_async
from flow_kernel.bench.notebooks import cpu_ticks
from flow_kernel.bench.sandbox import thread_cpu_s
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.executors import SandboxExecutor
from flow_kernel.runtime.host import HostServices
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


class AnsweringAtOnce:
    """An executor whose host answers every agent request at once with `ANSWER`, without the
    pipeline (budgets, gate, contract, events, traces); every other request and the run's
    events go to the real host. The throughput program through it measures the sandbox's
    side of an agent call alone: a bench instrument, never a way to run a program."""

    ANSWER = "ok"

    def __init__(self, pool: SandboxPool) -> None:
        self.pool = pool

    async def run(self, module: str, payload: dict[str, Any], host: HostServices) -> dict[str, Any]:
        async def handle(op: str, request: Any) -> Any:
            return self.ANSWER if op == "agent" else await host.handle(op, request)

        return await self.pool.run(module, payload, handler=handle, on_notify=host.on_notify,
                                   eager=lambda op, _request: op == "agent", abort=host.stop_signal())


def _checked(outcome: RunOutcome, expected: int) -> None:
    if outcome.error is not None or outcome.result != expected:
        raise SystemExit(f"benchmark run failed: {outcome.to_json()}")


NAME = "agents"
TICKS_PER_S = os.sysconf("SC_CLK_TCK")
FANOUT_PROFILE_RUNS = 3  # extra fan-out runs with a timing sink, besides the timed ones


class CallTimes:
    """A run sink: when each agent call's `agent.started` and `agent.completed` reach the
    host (`perf_counter`), and the fan-out figures made of them."""

    def __init__(self) -> None:
        self.started: list[float] = []
        self.ended: list[float] = []

    def __call__(self, event: dict[str, Any]) -> None:
        if event["type"] == "agent.started":
            self.started.append(time.perf_counter())
        elif event["type"] == "agent.completed":
            self.ended.append(time.perf_counter())

    def figures(self, run_start: float, run_end: float, width: int, delay_s: float) -> dict[str, float]:
        """ms: run start → first call; the median over waves (`width` calls each, by start) of
        a wave's last start after the previous wave's, beyond `delay_s`, and of a wave's spread
        of starts; last call's end → run end."""
        starts = sorted(self.started)
        waves = [starts[i:i + width] for i in range(0, len(starts), width)]
        lasts = [wave[-1] for wave in waves]
        beyond = [b - a - delay_s for a, b in itertools.pairwise(lasts)] or [0.0]
        return {"start": (starts[0] - run_start) * 1000,
                "per_wave": statistics.median(beyond) * 1000,
                "spread": statistics.median(wave[-1] - wave[0] for wave in waves) * 1000,
                "end": (run_end - max(self.ended)) * 1000}


class CpuPerCall:
    """The host's and the sandbox processes' CPU over each measured run, per call."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.host: list[float] = []
        self.sandbox: list[float] = []
        self.thread: list[float] = []  # the sandbox's Node main thread, where readable

    async def measure(self, pids: Callable[[], list[int]], run: Callable[[], Awaitable[None]]) -> None:
        """`run()` awaited; `pids()` the sandbox processes to count (read before and after)."""
        before = pids()
        ticks, threads, cpu = cpu_ticks(before), _main_threads(before), time.process_time()
        await run()
        self.host.append(time.process_time() - cpu)
        after = pids()
        self.sandbox.append((cpu_ticks(after) - ticks) / TICKS_PER_S)
        if threads is not None and after == before and (now := _main_threads(after)) is not None:
            self.thread.append(now - threads)

    def figures(self, prefix: str, repeat: int) -> Figures:
        """µs per call over the last `repeat` runs (the warm-up's left out); the main-thread
        figure only when every run could be read (Linux, no process replaced mid-run)."""
        scale = 1e6 / self.calls
        figures = {f"{prefix}_host_cpu_us": stats(self.host[-repeat:], scale),
                   f"{prefix}_sandbox_cpu_us": stats(self.sandbox[-repeat:], scale)}
        if len(self.thread) == len(self.host):
            figures[f"{prefix}_sandbox_thread_cpu_us"] = stats(self.thread[-repeat:], scale)
        return figures


def _main_threads(pids: list[int]) -> float | None:
    """CPU seconds of the processes' main threads together, or None if one cannot be read."""
    total = 0.0
    for pid in pids:
        seconds = thread_cpu_s(pid)
        if seconds is None:
            return None
        total += seconds
    return total


def measure(quick: bool) -> Figures:
    return asyncio.run(_measure(quick))


async def _measure(quick: bool) -> Figures:
    repeat = 3 if quick else 5
    items, delay, conc = (60, 50, 20) if quick else (200, 50, 20)
    calls = 1000 if quick else 10000
    figures: Figures = {"repeat": repeat, "fanout_items": items, "fanout_delay_ms": delay,
                        "fanout_concurrency": conc, "throughput_calls": calls}
    pool = SandboxPool()
    executor = SandboxExecutor(pool)
    try:
        fanout = compile_flow(FANOUT.format(n=items, delay=delay, conc=conc))

        async def fan() -> None:
            _checked(await run_compiled(fanout, executor), items)

        samples = await timed_async(fan, repeat)
        ideal = items / conc * delay / 1000
        figures["fanout_s"] = stats(samples)
        figures["fanout_ideal_s"] = ideal
        figures["ratio_fanout_to_ideal"] = statistics.median(samples) / ideal
        figures.update(await _fanout_profile(fanout, executor, items, conc, delay / 1000))

        throughput = compile_flow(THROUGHPUT.format(n=calls, conc=50))

        pipeline_cpu = CpuPerCall(calls)

        async def many_sandbox() -> None:
            async def run() -> None:
                _checked(await run_compiled(throughput, executor), calls)

            await pipeline_cpu.measure(pool.pids, run)

        async def many_in_process() -> None:
            _checked(await run_compiled(throughput, InProcessExecutor()), calls)

        floor_cpu = CpuPerCall(calls)
        at_once = AnsweringAtOnce(pool)

        async def many_answered_at_once() -> None:
            async def run() -> None:
                _checked(await run_compiled(throughput, at_once), calls)

            await floor_cpu.measure(pool.pids, run)

        sandboxed = await timed_async(many_sandbox, repeat)
        in_process = await timed_async(many_in_process, repeat)
        floor = await timed_async(many_answered_at_once, repeat)
        figures["pipeline_calls_per_s"] = stats([calls / t for t in sandboxed])
        figures.update(pipeline_cpu.figures("pipeline", repeat))
        figures["pipeline_calls_per_s_in_process"] = stats([calls / t for t in in_process])
        figures["floor_calls_per_s"] = stats([calls / t for t in floor])
        figures.update(floor_cpu.figures("floor", repeat))
    finally:
        await pool.close()

    process = await SandboxProcess.start(snapshot=ensure_snapshot(find_node()))

    async def echo(op: str, payload: dict[str, Any]) -> Any:
        return payload

    process.handler = echo
    try:
        await process.request("echo_bench", {"n": 200, "concurrent": True})  # warm-up
        rates = []
        bridge_cpu = CpuPerCall(calls)

        async def echo_run() -> None:
            result = await process.request("echo_bench", {"n": calls, "concurrent": True})
            rates.append(calls / result["seconds"])

        for _ in range(repeat):
            await bridge_cpu.measure(lambda: [process.pid] if process.pid is not None else [], echo_run)
    finally:
        await process.close()
    figures["bridge_calls_per_s"] = stats(rates)
    figures.update(bridge_cpu.figures("bridge", repeat))
    figures["ratio_pipeline_to_bridge"] = figures["pipeline_calls_per_s"]["median"] / figures["bridge_calls_per_s"]["median"]
    figures["ratio_floor_to_bridge"] = figures["floor_calls_per_s"]["median"] / figures["bridge_calls_per_s"]["median"]
    return figures


async def _fanout_profile(fanout: Any, executor: SandboxExecutor, items: int, conc: int, delay_s: float) -> Figures:
    """The fan-out's time beyond the ideal, where it goes (`CallTimes`), over extra runs."""
    profiles: list[dict[str, float]] = []
    for _ in range(FANOUT_PROFILE_RUNS):
        times = CallTimes()
        started = time.perf_counter()
        _checked(await run_compiled(fanout, executor, RunContext(sinks=[times])), items)
        profiles.append(times.figures(started, time.perf_counter(), conc, delay_s))
    return {f"fanout_{key}_ms": stats([p[key] for p in profiles]) for key in ("start", "per_wave", "spread", "end")}


def rows(f: Figures) -> list[Row]:
    fan = f"parallelMap {f['fanout_items']} × {f['fanout_delay_ms']} ms agent, concurrency {f['fanout_concurrency']}"
    return [
        Row(fan, f["fanout_s"], "s", "{:.3f}"),
        Row("  ideal", f["fanout_ideal_s"], "s", "{:.3f}"),
        *_fanout_rows(f),
        Row(f"agent calls/s, whole pipeline ({f['throughput_calls']:,} calls)", f["pipeline_calls_per_s"], "calls/s", "{:,.0f}"),
        Row("agent calls/s, pipeline with in-process executor", f["pipeline_calls_per_s_in_process"], "calls/s", "{:,.0f}"),
        Row("raw bridge calls/s (sandbox → host, concurrent)", f["bridge_calls_per_s"], "calls/s", "{:,.0f}"),
        *_floor_rows(f),
        *_cpu_rows(f),
    ]


def _fanout_rows(f: Figures) -> list[Row]:
    """Where the fan-out's time beyond the ideal goes (absent from figures saved before)."""
    waves = -(-f["fanout_items"] // f["fanout_concurrency"])
    labels = {"start": "  run start → first agent call",
              "per_wave": f"  each wave's last call beyond {f['fanout_delay_ms']} ms ({waves} waves)",
              "spread": f"  spread of a wave's {f['fanout_concurrency']} starts",
              "end": "  last agent call → run end"}
    return [Row(label, f[f"fanout_{key}_ms"], "ms", "{:.2f}") for key, label in labels.items() if f"fanout_{key}_ms" in f]


def _floor_rows(f: Figures) -> list[Row]:
    """The throughput with a host that answers at once (absent from figures saved before)."""
    if "floor_calls_per_s" not in f:
        return []
    return [Row("agent calls/s, host answering at once (sandbox alone)", f["floor_calls_per_s"], "calls/s",
                "{:,.0f}"),
            Row("  … vs raw bridge: the most any host pipeline reaches", f["ratio_floor_to_bridge"], "×",
                "{:.2f}")]


def _cpu_rows(f: Figures) -> list[Row]:
    """The CPU per call rows (absent from figures saved before they were measured)."""
    rows = []
    for prefix, what in (("pipeline", "whole pipeline"), ("floor", "host at once"), ("bridge", "raw bridge")):
        for side, label in (("host", "host"), ("sandbox", "sandbox"), ("sandbox_thread", "  its main thread")):
            key = f"{prefix}_{side}_cpu_us"
            if key in f:
                rows.append(Row(f"  {label} CPU per call, {what}", f[key], "µs", "{:.1f}"))
    return rows


TARGETS = [
    Target(
        "agent calls/s through the whole pipeline",
        lambda f: f"{f['pipeline_calls_per_s']['median']:,.0f} calls/s",
        lambda f: f"raw bridge {f['bridge_calls_per_s']['median']:,.0f} calls/s",
        lambda f: float(f["ratio_pipeline_to_bridge"]),
        0.5,
        at_least=True,
        goal=0.8,
    ),
    Target(
        "  … and in absolute terms",
        lambda f: f"{f['pipeline_calls_per_s']['median']:,.0f} calls/s",
        lambda f: "—",
        lambda f: float(f["pipeline_calls_per_s"]["median"]),
        5000,
        at_least=True,
        unit="calls/s",
    ),
    Target(
        "parallelMap 200 × 50 ms agent, concurrency 20",
        lambda f: f"{f['fanout_s']['median'] * 1000:,.0f} ms",
        lambda f: f"ideal {f['fanout_ideal_s'] * 1000:,.0f} ms",
        lambda f: float(f["ratio_fanout_to_ideal"]),
        1.15,
        goal=1.03,  # issue 34 (issue 23's was 1.04)
    ),
]

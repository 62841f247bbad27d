"""Models-at-scale section of `flow bench`: what streaming and resilience cost.

- **Delta events per second into a run view model**: agent calls whose provider streams
  (an in-process provider that reports 200 pieces per call as fast as it can, through the
  same `on_delta` the official clients' streams use) run through the real pipeline and
  host, and every `agent.delta` event is folded into a `RunModel`, as the live view does.
  The merger's throttle (~20 events a second per call) is set to zero here, so the figure
  is the pipeline's capacity, not the throttle; with the throttle on, a call sends at most
  ~20 a second whatever the model does (reported beside it).
- **Added latency per call of the resilience layer**: one request through a provider's
  guard (`enter` and `success`: breaker, Retry-After, both buckets and the bulkhead, none
  of them making it wait) against the same loop without the guard. Target: under 50 µs.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from flow_kernel.bench.measure import Figures, Row, Target, stats
from flow_kernel.runtime.agents import AgentPipeline
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.providers.base import ProviderReply, ProviderRequest
from flow_kernel.runtime.providers.resilience import Limits, ProviderGuard, RealClock
from flow_kernel.runtime.providers.streaming import Delta
from flow_kernel.views.run_model import RunModel

NAME = "models"
PIECES = 200  # streamed pieces per call


class StreamingProvider:
    """Streams `PIECES` pieces of a JSON answer through `on_delta`, then answers."""

    async def attempt(self, request: ProviderRequest) -> ProviderReply:
        text = '{"answer": "' + "word " * PIECES + '"}'
        step = max(1, len(text) // PIECES)
        for start in range(0, len(text), step):
            if request.on_delta is not None:
                request.on_delta(Delta(text=text[start:start + step]))
            if start % (step * 20) == 0:
                await asyncio.sleep(0)  # let other calls' streams interleave, as network reads do
        return ProviderReply({"answer": "word " * PIECES}, usage={"input_tokens": 10, "output_tokens": PIECES})


def delta_run(calls: int, interval: float) -> dict[str, float]:
    from flow_kernel.runtime.session import Session

    model = RunModel()
    counted = {"deltas": 0}

    def sink(event: dict[str, Any]) -> None:
        if event["type"] == "agent.delta":
            counted["deltas"] += 1
        model.apply(event)

    program = (f"limits {{ agent_runs: {calls}, concurrency: 50, steps: 1000000 }}\n"
               'agent writer { model: "bench/streaming", output: { answer: string } }\n'
               f'parallelMap(range({calls}), i => writer("Write ${{i}}"), concurrency: 50)\n')
    saved = AgentPipeline.delta_interval
    AgentPipeline.delta_interval = interval
    try:
        session = Session(sandbox=False, journal_dir=None,
                          context=RunContext(sinks=[sink], providers={"bench": StreamingProvider()}))
        started = time.perf_counter()
        outcome = session.run(program)
        elapsed = time.perf_counter() - started
    finally:
        AgentPipeline.delta_interval = saved
    if outcome.error is not None:
        raise SystemExit(f"benchmark run failed: {outcome.error}")
    return {"deltas": counted["deltas"], "seconds": elapsed, "per_s": counted["deltas"] / elapsed,
            "per_call": counted["deltas"] / calls}


async def _guarded(n: int, guard: ProviderGuard | None) -> float:
    def notify(kind: str, data: dict[str, Any]) -> None:
        pass

    async def send() -> ProviderReply:
        return ProviderReply("ok", usage={"input_tokens": 10, "output_tokens": 5})

    usage = {"input_tokens": 10, "output_tokens": 5}
    started = time.perf_counter()
    for _ in range(n):
        if guard is None:
            await send()
        else:
            ticket = await guard.enter(20, 60.0, notify)
            reply = await send()
            guard.success(ticket, reply.usage or usage, notify)
    return (time.perf_counter() - started) / n * 1e6


def guard_overhead_us(n: int) -> tuple[float, float]:
    """(µs per call with the guard, µs per call without it)."""
    limits = Limits(requests_per_minute=1e12, tokens_per_minute=1e15, max_in_flight=1000)
    guard = ProviderGuard("bench", limits, RealClock())
    with_guard = asyncio.run(_guarded(n, guard))
    without = asyncio.run(_guarded(n, None))
    return with_guard, without


def measure(quick: bool) -> Figures:
    repeat = 2 if quick else 5
    calls = 20 if quick else 100
    runs = [delta_run(calls, 0.0) for _ in range(repeat + 1)][1:]  # the first warms up
    throttled = delta_run(calls, AgentPipeline.delta_interval)
    n = 2_000 if quick else 20_000
    overheads = [guard_overhead_us(n) for _ in range(repeat + 1)][1:]
    return {
        "repeat": repeat, "calls": calls, "pieces": PIECES,
        "delta_events_per_s": stats([r["per_s"] for r in runs]),
        "deltas_per_call": runs[-1]["per_call"],
        "throttled_deltas_per_call": throttled["per_call"],
        "throttled_seconds": throttled["seconds"],
        "guard_us": stats([o[0] for o in overheads]),
        "unguarded_us": stats([o[1] for o in overheads]),
        "guard_added_us": stats([o[0] - o[1] for o in overheads]),
    }


def rows(f: Figures) -> list[Row]:
    return [
        Row(f"{f['calls']} streaming calls: delta events per second into a RunModel", f["delta_events_per_s"],
            "/s", "{:,.0f}"),
        Row("  delta events per call, unthrottled", f["deltas_per_call"], "", "{:,.0f}"),
        Row("  delta events per call, throttled (~20/s per call)", f["throttled_deltas_per_call"], "", "{:,.1f}"),
        Row("resilience guard: a call with it", f["guard_us"], "µs", "{:,.1f}"),
        Row("resilience guard: the same call without it", f["unguarded_us"], "µs", "{:,.1f}"),
        Row("resilience guard: added per call", f["guard_added_us"], "µs", "{:,.1f}"),
    ]


TARGETS = [
    Target(
        figure="resilience layer: added latency per call",
        measured=lambda f: "enter + success of one provider's guard (breaker, Retry-After, buckets, bulkhead)",
        compared=lambda f: f"the same call without the guard: {f['unguarded_us']['median']:.1f} µs",
        value=lambda f: f["guard_added_us"]["median"],
        bound=50,
        unit="µs",
    ),
    Target(
        figure="streaming: delta events per second into a run view model",
        measured=lambda f: f"{f['calls']} calls × {f['deltas_per_call']:,.0f} deltas, throttle off",
        compared=lambda f: f"throttled: {f['throttled_deltas_per_call']:.1f} deltas per call",
        value=lambda f: f["delta_events_per_s"]["median"],
        bound=1000,
        at_least=True,
        unit="/s",
    ),
]

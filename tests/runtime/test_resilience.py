"""Resilience per provider (issue 19): token buckets, `429` + Retry-After, the circuit
breaker and the bulkhead (runtime/providers/resilience.py), through the real pipeline and the
official `openai` client against a loopback server. Minutes of rate limiting run on a
fake clock in a second or two."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from flow_kernel import Session, SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.config import FlowConfig
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.events.vocabulary import KINDS, Event, comparable
from flow_kernel.runtime.providers.resilience import Resilience, TokenBucket
from flow_kernel.runtime.providers.table import ProviderSettings
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor
from flow_kernel.views.run_model import RunModel
from tests.runtime.sse_servers import Reply, SSEServer, openai_text


class FakeClock:
    """Simulated seconds: `sleep` moves time to where the sleeper wakes (never back), at
    once. Concurrent sleepers each wake at their own time, so the clock ends at the latest."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        wake = self.t + seconds
        await asyncio.sleep(0)
        self.t = max(self.t, wake)


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[SSEServer]:
    s = SSEServer()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{s.port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-resilience-test-123")
    yield s
    s.close()


def config(**options: Any) -> FlowConfig:
    return FlowConfig(providers={"openai": ProviderSettings(options=options)})


def run(source: str, cfg: FlowConfig, resilience: Resilience, sinks: list[Any] | None = None,
        workflow: str | None = None) -> RunOutcome:
    compiled = compile_source(SourceFile("r.flow", source))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    return asyncio.run(run_compiled(compiled, InProcessExecutor(),
                                    RunContext(config=cfg, resilience=resilience, sinks=sinks or []),
                                    workflow=workflow))


def check_data(event: Event) -> None:
    kind = KINDS[event["type"]]
    assert kind.data.__required_keys__ <= set(event["data"]), event  # type: ignore[attr-defined]
    assert set(event["data"]) <= set(get_type_hints(kind.data)), event


SIXTY = '''agent a { model: "openai/m" }
workflow w() -> string[] {
  limits { agent_runs: 100, concurrency: 60 }
  return parallelMap(range(60), i => a("call ${i}"), concurrency: 60)
}
w()'''


def test_sixty_calls_at_thirty_a_minute_take_a_minute_and_never_exceed_the_bucket(server: SSEServer) -> None:
    clock = FakeClock()
    server.clock = clock
    server.replies += [openai_text(["ok"]) for _ in range(60)]
    cfg = config(requests_per_minute=30, max_in_flight=64)
    resilience = Resilience(lambda name: cfg.provider(name).options, clock=clock)
    model = RunModel()
    most_waiting = [0]

    def sink(event: Event) -> None:
        model.apply(event)
        most_waiting[0] = max(most_waiting[0], len(model.waiting_calls()))

    outcome = run(SIXTY, cfg, resilience, [sink])
    assert outcome.error is None, outcome.to_json()
    assert outcome.result == ["ok"] * 60
    stamps = sorted(server.stamps)
    bucket = resilience.guard("openai").requests
    assert bucket is not None
    print(f"60 calls at 30/min: the last went at {stamps[-1]:.1f} s simulated (burst {bucket.capacity:g}); "
          f"at most {most_waiting[0]} calls shown waiting at once")
    assert stamps[-1] >= 60.0  # a minute of (simulated) clock at least
    for count, at in enumerate(stamps, 1):  # never more than the bucket held by then
        assert count <= bucket.capacity + at * 30 / 60 + 1e-6, (count, at)
    waits = [e for e in outcome.events if e["type"] == "provider.waiting"]
    assert waits and {e["data"]["reason"] for e in waits} == {"rpm"}
    for event in waits:
        check_data(event)
    assert most_waiting[0] >= 30  # the run view showed the calls waiting
    assert not model.waiting_calls()  # and none once they went
    assert not any(e["type"].startswith("provider.") for e in comparable(outcome.events))


def test_a_429_with_retry_after_is_honoured(server: SSEServer) -> None:
    clock = FakeClock()
    server.clock = clock
    server.replies += [Reply(status=429, error="slow down", headers={"Retry-After": "7"}), openai_text(["fine"])]
    cfg = config()
    resilience = Resilience(lambda name: cfg.provider(name).options, clock=clock)
    outcome = run('agent a { model: "openai/m" }\na("go")', cfg, resilience)
    assert outcome.error is None, outcome.to_json()
    assert outcome.result == "fine" and len(server.requests) == 2
    assert server.stamps[1] - server.stamps[0] >= 7.0  # sent again only after the time it gave
    wait = next(e for e in outcome.events if e["type"] == "provider.waiting")
    assert wait["data"] == {"provider": "openai", "reason": "retry-after", "wait_ms": 7000}
    done = next(e for e in outcome.events if e["type"] == "agent.completed")
    assert len(done["data"]["attempts"]) == 1  # the same attempt: not charged to agent_runs again


def test_a_retry_after_past_the_run_deadline_fails_at_once(server: SSEServer) -> None:
    server.replies += [Reply(status=429, error="slow down", headers={"Retry-After": "120"}), openai_text(["late"])]
    cfg = config()
    resilience = Resilience(lambda name: cfg.provider(name).options)  # the real clock: nothing may wait 120 s
    source = 'agent a { model: "openai/m" }\nworkflow w() -> string {\n  limits { duration: 5s }\n  return a("go")\n}'
    outcome = run(source, cfg, resilience, workflow="w")  # the run's deadline is w's
    assert outcome.error is not None and outcome.error.code == "agent-invocation", outcome.to_json()
    assert "Retry-After (120.0 s) ends after the run's deadline" in outcome.error.message
    assert outcome.error.details["rate_limited"] == "retry-after" and len(server.requests) == 1


def test_the_breaker_opens_fails_fast_probes_after_the_pause_and_closes(server: SSEServer, tmp_path: Path) -> None:
    clock = FakeClock()
    session = Session(directory=tmp_path, sandbox=False, journal_dir=None,
                      config=config(breaker_failures=5, breaker_pause=30))
    session.resilience = Resilience(lambda name: session.config.provider(name).options, clock=clock)
    server.replies += [Reply(status=503, error="overloaded") for _ in range(5)] + [openai_text(["back"])]
    program = 'agent a { model: "openai/m" }\na("go")'

    def breaker_states(outcome: RunOutcome) -> list[str]:
        return [e["data"]["state"] for e in outcome.events if e["type"] == "provider.breaker"]

    outcomes = [session.run(program) for _ in range(5)]  # five runs of the session, each a 503
    assert all(o.error is not None and o.error.details.get("status") == 503 for o in outcomes)
    assert [breaker_states(o) for o in outcomes] == [[], [], [], [], ["open"]]
    opened = next(e for e in outcomes[-1].events if e["type"] == "provider.breaker")
    assert opened["data"] == {"provider": "openai", "state": "open", "failures": 5, "pause_ms": 30000}

    fast = session.run(program)  # open: fails fast, nothing sent
    assert fast.error is not None and fast.error.code == "agent-invocation"
    assert "circuit breaker of provider `openai` is open" in fast.error.message
    assert fast.error.details["breaker"] == "openai" and len(server.requests) == 5

    clock.t += 29
    assert session.run(program).error is not None and len(server.requests) == 5  # still within the pause

    clock.t += 1  # the pause is over: one probe goes through, succeeds, and closes the breaker
    probe = session.run(program)
    assert probe.error is None and probe.result == "back" and len(server.requests) == 6
    assert breaker_states(probe) == ["half-open", "closed"]
    for event in probe.events:
        if event["type"].startswith("provider."):
            check_data(event)


def test_a_failed_probe_opens_the_breaker_again(server: SSEServer, tmp_path: Path) -> None:
    clock = FakeClock()
    session = Session(directory=tmp_path, sandbox=False, journal_dir=None,
                      config=config(breaker_failures=2, breaker_pause=10))
    session.resilience = Resilience(lambda name: session.config.provider(name).options, clock=clock)
    server.replies += [Reply(status=500, error="down") for _ in range(3)]
    program = 'agent a { model: "openai/m" }\na("go")'
    session.run(program)
    session.run(program)
    clock.t += 10
    probe = session.run(program)
    assert [e["data"]["state"] for e in probe.events if e["type"] == "provider.breaker"] == ["half-open", "open"]
    assert "is open" in session.run(program).error.message  # type: ignore[union-attr]
    assert len(server.requests) == 3


def test_a_4xx_or_an_invalid_answer_does_not_count_against_the_breaker(server: SSEServer, tmp_path: Path) -> None:
    session = Session(directory=tmp_path, sandbox=False, journal_dir=None, config=config(breaker_failures=1))
    server.replies += [Reply(status=400, error="bad request"), openai_text(["not json"]), openai_text(["ok"])]
    program = 'agent a { model: "openai/m", repair: 0 }\na("go")'
    assert session.run(program).error.details.get("status") == 400  # type: ignore[union-attr]
    invalid = session.run('type T = { n: int }\nagent b { model: "openai/m", output: T, repair: 0 }\nb("go")')
    assert invalid.error is not None and invalid.error.code == "output-validation"
    assert session.run(program).result == "ok"


def test_the_bulkhead_bounds_calls_in_flight_across_runs(server: SSEServer, tmp_path: Path) -> None:
    server.replies += [openai_text(["a", "b", "c"], delay=0.05) for _ in range(6)]
    session = Session(directory=tmp_path, sandbox=False, journal_dir=None, config=config(max_in_flight=2))
    program = ('agent a { model: "openai/m" }\nworkflow w() -> string[] {\n  limits { concurrency: 3 }\n'
               '  return parallelMap(range(3), i => a("n ${i}"), concurrency: 3)\n}\nw()')

    async def two_runs() -> list[RunOutcome]:
        try:
            return list(await asyncio.gather(session.run_async(program), session.run_async(program)))
        finally:
            await session.aclose()

    outcomes = asyncio.run(two_runs())
    assert all(o.error is None and o.result == ["abc"] * 3 for o in outcomes), [o.to_json() for o in outcomes]
    assert server.peak == 2  # six calls, two runs, never more than two at the provider
    waits = [e for o in outcomes for e in o.events if e["type"] == "provider.waiting"]
    assert waits and all(e["data"]["reason"] == "bulkhead" for e in waits)


def test_the_token_bucket_never_hands_out_more_than_it_holds() -> None:
    bucket = TokenBucket(30, now=0.0)  # 30 a minute, a burst of 3
    starts = [bucket.reserve(1, now=0.0) for _ in range(10)]
    assert starts[:3] == [0, 0, 0] and starts[3] == pytest.approx(2.0) and starts[9] == pytest.approx(14.0)
    tokens = TokenBucket(600, now=0.0, capacity=100)
    assert tokens.reserve(150, now=0.0) == pytest.approx(5.0)  # 50 short at 10 a second
    tokens.give_back(100, now=0.0)  # the call used 50 of its 150: 100 back, at most the capacity
    assert tokens.reserve(50, now=0.0) == 0


def test_a_tool_loops_later_rounds_are_counted_by_the_rate_limit(server: SSEServer, tmp_path: Path) -> None:
    """Six requests a minute, a burst of one: the second round of a tool loop is a request
    too, so it goes ten (simulated) seconds after the first."""
    from tests.runtime.sse_servers import openai_tool_call

    clock = FakeClock()
    server.clock = clock
    server.replies += [openai_tool_call("call_1", "lookup", ['{"order_id": "A1"}']),
                       openai_text(['{"answer": "shipped"}'])]
    session = Session(directory=tmp_path, sandbox=False, journal_dir=None, config=config(requests_per_minute=6))
    session.resilience = Resilience(lambda name: session.config.provider(name).options, clock=clock)
    session.tool(lambda order_id: {"status": "shipped"}, name="lookup")
    outcome = session.run('tool lookup(order_id: string) -> { status: string }\n'
                          'agent helper { model: "openai/m", tools: [lookup], output: { answer: string } }\n'
                          'helper("Where is A1?")')
    assert outcome.error is None, outcome.to_json()
    assert len(server.stamps) == 2 and server.stamps[1] - server.stamps[0] >= 10.0
    waits = [e["data"] for e in outcome.events if e["type"] == "provider.waiting"]
    assert waits == [{"provider": "openai", "reason": "rpm", "wait_ms": 10000}]

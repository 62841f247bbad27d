"""Budgets under concurrency (budgets.py): every attempt reserves its worst case on the
`cost` limits before it is sent and settles when it ends, so a fan-out never spends past a
limit; `agent_runs` is charged before a call goes. Runs in the Pyodide sandbox (one, reused)
against a loopback server that speaks OpenAI's Chat Completions, slowly, through the official
`openai` client."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.lang.prices import Price
from flow_kernel.runtime.config import FlowConfig
from flow_kernel.runtime.events import comparable
from flow_kernel.runtime.executors import SandboxExecutor
from flow_kernel.runtime.provider_table import ProviderSettings
from flow_kernel.runtime.resilience import estimate_tokens
from flow_kernel.runtime.run import RunOutcome, run_compiled
from tests.runtime.sse_servers import SSEServer, openai_text

MAX_OUTPUT = 100
PRICE = Price(1000, 1000)  # 0.001 a token either way
CONFIG = FlowConfig(providers={"openai": ProviderSettings(options={"max_tokens": MAX_OUTPUT})},
                    prices={"openai/m": PRICE})
USAGE = (20, 10)  # what each reply says it used: 0.03, well under an attempt's worst case (> 0.1)
REPLY_COST = PRICE.cost(*USAGE)
LIMIT = 1.0
FAN_OUT = '''agent a { model: "openai/m" }
workflow w() -> string[] {
  limits { cost: LIMIT, concurrency: 64, agent_runs: RUNS }
  return parallelMap(range(64), i => a("call ${i}"), concurrency: 64)
}'''


def fan_out(cost: float = LIMIT, runs: int = 100) -> str:
    return FAN_OUT.replace("LIMIT", f"{cost:g}").replace("RUNS", str(runs))


@pytest.fixture(scope="module")
def sandbox() -> Iterator[tuple[SandboxExecutor, asyncio.AbstractEventLoop]]:
    loop = asyncio.new_event_loop()
    executor = SandboxExecutor()
    yield executor, loop
    loop.run_until_complete(executor.close())
    loop.close()


@pytest.fixture()
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], SSEServer]]:
    """A new loopback provider for each run (late requests of a run that was cut short never
    reach the next one's), the one before it closed."""
    servers: list[SSEServer] = []
    monkeypatch.setenv("OPENAI_API_KEY", "sk-reservations-test")

    def start() -> SSEServer:
        if servers:
            servers[-1].close()
        servers.append(SSEServer())
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{servers[-1].port}/v1")
        return servers[-1]

    yield start
    if servers:
        servers[-1].close()


def run(sandbox: tuple[SandboxExecutor, asyncio.AbstractEventLoop], source: str, workflow: str = "w") -> RunOutcome:
    compiled = compile_source(SourceFile("fan.flow", source))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    executor, loop = sandbox
    return loop.run_until_complete(run_compiled(compiled, executor, config=CONFIG, workflow=workflow))


def slow_replies(server: SSEServer, count: int, seed: int | None = None) -> None:
    """`count` replies of USAGE, all the same answer (the server hands them out as requests
    arrive), each streamed over ~25 ms (or a random 0..50 ms with `seed`)."""
    pick = random.Random(seed)
    for _ in range(count):
        delay = 0.005 if seed is None else pick.uniform(0, 0.01)
        server.replies.append(openai_text(["ok"], usage=USAGE, delay=delay))


def worst_case(body: dict[str, Any]) -> float:
    """An attempt's worst case as the host reserves it: its messages, and MAX_OUTPUT tokens."""
    text = "".join(str(m.get("content") or "") for m in body["messages"])
    return PRICE.cost(estimate_tokens(text), MAX_OUTPUT)


def committed_peak(server: SSEServer) -> float:
    """The most that was ever committed as the provider saw it: at each request's arrival,
    the replies answered to the end at their cost, and every request still being answered
    (this one included) at its worst case. Never less than what was truly committed."""
    return max((answered * REPLY_COST + sum(worst_case(server.requests[i]) for i in open_)
                for answered, open_ in server.arrivals), default=0.0)


def spent(server: SSEServer) -> float:
    """What the provider billed: every request it received, at its reply's cost."""
    return len(server.requests) * REPLY_COST


def test_a_fan_out_of_64_never_spends_past_the_cost_limit(sandbox: tuple[SandboxExecutor, asyncio.AbstractEventLoop],
                                                          fresh: Callable[[], SSEServer]) -> None:
    """64 calls at once, each reply slow, the limit room for about seven worst cases: the
    first go at once, the next waits until they end and goes on what they cost, until one
    cannot fit. Twenty times: the provider never had more committed than the limit (answered
    replies at their cost, requests in flight at their worst case), never billed past it,
    and the run fails with `limit-exceeded` part-way through."""
    counts = set()
    for _ in range(20):
        server = fresh()
        slow_replies(server, 64)
        outcome = run(sandbox, fan_out())
        assert outcome.error is not None and outcome.error.code == "limit-exceeded", outcome.to_json()
        assert outcome.error.details["limit"] == "cost" and outcome.error.details["value"] == LIMIT
        assert 8 < len(server.requests) < 64  # more than one wave of worst cases went: it waited, then went on
        assert spent(server) <= LIMIT and committed_peak(server) <= LIMIT
        assert outcome.cost == pytest.approx(spent(server))
        counts.add(len(server.requests))
    assert len(counts) == 1  # the same call was refused every time


def test_a_fan_out_of_64_never_passes_agent_runs(sandbox: tuple[SandboxExecutor, asyncio.AbstractEventLoop],
                                                 fresh: Callable[[], SSEServer]) -> None:
    """`agent_runs` is charged before a call takes a slot: of 64 calls at once, the eleventh
    is refused, and the run ends before all of the first ten have reached the provider: at
    most ten ever do, every time."""
    for _ in range(20):
        server = fresh()
        slow_replies(server, 64)
        outcome = run(sandbox, fan_out(cost=100, runs=10))
        assert outcome.error is not None and outcome.error.code == "limit-exceeded", outcome.to_json()
        assert outcome.error.details["limit"] == "agent_runs"
        assert len(server.requests) <= 10 and server.peak <= 10


def test_the_refused_call_does_not_depend_on_when_replies_arrive(
        sandbox: tuple[SandboxExecutor, asyncio.AbstractEventLoop], fresh: Callable[[], SSEServer]) -> None:
    """Replies in another order each time (random delays): the same requests, the same call
    refused with the same details, the same events."""
    seen = []
    for seed in (1, 2, 3):
        server = fresh()
        slow_replies(server, 64, seed=seed)
        outcome = run(sandbox, fan_out())
        assert outcome.error is not None and outcome.error.code == "limit-exceeded"
        prompts = sorted(str(body["messages"][-1]["content"]) for body in server.requests)
        seen.append((prompts, outcome.error.details, _without_run(comparable(outcome.events))))
    assert seen[0] == seen[1] == seen[2]


def _without_run(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for event in events:
        event.pop("run", None)
    return events


def test_serial_calls_stop_where_the_settled_costs_say(sandbox: tuple[SandboxExecutor, asyncio.AbstractEventLoop],
                                                        fresh: Callable[[], SSEServer]) -> None:
    """One call at a time nothing is ever in flight beside the next: each goes while what was
    spent plus its worst case fits, as before reservations."""
    server = fresh()
    slow_replies(server, 64)
    outcome = run(sandbox, fan_out().replace("concurrency: 64)", "concurrency: 1)"))
    assert outcome.error is not None and outcome.error.code == "limit-exceeded"
    sent = len(server.requests)
    assert all((i * REPLY_COST) + worst_case(body) <= LIMIT for i, body in enumerate(server.requests))
    details = outcome.error.details
    assert details["spent"] == pytest.approx(sent * REPLY_COST)
    assert sent * REPLY_COST + details["worst_case"] > LIMIT
    assert server.peak == 1 and sent > 20

"""Cost (issue 19): each call priced from the price table (built in, or `[prices]` in
flow.toml) with the usage the provider reported — in events, traces, the run view's model,
the outcome, the session and `flow run`'s output — and `limits { cost: … }` checked before
each attempt against its worst case. Against the official `openai` client and a loopback
server that streams as the API does."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_kernel import Session, SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.lang.prices import BUILTIN, Price, price_of
from flow_kernel.runtime.config import FlowConfig, parse_config
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.providers.table import ProviderSettings
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor
from flow_kernel.views.run_model import RunModel
from tests.runtime.sse_servers import SSEServer, openai_text


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[SSEServer]:
    s = SSEServer()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{s.port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cost-test-123")
    yield s
    s.close()


def run(source: str, cfg: FlowConfig, workflow: str | None = None) -> RunOutcome:
    compiled = compile_source(SourceFile("c.flow", source))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    return asyncio.run(run_compiled(compiled, InProcessExecutor(), RunContext(config=cfg), workflow=workflow))


def test_a_run_reports_the_cost_from_the_built_in_table(server: SSEServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.replies += [openai_text(["one"], usage=(1000, 500)), openai_text(["two"], usage=(3000, 100))]
    outcome = run('agent a { model: "openai/gpt-4o-mini" }\nlet x = a("first")\na("second")', FlowConfig())
    assert outcome.error is None, outcome.to_json()
    first = (1000 * 0.15 + 500 * 0.60) / 1e6  # gpt-4o-mini: 0.15 in, 0.60 out per million
    second = (3000 * 0.15 + 100 * 0.60) / 1e6
    done = [e["data"] for e in outcome.events if e["type"] == "agent.completed"]
    assert [d["cost"] for d in done] == [pytest.approx(first), pytest.approx(second)]
    assert [t["cost"] for t in outcome.traces] == [pytest.approx(first), pytest.approx(second)]
    assert outcome.cost == pytest.approx(first + second)
    assert outcome.usage == {"input_tokens": 4000, "output_tokens": 600}
    model = RunModel.from_events(outcome.events)
    assert model.cost == pytest.approx(first + second)
    assert ("cost", round(first + second, 4), None) in model.budgets()
    from flow_kernel.cli.outcome import report

    assert report(outcome, False) == 0
    assert "cost 0.000960 (4,000 input + 600 output tokens)" in capsys.readouterr().err


def test_a_configured_price_overrides_the_built_in_one(server: SSEServer, tmp_path: Path) -> None:
    server.replies += [openai_text(["a"], usage=(10, 20)), openai_text(["b"], usage=(10, 20))]
    cfg = parse_config({"prices": {"openai/my-model": {"input": 2, "output": 4},
                                   "openai/gpt-4o-mini": {"input": 1, "output": 1}}})
    assert cfg.prices["openai/my-model"] == Price(2.0, 4.0)
    assert price_of("openai/gpt-4o-mini-2024-07-18", cfg.prices) == Price(1.0, 1.0)  # a prefix prices dated versions
    assert price_of("anthropic/claude-sonnet-4-20250514") == BUILTIN["anthropic/claude-sonnet-4"]
    assert price_of("openai/unknown-model") is None and price_of("mock") == Price(0, 0)
    session = Session(directory=tmp_path, sandbox=False, journal_dir=None, config=cfg)
    first = session.run('agent a { model: "openai/my-model" }\na("x")')
    second = session.run('agent b { model: "openai/my-model" }\nb("y")')
    assert first.cost == pytest.approx((10 * 2 + 20 * 4) / 1e6) and second.cost == first.cost
    assert session.cost == pytest.approx(2 * first.cost)  # per session


def test_local_and_unpriced_calls_carry_no_cost(server: SSEServer) -> None:
    server.replies.append(openai_text(["a"]))
    outcome = run('agent m { model: "mock" }\nagent u { model: "openai/unknown-model" }\nlet x = m("x")\nu("y")',
                  FlowConfig())
    assert outcome.error is None
    assert all("cost" not in e["data"] for e in outcome.events if e["type"] == "agent.completed")
    assert outcome.cost is None  # the local call costs nothing, the unknown model is unpriced
    assert "cost" not in outcome.traces[0] and "cost" not in outcome.traces[1]


PRICED = FlowConfig(providers={"openai": ProviderSettings(options={"max_tokens": 100})},
                    prices={"openai/m": Price(1000, 1000)})  # 0.001 a token either way
FIVE = '''agent a { model: "openai/m" }
workflow w() -> string[] {
  limits { cost: 0.35 }
  return parallelMap(range(5), i => a("call ${i}"), concurrency: 1)
}'''


def test_a_cost_limit_stops_the_run_before_the_attempt_that_would_exceed_it(server: SSEServer) -> None:
    """Each reply costs 0.1 (100 tokens); an attempt's worst case is its prompt plus
    `max_tokens` (100) of output, ~0.105. After three calls 0.3 is spent and the fourth's
    worst case would pass 0.35: it is never sent."""
    server.replies += [openai_text([f"r{i}"], usage=(50, 50)) for i in range(5)]
    outcome = run(FIVE, PRICED, workflow="w")
    assert outcome.error is not None and outcome.error.code == "limit-exceeded", outcome.to_json()
    assert len(server.requests) == 3
    details = outcome.error.details
    assert details["limit"] == "cost" and details["value"] == 0.35 and details["spent"] == pytest.approx(0.3)
    assert 0.05 < details["worst_case"] < 0.35 - 0.3 + 0.1
    assert "would be exceeded by the next attempt" in outcome.error.message
    assert outcome.cost == pytest.approx(0.3)
    failed = [e for e in outcome.events if e["type"] == "agent.failed"]
    assert failed and failed[0]["data"]["code"] == "limit-exceeded"


def test_a_cost_limit_with_room_lets_every_call_go(server: SSEServer) -> None:
    server.replies += [openai_text([f"r{i}"], usage=(50, 50)) for i in range(5)]
    outcome = run(FIVE.replace("0.35", "0.65"), PRICED, workflow="w")
    assert outcome.error is None and len(server.requests) == 5 and outcome.cost == pytest.approx(0.5)


def test_a_cost_limit_on_a_model_with_no_price_fails_closed(server: SSEServer) -> None:
    outcome = run(FIVE.replace('"openai/m"', '"openai/nobody-priced-this"'), PRICED, workflow="w")
    assert outcome.error is not None and outcome.error.code == "limit-exceeded"
    assert "has no price" in outcome.error.message and server.requests == []


def test_the_cost_limit_is_in_the_compiled_limits_and_the_view() -> None:
    compiled = compile_source(SourceFile("c.flow", FIVE))
    assert compiled.check.workflows["w"].limits["cost"] == 0.35
    events: list[dict[str, Any]] = [
        {"type": "workflow.started", "run": "r1", "seq": 1, "span": {"id": "s1", "parent": None},
         "data": {"name": "w", "frame": "s1", "parent": None, "limits": {"agent_runs": 100, "cost": 0.35}}},
        {"type": "agent.started", "run": "r1", "seq": 2, "span": {"id": "c1", "parent": "s1"},
         "data": {"agent": "a", "label": None, "prompt": "p"}},
        {"type": "agent.completed", "run": "r1", "seq": 3, "span": {"id": "c1", "parent": "s1"},
         "data": {"agent": "a", "label": None, "output": "x", "attempts": [{"kind": "attempt"}], "cost": 0.1}},
    ]
    model = RunModel.from_events(events)
    assert ("cost", 0.1, 0.35) in model.budgets()


def test_runs_lists_each_journaled_run_with_its_cost(server: SSEServer, tmp_path: Path) -> None:
    """`flow runs` / `%runs` read the cost from the run's journal."""
    from flow_kernel.runtime.durable.resume import list_runs, runs_table

    server.replies.append(openai_text(["a"], usage=(1000, 500)))
    session = Session(directory=tmp_path, sandbox=False)  # journals in tmp_path/.flow/runs
    priced = session.run('agent a { model: "openai/gpt-4o-mini" }\na("x")')
    free = session.run('agent m { model: "mock" }\nm("y")')
    assert priced.error is None and free.error is None
    infos = {i.run: i for i in list_runs(tmp_path / ".flow" / "runs")}
    assert infos[priced.run_id].cost == pytest.approx(0.00045) and infos[free.run_id].cost is None
    table = runs_table(list(infos.values()))
    assert "cost 0.000450" in next(line for line in table.splitlines() if line.startswith(priced.run_id))
    assert "cost" not in next(line for line in table.splitlines() if line.startswith(free.run_id))
    assert infos[priced.run_id].to_json()["cost"] == pytest.approx(0.00045)

"""Budgets under concurrency (budgets.py): every attempt reserves its worst case on the
`cost` limits before it is sent and settles when it ends, so a fan-out never spends past a
limit; `agent_runs` is charged before a call goes. Runs in the Pyodide sandbox (one, reused)
against a loopback server that speaks OpenAI's Chat Completions, slowly, through the official
`openai` client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.errors import LimitExceededError
from flow_kernel.runtime.budgets import CostReservations, FrameBudget
from flow_kernel.runtime.events.vocabulary import comparable
from flow_kernel.runtime.session import Session
from tests.runtime.fan_out import (  # noqa: F401 - fixtures
    CONFIG,
    REPLY_COST,
    Provider,
    Sandbox,
    committed_peak,
    provider_fixture,
    sandbox_fixture,
    spent,
    worst_case,
)

LIMIT = 1.0
FAN_OUT = '''agent a { model: "openai/m" }
workflow w(n: int) -> string[] {
  limits { cost: LIMIT, concurrency: 64, agent_runs: RUNS }
  return parallelMap(range(n), i => a("call ${i}"), concurrency: 64)
}'''
CALLS = {"n": 64}  # an input, so that the checker cannot count the fan-out against agent_runs (F6008)


def fan_out(cost: float = LIMIT, runs: int = 100) -> str:
    return FAN_OUT.replace("LIMIT", f"{cost:g}").replace("RUNS", str(runs))


def test_a_fan_out_of_64_never_spends_past_the_cost_limit(sandbox: Sandbox, provider: Provider) -> None:
    """64 calls at once, each reply slow, the limit room for about seven worst cases: the
    first go at once, the next waits until they end and goes on what they cost, until one
    cannot fit. Twenty times: the provider never had more committed than the limit (answered
    replies at their cost, requests in flight at their worst case), never billed past it,
    and the run fails with `limit-exceeded` part-way through."""
    counts = set()
    for _ in range(20):
        server = provider.fresh(64)
        outcome = sandbox.run(fan_out(), input=CALLS)
        assert outcome.error is not None and outcome.error.code == "limit-exceeded", outcome.to_json()
        assert outcome.error.details["limit"] == "cost" and outcome.error.details["value"] == LIMIT
        assert 8 < len(server.requests) < 64  # more than one wave of worst cases went: it waited, then went on
        assert spent(server) <= LIMIT and committed_peak(server) <= LIMIT
        assert outcome.cost == pytest.approx(spent(server))
        counts.add(len(server.requests))
    assert len(counts) == 1  # the same call was refused every time


def test_a_fan_out_of_64_never_passes_agent_runs(sandbox: Sandbox, provider: Provider) -> None:
    """`agent_runs` is charged before a call takes a slot: of 64 calls at once, the eleventh
    is refused, and the run ends before all of the first ten have reached the provider: at
    most ten ever do, every time."""
    for _ in range(20):
        server = provider.fresh(64)
        outcome = sandbox.run(fan_out(cost=100, runs=10), input=CALLS)
        assert outcome.error is not None and outcome.error.code == "limit-exceeded", outcome.to_json()
        assert outcome.error.details["limit"] == "agent_runs"
        assert len(server.requests) <= 10 and server.peak <= 10


def test_the_refused_call_does_not_depend_on_when_replies_arrive(sandbox: Sandbox, provider: Provider) -> None:
    """Replies in another order each time (random delays): the same requests, the same call
    refused with the same details, the same events."""
    seen = []
    for seed in (1, 2, 3):
        server = provider.fresh(64, seed=seed)
        outcome = sandbox.run(fan_out(), input=CALLS)
        assert outcome.error is not None and outcome.error.code == "limit-exceeded"
        prompts = sorted(str(body["messages"][-1]["content"]) for body in server.requests)
        seen.append((prompts, outcome.error.details, _without_run(comparable(outcome.events))))
    assert seen[0] == seen[1] == seen[2]


def _without_run(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for event in events:
        event.pop("run", None)
    return events


def test_serial_calls_stop_where_the_settled_costs_say(sandbox: Sandbox, provider: Provider) -> None:
    """One call at a time nothing is ever in flight beside the next: each goes while what was
    spent plus its worst case fits, as before reservations."""
    server = provider.fresh(64)
    outcome = sandbox.run(fan_out().replace("concurrency: 64)", "concurrency: 1)"), input=CALLS)
    assert outcome.error is not None and outcome.error.code == "limit-exceeded"
    sent = len(server.requests)
    assert all((i * REPLY_COST) + worst_case(body) <= LIMIT for i, body in enumerate(server.requests))
    details = outcome.error.details
    assert details["spent"] == pytest.approx(sent * REPLY_COST)
    assert sent * REPLY_COST + details["worst_case"] > LIMIT
    assert server.peak == 1 and sent > 20


PANELS = '''rubric essay {
  criteria: [ { id: "accuracy", description: "Facts are right", weight: 1, scale: 5 } ]
}
agent expert { model: "openai/m" }
panel review {
  experts: [{ agent: expert, domain: "facts" }]
  rubric: essay
  rounds: 1
  converge: { spread: 1 }
}
workflow w() -> int {
  limits { cost: 1, concurrency: 64 }
  let records = parallelMap(range(64), i => review("essay ${i}"), concurrency: 64)
  return len(records)
}'''


def test_panels_in_a_fan_out_reserve_their_experts_calls(sandbox: Sandbox, provider: Provider) -> None:
    """A panel's experts are agent calls like any other: 64 panels at once reserve them the
    same way, and the panel does not turn a cost refusal into a status of its own."""
    verdict = '{"scores": {"accuracy": 4}, "rationale": "fine"}'
    for _ in range(5):
        server = provider.fresh(64, content=verdict)
        outcome = sandbox.run(PANELS)
        assert outcome.error is not None and outcome.error.code == "limit-exceeded", outcome.to_json()
        assert outcome.error.details["limit"] == "cost"
        assert 1 < len(server.requests) < 64 and spent(server) <= 1 and committed_peak(server) <= 1
        assert any(e["type"] == "panel.verdict" for e in outcome.events)


# -- the reservations alone (budgets.py), driven directly ------------------------------------
def refuse(budget: FrameBudget, worst: float) -> LimitExceededError:
    return LimitExceededError(f"refused on {budget.name}", details={"workflow": budget.name, "worst_case": worst})


def test_a_reservation_that_waits_holds_back_every_later_one() -> None:
    """The second does not fit beside the first and waits; the third would fit beside the
    first, but is asked after the second and waits behind it. The first ends cheaply: the
    second goes; the third does not fit beside it and waits again, until the second ends and
    leaves too little: refused."""
    async def main() -> None:
        budget = FrameBudget(None, 100, name="w", cost=1.0)
        book = CostReservations()
        first = await book.reserve([budget], 0.6, refuse)
        second = asyncio.ensure_future(book.reserve([budget], 0.6, refuse))
        third = asyncio.ensure_future(book.reserve([budget], 0.35, refuse))
        await asyncio.sleep(0)
        assert not second.done() and not third.done() and budget.reserved == pytest.approx(0.6)
        book.settle(first, 0.1)
        granted = await second
        await asyncio.sleep(0)
        assert not third.done()  # 0.1 spent + 0.6 in flight + 0.35 > 1: waits for the second
        assert budget.spent == pytest.approx(0.1) and budget.reserved == pytest.approx(0.6) and budget.in_flight == 1
        book.settle(granted, 0.6)
        with pytest.raises(LimitExceededError, match="refused on w"):
            await third
        assert budget.spent == pytest.approx(0.7) and budget.reserved == 0.0 and budget.in_flight == 0

    asyncio.run(main())


def test_a_nested_limit_refuses_on_the_budget_it_does_not_fit() -> None:
    """An attempt charges its frame and every enclosing one: it waits while the one it does
    not fit has attempts in flight, and is refused naming that one."""
    async def main() -> None:
        outer = FrameBudget(None, 100, name="outer", cost=1.0)
        inner = FrameBudget("outer", 100, name="inner", cost=0.5)
        book = CostReservations()
        sibling = await book.reserve([outer], 0.4, refuse)  # a call of the outer workflow itself
        mine = await book.reserve([inner, outer], 0.4, refuse)
        nested = asyncio.ensure_future(book.reserve([inner, outer], 0.2, refuse))
        await asyncio.sleep(0)
        assert not nested.done()  # fits the outer (0.8 + 0.2) but not the inner beside `mine`
        book.settle(sibling, 0.4)
        await asyncio.sleep(0)
        assert not nested.done()  # the outer's release changes nothing for the inner
        book.settle(mine, 0.35)
        with pytest.raises(LimitExceededError, match="refused on inner"):
            await nested
        assert outer.spent == pytest.approx(0.75) and inner.spent == pytest.approx(0.35)

    asyncio.run(main())


def test_a_cancelled_reservation_leaves_the_line() -> None:
    """A waiting reservation whose call is cancelled (the run ended) is dropped and the one
    behind it decided; a granted one cancelled before its attempt went is released."""
    async def main() -> None:
        budget = FrameBudget(None, 100, name="w", cost=1.0)
        book = CostReservations()
        first = await book.reserve([budget], 0.7, refuse)
        waiting = asyncio.ensure_future(book.reserve([budget], 0.5, refuse))
        behind = asyncio.ensure_future(book.reserve([budget], 0.2, refuse))
        await asyncio.sleep(0)
        waiting.cancel()
        assert (await behind).worst == 0.2  # 0.7 + 0.2 fits once the 0.5 has left the line
        assert budget.reserved == pytest.approx(0.9) and budget.in_flight == 2
        book.settle(first, 0.0)
        late = asyncio.ensure_future(book.reserve([budget], 0.9, refuse))
        await asyncio.sleep(0)
        assert not late.done()
        book.settle(await asyncio.wait_for(behind, 1), 0.0)  # `late` is granted now …
        late.cancel()  # … and cancelled before its task resumed: released
        with pytest.raises(asyncio.CancelledError):
            await late
        assert (budget.spent, budget.reserved, budget.in_flight) == (0.0, 0.0, 0)

    asyncio.run(main())


ITEMS = '''agent a { model: "openai/m" }
workflow w(tag: string) -> string[] {
  limits { cost: 0.5, concurrency: 16 }
  return parallelMap(range(16), i => a("${tag} call ${i}"), concurrency: 16)
}'''


def test_eval_items_at_once_each_hold_their_own_limit(tmp_path: Path, provider: Provider) -> None:
    """`flow eval`'s local executor runs items at once, each a run of its own with its own
    budgets, through the same pipeline: four items of a 16-way fan-out, each stopped within
    its limit by its own reservations."""
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"i{n}", "input": {"tag": f"item{n}"}}) + "\n"
                                                  for n in range(4)), encoding="utf-8")
    server = provider.fresh(64)
    session = Session(directory=tmp_path, journal_dir=None, config=CONFIG)
    report = session.eval("w", "cases.jsonl", program=ITEMS, concurrency=4)
    assert [r.error["code"] if r.error else None for r in report.results] == ["limit-exceeded"] * 4
    for n, result in enumerate(report.results):
        mine = [b for b in server.requests if str(b["messages"][-1]["content"]).startswith(f"item{n} ")]
        assert 1 < len(mine) < 16 and len(mine) * REPLY_COST <= 0.5
        assert result.cost == pytest.approx(len(mine) * REPLY_COST)

"""Tools: Python functions on the session, called by agents through the provider loop,
narrowed per call, approval-gated tools asking the operator (language.md §4.1)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from flow_kernel import Session
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.providers.base import ProviderReply, ProviderRequest
from flow_kernel.runtime.tools import ToolRegistry, narrow

TOOLS = '''## Searches the knowledge base.
tool search_kb(query: string, limit?: int) -> string[]
tool refund(order_id: string, amount: number) -> { ok: bool } requires approval
'''


class ToolUser:
    """A provider that calls the tools it is told to, in order, then answers with what they
    returned — the provider loop without a model."""

    def __init__(self, plan: list[tuple[str, dict[str, Any]]]) -> None:
        self.plan = plan
        self.requests: list[ProviderRequest] = []

    async def attempt(self, request: ProviderRequest) -> ProviderReply:
        self.requests.append(request)
        results = []
        for name, arguments in self.plan:
            assert request.call_tool is not None
            results.append(await request.call_tool(name, arguments))
        return ProviderReply(results)


def make(tmp_path: Path, plan: list[tuple[str, dict[str, Any]]], operator: str = "auto-approve") -> tuple[Session, ToolUser]:
    user = ToolUser(plan)
    s = Session(directory=tmp_path, operator=operator, sandbox=False, journal_dir=None,
                context=RunContext(providers={"fake": user}))
    calls: list[tuple[str, Any]] = []

    @s.tool
    def search_kb(query: str, limit: int = 2) -> list[str]:
        calls.append(("search_kb", query))
        return [f"{query} {i}" for i in range(limit)]

    @s.tool(name="refund")
    async def do_refund(order_id: str, amount: float) -> dict[str, bool]:
        calls.append(("refund", order_id))
        return {"ok": amount < 100}

    s.calls = calls  # type: ignore[attr-defined]
    return s, user


AGENT = TOOLS + 'agent helper { model: "fake/m", tools: [search_kb, refund], output: any }\n'


def test_an_agent_calls_python_tools_through_the_provider_loop(tmp_path: Path) -> None:
    s, user = make(tmp_path, [("search_kb", {"query": "refunds", "limit": 3}), ("refund", {"order_id": "A1", "amount": 5})])
    outcome = s.run(AGENT + 'helper("Help")')
    assert outcome.error is None, outcome.to_json()
    assert outcome.result == [["refunds 0", "refunds 1", "refunds 2"], {"ok": True}]
    assert s.calls == [("search_kb", "refunds"), ("refund", "A1")]  # type: ignore[attr-defined]
    (request,) = user.requests
    search, refund = request.tools
    assert search.description == "Searches the knowledge base."
    assert search.parameters["properties"]["query"] == {"type": "string"}
    assert search.parameters["required"] == ["query"] and not search.requires_approval
    assert refund.requires_approval
    completed = next(e for e in outcome.events if e["type"] == "agent.completed")
    assert [c["tool"] for c in completed["data"]["tool_calls"]] == ["search_kb", "refund"]
    started = next(e for e in outcome.events if e["type"] == "agent.started")
    assert started["data"]["tools"] == ("search_kb", "refund")  # a run keeps it as a tuple (a list in JSON)


def test_an_approval_gated_tool_asks_the_operator_and_every_decision_is_an_event(tmp_path: Path) -> None:
    s, _ = make(tmp_path, [("refund", {"order_id": "A1", "amount": 5})], operator="auto-approve")
    outcome = s.run(AGENT + 'helper("Refund A1")')
    assert outcome.result == [{"ok": True}]
    requested, resolved = [e for e in outcome.events if e["type"].startswith("approval.")]
    assert requested["data"]["kind"] == "tool" and requested["data"]["tool"] == "refund"
    assert requested["data"]["details"] == {"tool": "refund", "arguments": {"order_id": "A1", "amount": 5}}
    assert resolved["data"]["answer"] is True and resolved["data"]["by"] == "auto-approve"
    agent_span = next(e for e in outcome.events if e["type"] == "agent.started")["span"]["id"]
    assert requested["span"]["id"] == agent_span  # shown inside the agent call that asked


def test_a_denial_goes_back_to_the_agent_and_the_run_continues(tmp_path: Path) -> None:
    s, _ = make(tmp_path, [("refund", {"order_id": "A1", "amount": 5})], operator="auto-deny")
    outcome = s.run(AGENT + 'let r = helper("Refund A1")\nr')
    assert outcome.error is None
    (answer,) = outcome.result
    assert answer["denied"] is True and "denied" in answer["reason"]
    assert s.calls == []  # type: ignore[attr-defined]


def test_no_operator_for_a_gated_tool_is_operator_unavailable(tmp_path: Path) -> None:
    s, _ = make(tmp_path, [("refund", {"order_id": "A1", "amount": 5})], operator="none")
    outcome = s.run(AGENT + 'helper("Refund A1")')
    assert outcome.error is not None and outcome.error.code == "operator-unavailable"


@pytest.mark.parametrize(("plan", "expected"), [
    ([("search_kb", {"limit": 2})], "invalid arguments for `search_kb`"),
    ([("delete_everything", {})], "there is no tool `delete_everything`"),
])
def test_bad_tool_calls_go_back_to_the_model_as_errors(tmp_path: Path, plan: list[tuple[str, dict[str, Any]]],
                                                       expected: str) -> None:
    s, _ = make(tmp_path, plan)
    outcome = s.run(AGENT + 'helper("x")')
    assert outcome.error is None
    assert expected in outcome.result[0]["error"]


def test_a_tool_that_raises_or_breaks_its_type_answers_with_an_error(tmp_path: Path) -> None:
    user = ToolUser([("search_kb", {"query": "boom"}), ("search_kb", {"query": "wrong"})])
    s = Session(directory=tmp_path, operator="none", sandbox=False, journal_dir=None,
                context=RunContext(providers={"fake": user}))

    @s.tool
    def search_kb(query: str) -> Any:
        if query == "boom":
            raise RuntimeError("index offline")
        return [1, 2]  # not string[]

    @s.tool
    def refund(order_id: str, amount: float) -> Any:
        return {"ok": True}

    outcome = s.run(AGENT + 'helper("x")')
    assert outcome.error is None
    raised, wrong = outcome.result
    assert raised == {"error": "`search_kb` raised RuntimeError: index offline"}
    assert "breaks its declared type" in wrong["error"]


def test_call_tools_narrow_the_agents_tools(tmp_path: Path) -> None:
    s, user = make(tmp_path, [("refund", {"order_id": "A1", "amount": 5})])
    outcome = s.run(AGENT + 'helper("Only search", tools: [search_kb])')
    assert [t.name for t in user.requests[0].tools] == ["search_kb"]
    assert "there is no tool `refund`" in outcome.result[0]["error"]


def test_host_policy_narrows_too(tmp_path: Path) -> None:
    from flow_kernel.lang.compiler import compile_source
    from flow_kernel.source import SourceFile

    check = compile_source(SourceFile("t.flow", AGENT)).check
    registry = ToolRegistry(policy={"search_kb"})
    registry.register(lambda query, limit=2: [], "search_kb")
    registry.register(lambda order_id, amount: {"ok": True}, "refund")
    specs, missing = narrow(check, ["search_kb", "refund"], None, registry)
    assert [t.name for t in specs] == ["search_kb"] and missing == []


def test_a_tool_without_an_implementation_is_a_capability_violation(tmp_path: Path) -> None:
    s = Session(directory=tmp_path, operator="none", sandbox=False, journal_dir=None,
                context=RunContext(providers={"fake": ToolUser([])}))
    outcome = s.run(AGENT + 'helper("x")')
    assert outcome.error is not None and outcome.error.code == "capability-violation"
    assert "search_kb" in outcome.error.message and "Session.tool" in outcome.error.message


def test_the_mock_provider_exercises_tools_deterministically(tmp_path: Path) -> None:
    def once() -> tuple[Any, list[Any]]:
        s, _ = make(tmp_path, [])
        outcome = s.run(TOOLS + 'agent m { model: "mock", tools: [search_kb, refund], output: { done: bool } }\nm("go")')
        completed = next(e for e in outcome.events if e["type"] == "agent.completed")
        return outcome.result, completed["data"]["tool_calls"]

    first, again = once(), once()
    assert first == again
    result, calls = first
    assert set(result) == {"done"} and [c["tool"] for c in calls] == ["search_kb", "refund"]
    assert isinstance(calls[0]["arguments"]["query"], str)


def test_tools_in_the_sandbox(tmp_path: Path) -> None:
    s, _ = make(tmp_path, [("search_kb", {"query": "q"})])
    s.sandbox = True

    async def go() -> Any:
        try:
            return (await s.run_async(AGENT + 'helper("x")')).result
        finally:
            await s.aclose()

    assert asyncio.run(go()) == [["q 0", "q 1"]]


def test_a_replay_does_not_call_tools_again_and_gives_the_same_events(tmp_path: Path) -> None:
    from flow_kernel.runtime.events.vocabulary import comparable

    program = TOOLS + 'agent m { model: "mock", tools: [search_kb, refund], output: { done: bool } }\nm("go")'
    recording, _ = make(tmp_path, [])
    recording.record("tools.jsonl")
    recorded = recording.run(program)
    assert len(recording.calls) == 2  # type: ignore[attr-defined]
    replaying, _ = make(tmp_path, [])
    replaying.replay("tools.jsonl")
    replayed = replaying.run(program)
    assert replaying.calls == []  # type: ignore[attr-defined]
    assert replayed.result == recorded.result
    strip = [{**e, "run": None} for e in comparable(recorded.events)]
    again = [{**e, "run": None} for e in comparable(replayed.events)]
    # the same events, except that a recorded decision replays as `replayed`: no one was asked
    for event in strip:
        if event["type"] == "approval.resolved":
            event["data"] = {**event["data"], "by": "replayed", "replayed": True}
        for call in event["data"].get("tool_calls", []):
            if "approval" in call:
                call["approval"] = {**call["approval"], "by": "replayed"}
    assert strip == again

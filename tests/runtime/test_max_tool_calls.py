"""`max_tool_calls`: how many tool calls one attempt of an agent call may make (8 unless the
agent or the call says), enforced for every provider by the request layer; the mock model
calls each of its tools once, so an agent with N tools makes N calls an attempt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flow_kernel import Session
from flow_kernel.lang import check
from flow_kernel.source import SourceFile


def _program(tools: int, agent_limit: str = "", call: str = "") -> str:
    names = [f"t{i}" for i in range(tools)]
    lines = [f"tool {name}(id: string) -> string" for name in names]
    lines.append(f'agent clerk {{ model: "mock", tools: [{", ".join(names)}]{agent_limit} }}')
    lines.append(f'clerk("find order 42"{call})')
    return "\n".join(lines) + "\n"


def _run(tmp_path: Path, source: str, tools: int) -> tuple[Any, list[str]]:
    ran: list[str] = []
    s = Session(directory=tmp_path, operator="none", sandbox=False, journal_dir=None)
    for i in range(tools):
        s.tool(lambda id, name=f"t{i}": ran.append(name) or "ok", name=f"t{i}")
    return s.run(source), ran


def test_an_agent_at_its_limit_answers(tmp_path: Path) -> None:
    outcome, ran = _run(tmp_path, _program(2, ", max_tool_calls: 2"), 2)
    assert outcome.error is None, outcome.error
    assert ran == ["t0", "t1"]


def test_one_call_over_the_agents_limit_fails_naming_it(tmp_path: Path) -> None:
    outcome, ran = _run(tmp_path, _program(2, ", max_tool_calls: 1"), 2)
    error = outcome.error
    assert error is not None and error.code == "agent-invocation"
    assert "more than 1 tool call in one attempt (max_tool_calls: 1)" in error.message
    assert "raise it with `max_tool_calls: N`" in error.message
    assert error.details["max_tool_calls"] == 1
    assert ran == ["t0"]  # the call over the limit never ran


def test_a_calls_option_overrides_the_agents_field(tmp_path: Path) -> None:
    outcome, ran = _run(tmp_path, _program(3, ", max_tool_calls: 1", ", max_tool_calls: 3"), 3)
    assert outcome.error is None, outcome.error
    assert ran == ["t0", "t1", "t2"]
    outcome, ran = _run(tmp_path, _program(3, ", max_tool_calls: 5", ", max_tool_calls: 2"), 3)
    assert outcome.error is not None and "(max_tool_calls: 2)" in outcome.error.message and ran == ["t0", "t1"]


def test_the_default_is_eight(tmp_path: Path) -> None:
    outcome, ran = _run(tmp_path, _program(8), 8)
    assert outcome.error is None and len(ran) == 8
    outcome, ran = _run(tmp_path, _program(9), 9)
    assert outcome.error is not None and "(max_tool_calls: 8)" in outcome.error.message and len(ran) == 8


def test_a_computed_limit_that_is_not_positive_is_an_evaluation_error(tmp_path: Path) -> None:
    source = "let n = 1 - 1\n" + _program(1, call=", max_tool_calls: n")
    outcome, ran = _run(tmp_path, source, 1)
    assert outcome.error is not None and outcome.error.code == "evaluation"
    assert "`max_tool_calls` must be a positive integer, not 0" in outcome.error.message and ran == []


def _codes(source: str) -> list[tuple[str, str]]:
    found = check(SourceFile("m.flow", source)).diagnostics
    return [(d.code, d.span.text) for d in found if d.is_error]


def test_the_checker_holds_it_to_a_positive_integer() -> None:
    assert _codes(_program(1, ", max_tool_calls: 0")) == [("F4037", "0")]
    assert _codes(_program(1, ', max_tool_calls: "3"')) == [("F4037", '"3"')]
    assert _codes(_program(1, ", max_tool_calls: 2.5")) == [("F4037", "2.5")]
    assert _codes(_program(1, ", max_tool_calls: 3s")) == [("F4037", "3s")]
    assert _codes("let n = 3\n" + _program(1, ", max_tool_calls: n"))[0][0] == "F4037"  # an agent's is a constant
    assert _codes(_program(1, call=", max_tool_calls: -1")) == [("F4037", "-1")]
    assert _codes('let s = "x"\n' + _program(1, call=", max_tool_calls: s"))[0][0] == "F3001"
    assert _codes("let n = 4\n" + _program(1, ", max_tool_calls: 3", ", max_tool_calls: n")) == []

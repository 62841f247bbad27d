"""Real Flow programs through the compiler and an executor: every statement and
expression form, every builtin, agents, and failure paths with their code and span."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor
from tests.runtime.programs import ALL, Case


def run_case(executor: Any, source: str) -> RunOutcome:
    compiled = compile_source(SourceFile("case.flow", source))
    assert compiled.ok, [f"{d.code} {d.message}" for d in compiled.check.errors]
    return asyncio.run(run_compiled(compiled, executor))


def assert_outcome(outcome: RunOutcome, expected: dict[str, Any]) -> None:
    if "error" in expected:
        assert outcome.error is not None, f"expected {expected['error']}, got result {outcome.result!r}"
        assert outcome.error.code == expected["error"], outcome.error.message
        assert outcome.error.span is not None, "a runtime error must carry a Flow span"
        assert outcome.error.span["file"] == "case.flow"
        if "line" in expected:
            assert outcome.error.span["line"] == expected["line"], outcome.error.span
    else:
        assert outcome.error is None, f"{outcome.error.code}: {outcome.error.message}"
        if "result" in expected:
            assert outcome.result == expected["result"]
            assert type(outcome.result) is type(expected["result"])
    if "prints" in expected:
        assert [e["data"]["text"] for e in outcome.events if e["type"] == "print"] == expected["prints"]
    if "events" in expected:
        types = [e["type"] for e in outcome.events]
        position = 0
        for wanted in expected["events"]:
            assert wanted in types[position:], f"{wanted} missing after position {position} in {types}"
            position = types.index(wanted, position) + 1


@pytest.fixture(scope="module")
def inprocess() -> InProcessExecutor:
    return InProcessExecutor()


@pytest.mark.parametrize(("name", "source", "expected"), ALL, ids=[c[0] for c in ALL])
def test_in_process(inprocess: InProcessExecutor, name: str, source: str, expected: dict[str, Any]) -> None:
    assert_outcome(run_case(inprocess, source), expected)


def test_cases_are_distinct() -> None:
    names = [c[0] for c in ALL]
    assert len(names) == len(set(names))
    assert all(isinstance(c, tuple) and len(c) == 3 for c in ALL)
    _: list[Case] = ALL

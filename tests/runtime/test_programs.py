"""Real Flow programs through the compiler and an executor: every statement and
expression form, every builtin, agents, and failure paths with their code and span."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.executors import SandboxExecutor
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor
from tests.runtime.programs import ALL, Case


def run_case(executor: Any, source: str, loop: asyncio.AbstractEventLoop | None = None) -> RunOutcome:
    compiled = compile_source(SourceFile("case.flow", source))
    assert compiled.ok, [f"{d.code} {d.message}" for d in compiled.check.errors]
    if loop is None:
        return asyncio.run(run_compiled(compiled, executor))
    return loop.run_until_complete(run_compiled(compiled, executor))


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


@pytest.fixture(scope="module")
def sandbox() -> Iterator[tuple[SandboxExecutor, asyncio.AbstractEventLoop]]:
    loop = asyncio.new_event_loop()
    executor = SandboxExecutor()
    yield executor, loop
    loop.run_until_complete(executor.close())
    loop.close()


@pytest.mark.parametrize(("name", "source", "expected"), ALL, ids=[c[0] for c in ALL])
def test_in_sandbox(sandbox: tuple[SandboxExecutor, asyncio.AbstractEventLoop], name: str, source: str,
                    expected: dict[str, Any]) -> None:
    executor, loop = sandbox
    assert_outcome(run_case(executor, source, loop), expected)


def test_sandbox_and_host_give_the_same_events(inprocess: InProcessExecutor,
                                               sandbox: tuple[SandboxExecutor, asyncio.AbstractEventLoop]) -> None:
    from pathlib import Path

    source = (Path(__file__).parents[2] / "examples" / "triage.flow").read_text()
    here = run_case(inprocess, source)
    there = run_case(sandbox[0], source, sandbox[1])
    # Concurrent agent calls may interleave differently (runtime.md §7 orders sibling
    # branches by key, not by time); within each span the sequence must be the same.
    def by_span(events: list[dict[str, Any]]) -> dict[str, list[tuple[Any, ...]]]:
        out: dict[str, list[tuple[Any, ...]]] = {}
        for e in events:
            data = {k: v for k, v in e["data"].items() if k != "latency_ms"}
            out.setdefault(str(e["span"]["id"]), []).append((e["type"], e["span"]["parent"], e["stage"], repr(data)))
        return out

    assert by_span(here.events) == by_span(there.events)
    assert len(here.events) == len(there.events)
    assert here.to_json()["error"] == there.to_json()["error"]


def test_cases_are_distinct() -> None:
    names = [c[0] for c in ALL]
    assert len(names) == len(set(names))
    assert all(isinstance(c, tuple) and len(c) == 3 for c in ALL)
    _: list[Case] = ALL


def test_programs_cover_every_form_and_builtin() -> None:
    """Every statement and expression node of the language and every builtin appears in a program."""
    import dataclasses

    from flow_kernel.lang import ast as flow_ast
    from flow_kernel.lang.builtins import BUILTINS
    from flow_kernel.lang.check import check

    seen_nodes: set[str] = set()
    called: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, flow_ast.Node):
            seen_nodes.add(type(node).__name__)
            if isinstance(node, flow_ast.Call) and isinstance(node.callee, flow_ast.Name):
                called.add(node.callee.name)
            for f in dataclasses.fields(node):
                walk(getattr(node, f.name))
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for _, source, _ in ALL:
        walk(check(SourceFile("c.flow", source)).module)
    forms = {c.__name__ for c in vars(flow_ast).values()
             if isinstance(c, type) and issubclass(c, (flow_ast.Stmt, flow_ast.Expr))
             and c not in (flow_ast.Stmt, flow_ast.Expr, flow_ast.ErrorExpr, flow_ast.TypeArg)}
    assert forms - seen_nodes == set()
    assert set(BUILTINS) - called == set()


@pytest.mark.parametrize(("policy", "expected"), [
    ("auto-approve", [True, "x"]),
    ("auto-deny", [False, "x"]),
])
def test_operator_policies(inprocess: InProcessExecutor, policy: str, expected: list[Any]) -> None:
    from flow_kernel.runtime.policy.operator import Operator

    compiled = compile_source(SourceFile("op.flow", 'let ok = approve "Go?" details {n: 1}\nlet chosen = ask "Which?" choice ["x", "y"]\n[ok, chosen]'))
    outcome = asyncio.run(run_compiled(compiled, inprocess, RunContext(operator=Operator.parse(policy))))
    assert outcome.result == expected
    resolved = [e["data"] for e in outcome.events if e["type"] == "approval.resolved"]
    assert [r["by"] for r in resolved] == [policy, policy]


def test_answers_file(inprocess: InProcessExecutor, tmp_path: Any) -> None:
    from flow_kernel.runtime.policy.operator import Operator

    answers = tmp_path / "answers.json"
    answers.write_text('{"Go?": true, "Note?": "be brief"}')
    compiled = compile_source(SourceFile("op.flow", 'let ok = approve "Go?"\nlet note = ask "Note?"\n[ok, note]'))
    outcome = asyncio.run(run_compiled(compiled, inprocess, RunContext(operator=Operator.parse(f"answers:{answers}"))))
    assert outcome.result == [True, "be brief"]
    compiled = compile_source(SourceFile("op.flow", 'let ok = approve "Unlisted?"\nok'))
    outcome = asyncio.run(run_compiled(compiled, inprocess, RunContext(operator=Operator.parse(f"answers:{answers}"))))
    assert outcome.error is not None and outcome.error.code == "operator-unavailable"


def test_in_process_deadline_fails_a_host_call_in_flight(inprocess: InProcessExecutor) -> None:
    """The workflow's `duration` fails a host call that is still waiting, in process as in
    the sandbox: the in-process bridge hands the runtime a future its deadline timer can
    fail (a coroutine, as it once was, made the timer raise and the run wait out the call)."""
    source = ('agent slowpoke { model: "scripted", script: [slow(5s, "late")] }\n'
              'workflow w() -> string {\n  limits { duration: 200ms }\n  return slowpoke("hi")\n}\nw()')
    started = asyncio.get_event_loop_policy().new_event_loop()
    try:
        begun = started.time()
        outcome = run_case(inprocess, source, started)
        took = started.time() - begun
    finally:
        started.close()
    assert outcome.error is not None and outcome.error.code == "workflow-timeout", outcome.to_json()
    assert took < 4, f"the run waited {took:.1f} s for a call its 200 ms deadline had failed"

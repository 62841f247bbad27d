"""A nested workflow call has its input and its result validated (language.md §3.2). The
host validates; the sandbox asks it only where the answer is not already known: a workflow
without parameters has the input `{}`, and a value of exactly the class its schema names
(`int` for `{"type": "integer"}`, `str`, `bool`, anything for `{}`) passes whatever it holds
(flowbox/local_checks.py, lang/codegen.py `local_checks`). Every other value is still sent,
so the errors are the host's, word for word; and a request not sent keeps its order index,
so what a run does, its ids and its events are those of a run that asked for everything."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang import codegen
from flow_kernel.lang.compiler import Compiled, compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.events.vocabulary import comparable
from flow_kernel.runtime.executors import SandboxExecutor
from flow_kernel.runtime.host import HostServices
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor

PROGRAM = """workflow none() -> int {
  return 1
}
workflow one(x: int) -> int {
  return x + none()
}
workflow tagged(s: string, on: bool, v: any) -> any {
  return on ? "${s}${v}" : v
}
workflow listed(xs: int[]) -> int {
  return len(xs)
}
workflow picky(x: int) -> int {
  let y: any = parseJson("2.5")
  return x > 100 ? y : x
}
let loose: any = parseJson("[4, true, \\"z\\"]")
[none() + one(5), tagged("a", true, 3), tagged("b", false, null), listed([1, 2]), one(loose[0]), picky(1)]
"""

# Each call's value that no class settles, and the host's error for it.
FAILING = [
    ('one(parseJson("true"))', "workflow-input-validation", 'x: true is not of type "integer"'),
    ('one(parseJson("2.0"))', None, None),  # JSON Schema's integer: the host accepts 2.0
    ('tagged(parseJson("1"), true, 1)', "workflow-input-validation", 's: 1 is not of type "string"'),
    ("picky(101)", "output-validation", '(root): 2.5 is not of type "integer"'),
]


def _compile(source: str, *, checks: bool = True, monkeypatch: pytest.MonkeyPatch | None = None) -> Compiled:
    if not checks:
        assert monkeypatch is not None
        monkeypatch.setattr(codegen, "local_checks", lambda schemas, params: [None, None])
    compiled = compile_source(SourceFile("w.flow", source))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    return compiled


def _asking(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    asked: list[dict[str, Any]] = []
    handle = HostServices.handle

    async def counting(self: HostServices, op: str, payload: dict[str, Any]) -> Any:
        if op == "validate":
            asked.append(dict(payload))
        return await handle(self, op, payload)

    monkeypatch.setattr(HostServices, "handle", counting)
    return asked


def _in_process(compiled: Compiled) -> RunOutcome:
    return asyncio.run(run_compiled(compiled, InProcessExecutor(), RunContext(run_id="r-validate")))


def test_the_generated_table_names_what_a_class_settles() -> None:
    python = _compile(PROGRAM).python or ""
    assert "[None, 'integer']" in python  # none(): no parameters, an int result
    assert "[['integer'], 'integer']" in python  # one, picky
    assert "[['string', 'boolean', 'any'], 'any']" in python  # tagged
    assert "[None, 'integer']]" in python  # listed: an int[] is the host's to validate


def test_in_the_sandbox_only_what_no_class_settles_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = _compile(PROGRAM)
    asked = _asking(monkeypatch)

    async def go() -> RunOutcome:
        executor = SandboxExecutor(warm=0)
        try:
            return await run_compiled(compiled, executor)
        finally:
            await executor.close()

    outcome = asyncio.run(go())
    assert outcome.error is None, outcome.error
    assert outcome.result == [7, "a3", None, 2, 5, 1]
    # Only listed([1, 2])'s input: every other value's class settles it.
    assert [(p["workflow"], "input" in p) for p in asked] == [("listed", True)]
    spans = [e["span"]["id"] for e in outcome.events if e["type"] == "workflow.started"]
    assert len(spans) == len(set(spans)) == 10, spans  # the cell, 9 calls


def test_a_run_is_the_same_as_one_that_asks_for_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _in_process(_compile(PROGRAM))
    with monkeypatch.context() as patched:
        asked = _asking(patched)
        slow = _in_process(_compile(PROGRAM, checks=False, monkeypatch=patched))
    assert len(asked) == 15  # the input of each of the 6 calls with parameters, and 9 results
    assert fast.error is None and slow.error is None
    assert fast.result == slow.result
    assert comparable(fast.events) == comparable(slow.events)


@pytest.mark.parametrize(("call", "code", "message"), FAILING)
def test_a_value_no_class_settles_gets_the_hosts_answer(monkeypatch: pytest.MonkeyPatch, call: str,
                                                        code: str | None, message: str | None) -> None:
    source = PROGRAM.rsplit("\n", 2)[0] + "\n" + call + "\n"
    fast = _in_process(_compile(source))
    with monkeypatch.context() as patched:
        slow = _in_process(_compile(source, checks=False, monkeypatch=patched))
    if code is None:
        assert fast.error is None and slow.error is None and fast.result == slow.result
        return
    assert fast.error is not None and slow.error is not None
    assert (fast.error.code, fast.error.message, fast.error.span) == (slow.error.code, slow.error.message, slow.error.span)
    assert fast.error.code == code and message is not None and message in fast.error.message
    assert comparable(fast.events) == comparable(slow.events)

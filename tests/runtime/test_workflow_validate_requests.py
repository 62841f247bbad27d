"""A nested workflow call asks the host to validate its input and its result (language.md
§3.2); a workflow without parameters has the input `{}`, which its schema always accepts, so
only its result is sent (flowbox/runtime.py `workflow`): one host round trip less per call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.executors import SandboxExecutor
from flow_kernel.runtime.host import HostServices
from flow_kernel.runtime.run import run_compiled

PROGRAM = """workflow none() -> int {
  return 1
}
workflow one(x: int) -> int {
  return x + none()
}
none() + one(5)
"""


def _run(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]:
    compiled = compile_source(SourceFile("w.flow", PROGRAM))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    asked: list[dict[str, Any]] = []
    handle = HostServices.handle

    async def counting(self: HostServices, op: str, payload: dict[str, Any]) -> Any:
        if op == "validate":
            asked.append(dict(payload))
        return await handle(self, op, payload)

    monkeypatch.setattr(HostServices, "handle", counting)

    async def go() -> Any:
        executor = SandboxExecutor(warm=0)
        try:
            return await run_compiled(compiled, executor)
        finally:
            await executor.close()

    outcome = asyncio.run(go())
    assert outcome.error is None, outcome.error
    return outcome.result, asked, outcome.events


def test_a_workflow_without_parameters_sends_only_its_result(monkeypatch: pytest.MonkeyPatch) -> None:
    result, asked, events = _run(monkeypatch)
    assert result == 7
    # none() twice (its result each time), one(5) its input and its result.
    assert [("input" in p, p["workflow"]) for p in asked] == [
        (False, "none"), (True, "one"), (False, "none"), (False, "one")]
    assert next(p for p in asked if "input" in p)["input"] == {"x": 5}
    # Ids do not move: the index the skipped request would have taken stays taken.
    spans = [e["span"]["id"] for e in events if e["type"] == "workflow.started"]
    assert len(spans) == len(set(spans)) == 4, spans

"""Forged host requests from a bypassed sandbox (issue 15, item 7): a request for an undeclared
agent, or a payload of the wrong shape for any host operation, is a `capability-violation`
with a clear message, never a host `KeyError`/`TypeError` that the bridge reports as
`isolate` ("host error: KeyError: 'nobody'"). Sent from raw Python inside a real sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flow_kernel.runtime import host
from flow_kernel.runtime.agents import AgentPipeline, pipeline
from tests.sandbox.sandbox_helpers import Sandbox, sandbox
from tests.security.test_flow_doors import Recorder, ask_host, host_for

__all__ = ["sandbox"]

SOURCE = ('tool lookup(path: string) -> string\nagent a { model: "rec/m", output: any }\n'
          'team t { main: a }\nworkflow w(x: int) -> int { return x }\n1')
BASE = {"team": None, "member": None, "prompt": "p", "call": "c1", "expect": False, "run": "r-compromised",
        "span": "s1", "stage": None, "frame": "f1"}
OPTIONS = {"schema": {}, "label": "x"}

FORGED: list[tuple[str, Any]] = [
    ("agent", {**BASE, "agent": "nobody", "options": OPTIONS}),
    ("agent", {**BASE, "agent": ["a"], "options": OPTIONS}),
    ("agent", {**BASE, "agent": "a", "options": "not an object"}),
    ("agent", {**BASE, "agent": "a", "options": {**OPTIONS, "schema": "x"}}),
    ("agent", {**BASE, "agent": "a", "options": {**OPTIONS, "tools": "lookup"}}),
    ("agent", {**BASE, "agent": "a", "options": {**OPTIONS, "repair": "many"}}),
    ("agent", {**BASE, "agent": "a", "options": {**OPTIONS, "timeout": "soon"}}),
    ("agent", {**BASE, "agent": "a", "frame": ["f1"], "options": OPTIONS}),
    ("agent", "not an object"),
    ("approve", "not an object"),
    ("process", {"executable": "echo", "arguments": [], "timeout_ms": "soon"}),
    ("process", {"executable": "echo", "arguments": "a b", "stdin": None}),
    ("process", {"executable": "echo", "arguments": [], "stdin": 5}),
    ("validate", {"workflow": "w", "input": "not an object"}),
    ("validate", {"workflow": "nope", "input": {}}),
]


def forge(box: Sandbox, tmp_path: Path) -> tuple[list[Any], Recorder]:
    provider = Recorder()
    target = host_for(SOURCE, tmp_path, providers={"rec": provider}, allow_run=frozenset({"echo"}))
    target.emit({"type": "workflow.started", "data": {"name": "<cell>", "frame": "f1", "parent": None, "limits": {}}})
    return ask_host(box, target, FORGED), provider


def test_forged_requests_are_capability_violations(sandbox: Sandbox, tmp_path: Path) -> None:
    results, provider = forge(sandbox, tmp_path)
    assert [r[:2] for r in results] == [["error", "capability-violation"]] * len(FORGED), results
    assert results[0][2] == "no agent `nobody` is declared in this program"
    assert not any("host error" in r[2] for r in results), results
    assert provider.requests == []  # nothing forged reached a provider
    assert sandbox.raw("return 3") == 3


def test_the_declared_agent_still_answers(sandbox: Sandbox, tmp_path: Path) -> None:
    provider = Recorder()
    target = host_for(SOURCE, tmp_path, providers={"rec": provider})
    target.emit({"type": "workflow.started", "data": {"name": "<cell>", "frame": "f1", "parent": None, "limits": {}}})
    results = ask_host(sandbox, target, [("agent", {**BASE, "agent": "a", "options": OPTIONS}),
                                         ("agent", {**BASE, "agent": None, "team": "t", "member": "main",
                                                    "call": "c2", "options": {**OPTIONS, "repair": 0, "timeout": None}})])
    assert results == [["ok", "ok"], ["ok", "ok"]]


def test_the_reopened_door_is_a_host_error(sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The old behaviour: any agent name is looked up directly, options taken as they come.
    monkeypatch.setattr(AgentPipeline, "_resolve", AgentPipeline._target)
    monkeypatch.setattr(pipeline, "checked_options", lambda payload: payload.get("options") or {})
    original = host.HostServices.handle

    async def handle(self: host.HostServices, op: str, payload: Any) -> Any:
        if not isinstance(payload, dict):  # the old handler called payload.get on anything
            raise AttributeError(f"'{type(payload).__name__}' object has no attribute 'get'")
        return await original(self, op, payload)

    monkeypatch.setattr(host.HostServices, "handle", handle)
    results, _ = forge(sandbox, tmp_path)
    assert results[0][:2] == ["error", "isolate"] and "KeyError: 'nobody'" in results[0][2], results
    assert results[7][:2] == ["error", "isolate"] and "unhashable" in results[7][2], results
    assert results[8][:2] == ["error", "isolate"], results


class ForgedReplyExecutor:
    """Stands for a compromised sandbox at the one place its run reply reaches the host."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply

    async def run(self, module: str, payload: dict[str, Any], host: Any) -> dict[str, Any]:
        return self.reply


@pytest.mark.parametrize("forged", [{"steps": "many", "bindings": ["x"]}, {"steps": -5, "bindings": "x"},
                                    {"steps": True, "bindings": None}, {"steps": 1e300, "bindings": 3}])
def test_a_forged_run_reply_counts_as_nothing(forged: dict[str, Any]) -> None:
    import asyncio

    from flow_kernel.lang.compiler import compile_source
    from flow_kernel.runtime.run import run_compiled
    from flow_kernel.source import SourceFile

    compiled = compile_source(SourceFile("<cell>", "let n = 1\nn"))
    outcome = asyncio.run(run_compiled(compiled, ForgedReplyExecutor({"result": 1, **forged})))
    assert outcome.ok and outcome.bindings == {} and outcome.steps == 0

"""A run's host side holds no reference cycle once released (runtime/host.py `release`,
agents/pipeline.py `RunDeadline`): its pipeline, its host and the events they keep are
freed by reference counting when the run's outcome goes, not left to the cyclic collector,
which would scan them all first (~5 containers an agent call)."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.errors import WorkflowTimeoutError
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.host import HostServices

SOURCE = 'agent a { model: "scripted", script: ["ok"] }\nlet x = a("hi")\nx\n'


def started_host() -> HostServices:
    """A host whose run has started its top-level frame (as the sandbox announces it)."""
    host = HostServices(compile_source(SourceFile("f.flow", SOURCE)).check, RunContext(run_id="r1"))
    host.on_notify("event", {"type": "workflow.started", "span": {"id": "s1", "parent": None}, "stage": None,
                             "data": {"name": "<cell>", "frame": "s1", "parent": None}, "order": [[1]]})
    return host


def request(n: int) -> dict[str, Any]:
    """An agent request as the sandbox sends one."""
    return {"agent": "a", "team": None, "member": None, "prompt": "hi", "options": {"label": "a@2:9"},
            "call": f"c2.{n}", "expect": False, "order": [[2], [n]], "run": "r1", "span": "s1", "stage": None,
            "frame": "s1"}


@pytest.fixture
def no_automatic_collection() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_a_released_host_and_its_pipeline_are_freed_by_reference_counting(no_automatic_collection: None) -> None:
    host = started_host()
    for n in range(3):
        assert asyncio.run(host.handle("agent", request(n))) == "ok"
    assert [e["type"] for e in host.events].count("agent.completed") == 3
    pipeline = weakref.ref(host.agents)
    freed = weakref.ref(host)
    host.release()
    del host
    assert freed() is None and pipeline() is None


def test_the_run_deadline_reaches_the_pipeline_and_its_guard() -> None:
    host = started_host()
    pipeline = host.agents
    assert pipeline.deadline is None
    host.deadline = time.monotonic() + 60
    assert pipeline.deadline == host.deadline
    guard = next(layer for layer in pipeline.layers if type(layer).__name__ == "GuardLayer")
    left = guard.remaining()
    assert left is not None and 0 < left <= 60
    host.deadline = time.monotonic() - 1  # passed: a call that arrives now does not start
    with pytest.raises(WorkflowTimeoutError):
        asyncio.run(host.handle("agent", request(0)))

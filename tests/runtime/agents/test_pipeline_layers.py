"""pipeline.py: a run's attempt chain holds the layers that apply to it, in their order; the
local providers are made when the run starts, an embedder's provider is kept as given."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.agents import AgentPipeline, HostCalls
from flow_kernel.runtime.budgets import FrameBudget
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable.cassette import CassettePlayer, CassetteRecorder
from flow_kernel.runtime.providers.base import ProviderReply, ProviderRequest
from flow_kernel.runtime.providers.local import MockProvider, ScriptedProvider
from flow_kernel.source import SourceFile

CHECK = compile_source(SourceFile("p.flow", 'agent writer { model: "scripted", script: ["one"] }\n')).check


async def approve(*args: Any, **kwargs: Any) -> tuple[bool, str]:
    return True, "test"


def names(context: RunContext, checkpoint: Any = None) -> list[str]:
    pipeline = AgentPipeline(CHECK, context, {}, HostCalls(lambda e: None, approve), checkpoint)
    return [type(layer).__name__ for layer in pipeline.layers]


LIVE = ["RequestLayer", "StreamingLayer", "GuardLayer", "TimeoutLayer"]


def test_a_plain_run_has_the_live_layers_only() -> None:
    assert names(RunContext()) == ["CostLayer", *LIVE]


def test_the_journal_answers_before_a_cassette(tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_text("")
    checkpoint = object()  # the journal layer only keeps it here
    assert names(RunContext(player=CassettePlayer(tmp_path / "c.jsonl")), checkpoint) == \
        ["CostLayer", "JournalLayer", "ReplayLayer", *LIVE]
    assert names(RunContext(recorder=CassetteRecorder(tmp_path / "r.jsonl"))) == ["CostLayer", "RecordLayer", *LIVE]


def test_the_local_providers_are_made_when_the_run_starts() -> None:
    class Own:
        async def attempt(self, request: ProviderRequest) -> ProviderReply:
            return ProviderReply("mine")

    own = Own()
    made = AgentPipeline(CHECK, RunContext(), {}, HostCalls(lambda e: None, approve))
    assert isinstance(made.providers["mock"], MockProvider)
    assert isinstance(made.providers["scripted"], ScriptedProvider)
    assert made.providers["scripted"].scripts["writer"].ordered[0].value == "one"  # type: ignore[attr-defined]
    given = AgentPipeline(CHECK, RunContext(providers={"scripted": own}), {}, HostCalls(lambda e: None, approve))
    assert given.providers["scripted"] is own and isinstance(given.providers["mock"], MockProvider)


def test_an_attempt_of_the_own_providers_skips_the_layers_that_pass_it_through() -> None:
    """The local providers never stream and have no guard: their attempts go through a chain
    without those layers (no delta sink on the request). An embedder's provider under a
    local name keeps the whole chain (its request gets a delta sink)."""
    seen: list[ProviderRequest] = []

    class Capture:
        async def attempt(self, request: ProviderRequest) -> ProviderReply:
            seen.append(request)
            return ProviderReply("mine")

    async def call(context: RunContext, replace: bool) -> Any:
        pipeline = AgentPipeline(CHECK, context, {"f": FrameBudget(None, 5)}, HostCalls(lambda e: None, approve))
        if replace:  # the pipeline's own provider, watched
            pipeline.providers["scripted"] = Capture()
        return await pipeline.call({"agent": "writer", "frame": "f", "prompt": "p", "call": "c1", "order": [[1]]})

    assert asyncio.run(call(RunContext(), replace=True)) == "mine"
    assert asyncio.run(call(RunContext(providers={"scripted": Capture()}), replace=False)) == "mine"
    assert [request.on_delta is not None for request in seen] == [False, True]

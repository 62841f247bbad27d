"""cassette.py: replaying answers (recorded approvals shown as replayed, no one asked) and
recording them (answers, failures, the tool calls as the host saw them)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.errors import AgentInvocationError
from flow_kernel.runtime.agents import Attempt
from flow_kernel.runtime.agents.cassette import RecordLayer, ReplayLayer
from flow_kernel.runtime.durable.cassette import CassettePlayer, CassetteRecorder
from flow_kernel.runtime.providers.base import ProviderReply
from tests.runtime.agents.making import Inner, make_call


def test_what_is_recorded_is_replayed(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    recorder = CassetteRecorder(path)
    record = RecordLayer(recorder, "prog#w")

    async def answering(attempt: Attempt) -> ProviderReply:
        attempt.call.tool_calls.append({"tool": "refund", "arguments": {"id": 1}, "result": {"ok": True},
                                        "approval": {"answer": True, "by": "operator"}})
        return ProviderReply({"n": 1}, {"input_tokens": 5})

    asyncio.run(record(Attempt(make_call(), 1), answering))
    with pytest.raises(AgentInvocationError):
        asyncio.run(record(Attempt(make_call(), 2), Inner(AgentInvocationError("down"))))

    asked: list[tuple[Any, ...]] = []

    async def approve(*args: Any) -> tuple[bool, str]:
        asked.append(args)
        return args[4][0], args[4][1]

    replay = ReplayLayer(CassettePlayer(path), "prog#w", approve)
    call = make_call()
    inner = Inner("never")
    reply = asyncio.run(replay(Attempt(call, 1), inner))
    assert (reply.output, reply.usage) == ({"n": 1}, {"input_tokens": 5}) and inner.seen == []
    assert call.tool_calls == [{"tool": "refund", "arguments": {"id": 1}, "result": {"ok": True},
                                "approval": {"answer": True, "by": "replayed"}}]
    assert [a[:2] for a in asked] == [("writer", "refund")] and asked[0][4] == (True, "replayed")
    with pytest.raises(AgentInvocationError, match="down"):
        asyncio.run(replay(Attempt(make_call(), 2), inner))


def test_a_miss_names_the_cassette(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")

    async def approve(*args: Any) -> tuple[bool, str]:
        raise AssertionError("no one is asked")

    with pytest.raises(AgentInvocationError, match=r"empty\.jsonl has no answer"):
        asyncio.run(ReplayLayer(CassettePlayer(path), "s", approve)(Attempt(make_call(), 1), Inner("never")))


def test_a_new_run_replaces_the_scopes_old_answers(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    recorder = CassetteRecorder(path)
    asyncio.run(RecordLayer(recorder, "s")(Attempt(make_call(), 1), Inner("first run")))
    asyncio.run(RecordLayer(recorder, "s")(Attempt(make_call(), 1), Inner("second run")))
    assert [e["output"] for e in recorder.entries] == ["second run"]

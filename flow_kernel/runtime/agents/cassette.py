"""Cassettes in the attempt chain: replaying recorded answers, or recording live ones
(the file format and its keys: runtime/durable/cassette.py).

An attempt's cassette key is the run's scope, the agent, the call's label and occurrence,
and the attempt's number; its identity (what a recorded entry's hash must match) is the
compiled prompt with the digests of the agent's prompt files.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from flow_kernel.errors import FlowError
from flow_kernel.runtime.agents.attempt import Attempt, Invoke
from flow_kernel.runtime.durable.cassette import CassettePlayer, CassetteRecorder, Key
from flow_kernel.runtime.providers.base import ProviderReply

# Shows a tool call's recorded approval again: (agent, tool, arguments, the call's payload,
# (the recorded answer, "replayed")) -> (allowed, who decided how). No one is asked.
ReplayedApproval = Callable[[str, str, dict[str, Any], dict[str, Any], tuple[bool, str]], Awaitable[tuple[bool, str]]]


def cassette_key(scope: str, attempt: Attempt) -> Key:
    call = attempt.call
    return scope, call.spec.name, call.label, call.occurrence, attempt.number


class ReplayLayer:
    """Answers every attempt from the cassette `player` (a miss is `agent-invocation`). The
    tool calls it recorded are shown again as they were made, not made again; a recorded
    approval is shown through `approve` as replayed, not as who decided then."""

    def __init__(self, player: CassettePlayer, scope: str, approve: ReplayedApproval) -> None:
        self.player = player
        self.scope = scope
        self.approve = approve

    async def __call__(self, attempt: Attempt, invoke: Invoke) -> ProviderReply:
        call = attempt.call
        replayed = self.player.answer(cassette_key(self.scope, attempt), call.identity)
        for record in replayed.tool_calls:
            if not isinstance(record, dict):
                continue
            approval = record.get("approval")
            if isinstance(approval, dict):
                allowed, how = await self.approve(call.spec.name, str(record.get("tool")),
                                                  dict(record.get("arguments") or {}), call.payload,
                                                  (approval.get("answer") is True, "replayed"))
                record = {**record, "approval": {"answer": allowed, "by": how}}
            call.tool_calls.append(record)
        return replayed


class RecordLayer:
    """Writes each attempt's answer or failure to the cassette `recorder`, with the tool
    calls as the host saw them (approvals included). `run` stands for this run: its first
    answer replaces what the cassette held for the scope."""

    def __init__(self, recorder: CassetteRecorder, scope: str) -> None:
        self.recorder = recorder
        self.scope = scope
        self.run = object()

    async def __call__(self, attempt: Attempt, invoke: Invoke) -> ProviderReply:
        call = attempt.call
        key = cassette_key(self.scope, attempt)
        before = len(call.tool_calls)
        try:
            reply = await invoke(attempt)
        except FlowError as exc:
            self.recorder.write(key, call.identity, error=exc, run=self.run)
            raise
        self.recorder.write(key, call.identity, reply.output, usage=reply.usage, tool_calls=call.tool_calls[before:],
                            run=self.run)
        return reply

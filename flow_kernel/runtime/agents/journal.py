"""Answers from the run's journal: the attempt layer of a durable run.

An attempt that an earlier execution of the run made is answered from the journal, its
tool calls shown as they were made, not made again. An attempt a provider answers live is
journaled (on the disk before the sandbox hears the answer), and so is a provider's
`agent-invocation` failure: a resumed run does not ask again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flow_kernel.errors import FlowError
from flow_kernel.runtime.agents.attempt import Attempt, Invoke
from flow_kernel.runtime.agents.calls import AgentCall
from flow_kernel.runtime.durable.checkpoint import RunCheckpoint, position
from flow_kernel.runtime.durable.journal import digest
from flow_kernel.runtime.providers.base import KeepsPlace, Provider, ProviderReply


def attempt_request(call: AgentCall, repair_of: dict[str, Any] | None) -> str:
    """What identifies a provider attempt's request in the journal."""
    return digest([call.spec.name, call.provider, call.model, call.identity, repair_of])


class JournalLayer:
    """Answers attempts from `checkpoint` and journals live ones. `providers` are the run's:
    a provider that keeps its place among a call's attempts (`KeepsPlace`: the scripted
    one) is told of each attempt the journal answers, as the live attempt moved it."""

    def __init__(self, checkpoint: RunCheckpoint, providers: Mapping[str, Provider]) -> None:
        self.checkpoint = checkpoint
        self.providers = providers

    async def __call__(self, attempt: Attempt, invoke: Invoke) -> ProviderReply:
        call = attempt.call
        where = position("agent", call.payload, attempt.number)
        request = attempt_request(call, attempt.repair_of)
        record = self.checkpoint.replayed(where, request)
        if record is not None:
            return self._answer(call, record)
        before = len(call.tool_calls)
        try:
            reply = await invoke(attempt)
        except FlowError as exc:
            if attempt.live and exc.code == "agent-invocation":  # the provider's answer: not asked again
                self.checkpoint.done(where, request, error=exc)
            raise
        if attempt.live:
            self.checkpoint.done(where, request, {"output": reply.output, "usage": reply.usage,
                                                  "tool_calls": call.tool_calls[before:]})
        return reply

    def _answer(self, call: AgentCall, record: dict[str, Any]) -> ProviderReply:
        """The journaled reply (or error) of an attempt; its tool calls added to the call's."""
        provider = self.providers.get(call.provider)
        if isinstance(provider, KeepsPlace):
            provider.passed(call.spec.name, str(call.payload.get("prompt")))
        if "error" in record:
            raise FlowError.from_dto(dict(record["error"]))
        result = record.get("result")
        reply: dict[str, Any] = result if isinstance(result, dict) else {}
        usage, tool_calls = reply.get("usage"), reply.get("tool_calls")
        call.tool_calls.extend(t for t in (tool_calls if isinstance(tool_calls, list) else []) if isinstance(t, dict))
        return ProviderReply(reply.get("output"), dict(usage) if isinstance(usage, dict) else {})

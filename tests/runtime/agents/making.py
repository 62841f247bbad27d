"""Agent calls and attempts for the layer tests, without a sandbox or a host."""

from __future__ import annotations

from typing import Any

from flow_kernel.lang.compiler import compile_source
from flow_kernel.lang.prices import Price
from flow_kernel.runtime.agents import AgentCall, Attempt
from flow_kernel.runtime.agents.calls import agent_spec
from flow_kernel.runtime.providers.base import ProviderReply
from flow_kernel.source import SourceFile

PROGRAM = 'agent writer { model: "scripted", script: ["one", "two", "three"] }\n'


def make_call(provider: str = "openai", model: str = "gpt-test", price: Price | None = None,
              frame: str = "f") -> AgentCall:
    compiled = compile_source(SourceFile("layers.flow", PROGRAM))
    entry = compiled.check.decls["writer"]
    spec = agent_spec(entry.node, [], entry.agent)
    payload = {"agent": "writer", "frame": frame, "prompt": "write", "call": "c1", "order": [1]}
    call = AgentCall(spec, payload, "writer@1:1", 1, {"type": "string"}, provider, model, "system text",
                     "write", [], identity="write")
    call.price = price
    return call


class Inner:
    """The rest of the chain: answers with `replies` in turn (an exception is raised), and
    counts the attempts that reached it."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.seen: list[Attempt] = []

    async def __call__(self, attempt: Attempt) -> ProviderReply:
        self.seen.append(attempt)
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply if isinstance(reply, ProviderReply) else ProviderReply(reply)

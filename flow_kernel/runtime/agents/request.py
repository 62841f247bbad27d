"""From here on an attempt is live: the layer that turns it into a provider request.

The provider comes from the run's providers, else from the one provider table (built on
first use, its client package checked first). The request carries the compiled prompts,
the output contract, a repair's last output and errors, the agent's temperature, the
call's tools (each use approved when the tool asks for it, and journaled in a durable
run), a way to ask the operator (an A2A agent's input-required) and the output cap of the
attempt's cost reservation.

The tool calls of one attempt are counted here, for every provider alike: the call's
`max_tool_calls` (else the agent's, else `MAX_TOOL_CALLS`, 8) is how many it may make, and
one more fails the attempt with `agent-invocation` naming the limit, before that tool runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from flow_kernel.errors import FlowEvaluationError
from flow_kernel.lang import ast
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.runtime.agents.attempt import Attempt, Invoke
from flow_kernel.runtime.agents.calls import AgentCall
from flow_kernel.runtime.config import FlowConfig
from flow_kernel.runtime.durable.checkpoint import RunCheckpoint, position
from flow_kernel.runtime.durable.journal import digest
from flow_kernel.runtime.providers.base import (
    MAX_TOOL_CALLS,
    Provider,
    ProviderReply,
    ProviderRequest,
    ToolCaller,
    too_many_tool_calls,
)
from flow_kernel.runtime.providers.table import PROVIDERS
from flow_kernel.runtime.remote.mcp import McpConnections
from flow_kernel.runtime.tools import ToolRegistry, call_tool

# Asks the operator about one call of an approval-gated tool: (agent, tool, arguments, the
# agent call's payload for the event's span, a replayed decision or None) -> (allowed, who
# decided how); by keyword, `key`: the tool call's place in the run, where its decision is
# journaled. A replayed decision is shown again (events), not asked again.
ToolApprover = Callable[..., Awaitable[tuple[bool, str]]]
# A question from the model's side mid-call, as the program's own `ask` payload -> the answer.
OperatorAsk = Callable[[dict[str, Any]], Awaitable[str]]


def max_tool_calls(options: Mapping[str, Any], fields: Mapping[str, Any]) -> int:
    """How many tool calls each attempt of a call may make: the call's `max_tool_calls`
    option, else the agent's field, else `MAX_TOOL_CALLS`. The checker holds a constant to a
    positive integer (F4037); a computed one that is not is an `evaluation` error."""
    value = options.get("max_tool_calls")
    if value is None:
        value = fields.get("max_tool_calls", MAX_TOOL_CALLS)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise FlowEvaluationError(f"`max_tool_calls` must be a positive integer, not {value!r}",
                                  details={"max_tool_calls": value})
    return value


class ToolUse:
    """How a provider uses a call's tools: `check` and `registry` say what a tool is, `mcp`
    lends the tools of MCP servers, `approve` asks the operator, `checkpoint` (a durable
    run) answers a tool call an earlier execution made."""

    def __init__(self, check: CheckResult, registry: ToolRegistry, mcp: McpConnections, approve: ToolApprover,
                 checkpoint: RunCheckpoint | None = None) -> None:
        self.check = check
        self.registry = registry
        self.mcp = mcp
        self.approve = approve
        self.checkpoint = checkpoint

    def caller(self, call: AgentCall, attempt_number: int) -> ToolCaller:
        """The provider's way to call one of the call's tools during attempt `attempt_number`:
        at most `call.max_tool_calls` of them (one more raises `agent-invocation` before it
        runs), approval, the journal, and the record in the call's `tool_calls`."""
        agent = call.spec.name
        decisions: list[dict[str, Any]] = []
        used = [0]  # the attempt's tool calls so far (journal keys)

        async def use_tool(tool: str, arguments: dict[str, Any]) -> Any:
            if used[0] >= call.max_tool_calls:
                raise too_many_tool_calls(agent, call.max_tool_calls)
            decisions.clear()
            used[0] += 1
            where = position("tool", call.payload, attempt_number, used[0])

            async def approve(tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
                answer, how = await self.approve(agent, tool, arguments, call.payload, None, key=where + ":approval")
                decisions.append({"answer": answer, "by": how})
                return answer, how

            async def live() -> Any:
                return await call_tool(self.check, self.registry, call.tools, tool, arguments, approve, self.mcp)

            result = await (self.checkpoint.effect(where, digest([tool, arguments]), live) if self.checkpoint is not None
                            else live())
            record: dict[str, Any] = {"tool": tool, "arguments": arguments, "result": result}
            if decisions:
                record["approval"] = decisions[0]
            call.tool_calls.append(record)
            return result

        return use_tool


class RequestLayer:
    """Marks the attempt live, gives it its provider (from `providers`, else built from the
    table for `config` and the program's `agents`, and kept there) and its request."""

    def __init__(self, providers: MutableMapping[str, Provider], config: FlowConfig,
                 agents: Mapping[str, ast.AgentDecl], tools: ToolUse, ask_operator: OperatorAsk | None = None) -> None:
        self.providers = providers
        self.config = config
        self.agents = agents
        self.tools = tools
        self.ask_operator = ask_operator

    def __call__(self, attempt: Attempt, invoke: Invoke) -> Awaitable[ProviderReply]:
        attempt.live = True
        call = attempt.call
        provider = self.providers.get(call.provider)
        if provider is None:
            provider = self.providers[call.provider] = PROVIDERS[call.provider].make_for(self.config, self.agents)
        temperature = call.spec.fields.get("temperature")
        attempt.provider = provider
        attempt.request = ProviderRequest(
            call.spec.name, call.model, call.system, call.prompt, call.schema, attempt.repair_of,
            float(temperature) if isinstance(temperature, (int, float)) else None, tuple(call.tools),
            self.tools.caller(call, attempt.number) if call.tools else None, call_prompt=str(call.payload.get("prompt")),
            ask_operator=self._asker(call), max_output_tokens=call.output_cap, max_tool_calls=call.max_tool_calls)
        return invoke(attempt)

    def _asker(self, call: AgentCall) -> Callable[[str, list[str] | None], Awaitable[str]] | None:
        """The operator, for a question the provider's side asks during this call."""
        ask = self.ask_operator
        if ask is None:
            return None

        async def asking(question: str, choice: list[str] | None) -> str:
            return await ask({**call.payload, "question": f"`{call.spec.name}` asks: {question}", "choice": choice})

        return asking

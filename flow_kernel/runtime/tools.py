"""Tools (language.md §4.1): Python functions registered on the session, called by agents
through the provider's tool loop, never by Flow code.

A tool's argument and result schemas come from its Flow `tool` declaration, so the model
sees exactly the contract the checker checked. What the model sends is checked against
it before the function runs, and what the function returns after; every problem —
bad arguments, an exception, a result that breaks the contract, a tool the call was not
given — goes back to the model as `{"error": …}` so that it can correct itself, and is
listed in the call's trace. `requires approval` tools ask the operator first; a denial
goes back as `{"denied": true, "reason": …}` and the run continues.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any

from flow_kernel.lang import ast
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.runtime.providers.base import ToolSpec
from flow_kernel.runtime.remote.mcp import (
    McpConnections,
    McpUnavailable,
    needs_approval,
    split_source,
)
from flow_kernel.runtime.validation import schema_errors

ToolFunction = Callable[..., Any]
# Asks the operator about one gated tool call: (tool, arguments) -> (allowed, who decided how).
Approver = Callable[[str, dict[str, Any]], Awaitable[tuple[bool, str]]]


class ToolRegistry:
    """The host's tool implementations by name (`Session.tool`), and its policy: when
    `policy` is a set, only the tools in it are ever offered to an agent."""

    def __init__(self, policy: set[str] | None = None) -> None:
        self.functions: dict[str, ToolFunction] = {}
        self.policy = policy

    def register(self, fn: ToolFunction, name: str | None = None) -> ToolFunction:
        tool_name = name or getattr(fn, "__name__", None)
        if not tool_name or not callable(fn):
            raise TypeError("a tool is a named callable")
        self.functions[tool_name] = fn
        return fn

    def __contains__(self, name: object) -> bool:
        return name in self.functions


# Tools registered with `@flow_tool`, shared by the process: the `%%flow` cells of an IPython
# kernel use them all, the Flow kernel's `%tools FILE.py` takes those its file registers.
TOOLS = ToolRegistry()


def flow_tool(fn: ToolFunction | None = None, *, name: str | None = None) -> Any:
    """Register a Python function as a Flow tool: `@flow_tool` or `@flow_tool(name="x")`."""
    if fn is None:
        return lambda f: TOOLS.register(f, name)
    return TOOLS.register(fn, name)


def tool_spec(check: CheckResult, name: str) -> ToolSpec | None:
    entry = check.decls.get(name)
    if entry is None or entry.kind != "tool" or not isinstance(entry.node, ast.ToolDecl):
        return None
    schemas = check.schema_for(name) or {}
    parameters = schemas.get("input")
    return ToolSpec(name, (entry.node.doc or f"The `{name}` tool.").strip(),
                    dict(parameters) if isinstance(parameters, dict) else {},
                    entry.node.requires_approval)


def mcp_source(check: CheckResult, name: str) -> str | None:
    """`from mcp "…"` of a tool declaration: the tool is lent by an MCP server (remote/mcp.py)."""
    entry = check.decls.get(name)
    return entry.node.mcp if entry is not None and isinstance(entry.node, ast.ToolDecl) else None


def narrow(check: CheckResult, agent_tools: list[str], requested: list[str] | None,
           registry: ToolRegistry, mcp: McpConnections | None = None) -> tuple[list[ToolSpec], list[str]]:
    """requested ∩ the agent's ∩ host policy, in the agent's order; and those of them that
    have no implementation on this host (the caller reports them): a Python tool not
    registered, or an MCP tool whose server the configuration does not declare."""
    names = [n for n in agent_tools if (requested is None or n in requested)
             and (registry.policy is None or n in registry.policy)]
    specs: list[ToolSpec] = []
    missing: list[str] = []
    for n in names:
        spec = tool_spec(check, n)
        if spec is None:
            continue
        source = mcp_source(check, n)
        if n in registry if source is None else (mcp is not None and mcp.knows(split_source(source, n)[0])):
            specs.append(spec)
        else:
            missing.append(n)
    return specs, missing


async def call_tool(check: CheckResult, registry: ToolRegistry, allowed: list[ToolSpec], name: str,
                    arguments: dict[str, Any], approver: Approver, mcp: McpConnections | None = None) -> Any:
    """One tool call from the model, as the JSON the model gets back."""
    spec = next((t for t in allowed if t.name == name), None)
    if spec is None:
        return {"error": f"there is no tool `{name}` for this call" +
                (f" (tools: {', '.join(t.name for t in allowed)})" if allowed else "")}
    problems = schema_errors(spec.parameters, arguments)
    if problems:
        return {"error": f"invalid arguments for `{name}`: {'; '.join(problems)}"}
    source = mcp_source(check, name)
    if source is not None:
        return await _call_mcp(check, mcp, spec, source, arguments, approver)
    if spec.requires_approval:
        allowed_now, how = await approver(name, arguments)
        if not allowed_now:
            return {"denied": True, "reason": f"the operator denied this call of `{name}` ({how})"}
    fn = registry.functions[name]
    try:
        if inspect.iscoroutinefunction(fn):
            result = await fn(**arguments)
        else:
            # A plain function may block (files, HTTP): a thread keeps the run's loop, its
            # other agent calls and the kernel's interrupt handling going meanwhile.
            result = await asyncio.to_thread(fn, **arguments)
    except Exception as exc:
        return {"error": f"`{name}` raised {type(exc).__name__}: {exc}"}
    try:
        result = json.loads(json.dumps(result))
    except (TypeError, ValueError):
        return {"error": f"`{name}` returned a value that is not JSON ({type(result).__name__})"}
    return _checked_result(check, name, result)


async def _call_mcp(check: CheckResult, mcp: McpConnections | None, spec: ToolSpec, source: str,
                    arguments: dict[str, Any], approver: Approver) -> Any:
    """A tool lent by an MCP server: its annotations may add an approval (never remove one)."""
    name = spec.name
    server, remote = split_source(source, name)
    if mcp is None:
        return {"error": f"`{name}` is lent by the MCP server `{server}`, which this host does not use"}
    try:
        tool = await mcp.tool(server, remote)
    except McpUnavailable as exc:
        return {"error": str(exc)}
    if needs_approval(mcp.servers[server], tool, spec.requires_approval):
        allowed_now, how = await approver(name, arguments)
        if not allowed_now:
            return {"denied": True, "reason": f"the operator denied this call of `{name}` ({how})"}
    result = await mcp.call(server, remote, arguments)
    if isinstance(result, dict) and set(result) == {"error"}:
        return result
    return _checked_result(check, name, result)


def _checked_result(check: CheckResult, name: str, result: Any) -> Any:
    output_schema = (check.schema_for(name) or {}).get("output")
    if isinstance(output_schema, dict):
        problems = schema_errors(output_schema, result)
        if problems:
            return {"error": f"`{name}` returned a result that breaks its declared type: {'; '.join(problems)}"}
    return result

"""`flow serve FILE --mcp [--http HOST:PORT]`: the file's workflows as MCP tools, with the
official SDK's server (docs/protocols.md).

Each workflow is a tool: its input schema is the workflow's, its description the `##` doc
comment, its result the structured content (a result that is not an object is wrapped as
`{"result": …}`, the output schema saying so). A call is a Flow run in the sandbox with its
journal; its events become progress notifications when the client asked for progress
(`ProgressClock`); a failed run is an `isError` result whose text says `code: message (run
ID)`, with no structured content (the output schema describes results, not errors).
`approve`/`ask` go to the client as elicitation when it declared that capability (approve: a
yes/no form; ask: one text field, or a choice); else the configured operator policy answers,
else the run fails with `operator-unavailable`. A call the client cancels stops its run.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable
from typing import Any, TypeGuard

from flow_kernel.runtime.events.vocabulary import Event
from flow_kernel.runtime.run import RunOutcome
from flow_kernel.serve.common import (
    ServedWorkflow,
    WorkflowHost,
    outcome_error,
    progress_message,
    serve_http,
)
from flow_kernel.serve.door import Door, guarded_app, is_loopback

# How long a cancelled call waits for its run to stop (the sandbox is asked, then killed).
STOP_WAIT = 10.0


def output_schema(workflow: ServedWorkflow) -> tuple[dict[str, Any], bool]:
    """The tool's output schema, and whether results are wrapped in {"result": …} (MCP's
    structured content is an object)."""
    schema = {k: v for k, v in workflow.output_schema.items() if k != "$schema"}
    defs = schema.pop("$defs", None)
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and isinstance(defs, dict) and len(schema) == 1:
        schema = dict(defs.get(ref[len("#/$defs/"):], {}))  # a named type: its definition at the root
    if schema.get("type") == "object":
        return ({**schema, "$defs": defs} if defs else schema), False
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if defs:
        wrapped["$defs"] = defs
    return wrapped, True


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class ProgressClock:
    """The `progress` and `total` of one call's notifications, which MCP requires to increase
    with every notification.

    `emit progress {done, total}` arrives as it is (progress = done, total = total) whenever
    `done` is above the value already sent. Every other event (a stage, an agent call, a
    question, a publish, or a report whose `done` does not go forward) is a tick: the k-th
    tick since the last number sent moves the value k/(k+1) of the way from that number to the
    next whole one (0.5, 0.667, 0.75, … after 0), so ticks never reach a whole `done` still to
    come and a workflow counting items gets its numbers exactly. A tick keeps the last total
    while it stays below it."""

    def __init__(self) -> None:
        self.value: float | None = None
        self.total: float | None = None
        self.anchor = 0.0  # the last number sent as it was (0 before any)
        self.ticks = 0  # ticks since then

    def read(self, event: Event) -> tuple[float, float | None]:
        data = event.get("data") or {}
        done, total = data.get("done"), data.get("total")
        if event.get("type") == "progress":
            if _number(total):
                self.total = float(total)
            if _number(done) and (self.value is None or done > self.value):
                self.value = self.anchor = float(done)
                self.ticks = 0
                return self.value, self.total
        self.ticks += 1
        gap = math.floor(self.anchor) + 1 - self.anchor
        tick = self.anchor + gap * self.ticks / (self.ticks + 1)
        before = self.value if self.value is not None else -math.inf
        self.value = tick if tick > before else math.nextafter(before, math.inf)
        return self.value, (self.total if self.total is not None and self.value < self.total else None)


class _McpChannel:
    """One tool call: its progress notifications (in order, by one sender task) and its
    elicitations."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.clock = ProgressClock()
        self.queue: asyncio.Queue[tuple[float, float | None, str] | None] = asyncio.Queue()
        self.sender = asyncio.create_task(self._send())

    def event(self, event: Event) -> None:
        message = progress_message(event)
        if message is not None:
            self.queue.put_nowait((*self.clock.read(event), message))

    async def _send(self) -> None:
        while (notification := await self.queue.get()) is not None:
            try:
                await self.ctx.session.report_progress(*notification)
            except Exception:  # a client gone mid-call: the run's result still matters to the journal
                return

    async def finish(self) -> None:
        self.queue.put_nowait(None)
        try:
            await asyncio.wait_for(self.sender, 5)
        except (TimeoutError, asyncio.CancelledError):
            self.sender.cancel()

    def _can_elicit(self) -> bool:
        session = self.ctx.session
        capabilities = session.client_capabilities
        return bool(capabilities is not None and capabilities.elicitation is not None and session.can_send_request)

    async def approve(self, question: str, details: Any) -> bool | None:
        if not self._can_elicit():
            return None
        message = question if details is None else f"{question}\n\n{json.dumps(details, ensure_ascii=False)[:2000]}"
        schema = {"type": "object", "properties": {"approve": {"type": "boolean", "title": "Approve"}},
                  "required": ["approve"]}
        result = await self.ctx.session.elicit_form(message, schema, related_request_id=self.ctx.request_id)
        return result.action == "accept" and bool((result.content or {}).get("approve"))

    async def ask(self, question: str, choice: list[str] | None) -> str | None:
        if not self._can_elicit():
            return None
        field: dict[str, Any] = {"type": "string", "title": "Answer"}
        if choice:
            field["enum"] = list(choice)
        schema = {"type": "object", "properties": {"answer": field}, "required": ["answer"]}
        result = await self.ctx.session.elicit_form(question, schema, related_request_id=self.ctx.request_id)
        answer = (result.content or {}).get("answer") if result.action == "accept" else None
        return answer if isinstance(answer, str) else None


def build_server(host: WorkflowHost, name: str) -> Any:
    """The SDK's low-level server, whose tools are `host`'s workflows."""
    import mcp.types as types
    from mcp.server import Server

    def tool(workflow: ServedWorkflow) -> Any:
        schema, _ = output_schema(dict_copy(workflow))
        return types.Tool(name=workflow.name, description=workflow.description, input_schema=workflow.input_schema,
                          output_schema=schema)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[tool(w) for w in host.workflows.values()])

    async def call_tool(ctx: Any, params: Any) -> Any:
        workflow = host.workflows.get(params.name)
        if workflow is None:
            return error_result(f"no workflow `{params.name}` in this server (it has: {', '.join(host.workflows)})")
        channel = _McpChannel(ctx)
        try:
            outcome = await run_to_its_end(host.run(workflow.name, dict(params.arguments or {}), channel))
        finally:
            await channel.finish()
        if outcome.error is not None:
            problem = outcome_error(outcome)
            return error_result(f"{problem['code']}: {problem['message']} (run {outcome.run_id})",
                                {"flow/error": problem, "flow/run": outcome.run_id})
        _, wrapped = output_schema(dict_copy(workflow))
        structured = {"result": outcome.result} if wrapped else outcome.result
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(outcome.result, ensure_ascii=False))],
                                    structured_content=structured)

    return Server(name, version=_version(), instructions="Each tool runs a Flow workflow in a sandbox.",
                  on_list_tools=list_tools, on_call_tool=call_tool)


def error_result(text: str, meta: dict[str, Any] | None = None) -> Any:
    """A failed call: the words in `content`, no structured content (a client checks that
    against the tool's output schema, which describes results); the code and run in `_meta`."""
    import mcp.types as types

    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True, _meta=meta)


async def run_to_its_end(run: Awaitable[RunOutcome]) -> RunOutcome:
    """Await a run in a task of its own; when the call is cancelled (the client's
    `notifications/cancelled`, or its stream closed), cancel the run once and wait, shielded,
    until it has stopped.

    The SDK cancels a call through an anyio cancel scope, which cancels the handler again at
    every await: awaited there, the run's own stopping (asking the sandbox to stop, killing it,
    collecting its reply) would be cut short and leave tasks whose errors nobody retrieves."""
    import anyio

    task = asyncio.ensure_future(run)
    task.add_done_callback(_retrieve)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.wait({task}, timeout=STOP_WAIT)
        raise


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark a finished task's error as seen (its caller may have been cancelled meanwhile)."""
    if not task.cancelled():
        task.exception()


def dict_copy(workflow: ServedWorkflow) -> ServedWorkflow:
    """`output_schema` moves `$defs`: work on a copy of the workflow's schemas."""
    return ServedWorkflow(workflow.name, workflow.description, json.loads(json.dumps(workflow.input_schema)),
                          json.loads(json.dumps(workflow.output_schema)))


def _version() -> str:
    from flow_kernel.version import VERSION

    return VERSION


async def serve_stdio(host: WorkflowHost, name: str) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(host, name)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def transport_security(door: Door) -> Any:
    """The SDK's own Host/Origin check, for the address actually bound (the SDK turns it on by
    itself for 127.0.0.1, localhost and ::1 only, and then lets in every port of theirs): on
    loopback the door's hosts and origins exactly; elsewhere Host is not checked (the token is
    the door) and the door's Origin guard stands alone."""
    from mcp.server.transport_security import TransportSecuritySettings

    if not is_loopback(door.host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=sorted(door.own_hosts()),
                                     allowed_origins=sorted(door.origins()))


async def serve_streamable_http(host: WorkflowHost, name: str, door: Door, ready: Any = None) -> None:
    server = build_server(host, name)
    app = server.streamable_http_app(host=door.host, transport_security=transport_security(door))
    await serve_http(guarded_app(app, door), door.host, door.port, ready, host.bounds)

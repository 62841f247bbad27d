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

Beyond tools: the prompt files of the `prompts` folder beside the served file as prompts
(mcp_prompts.py), the runs each caller started as resources `flow://runs/{id}` (mcp_runs.py),
`logging/setLevel` (a connection that set a level gets its runs' events at or above it as
`notifications/message`), and `completion/complete` for enum-typed workflow parameters and
the caller's run ids.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import warnings
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
from flow_kernel.serve.mcp_logging import (
    EVENT_LEVELS,
    LogLevels,
    caller,
    connection_of,
    is_modern,
    log_text,
)
from flow_kernel.serve.mcp_prompts import PromptArgumentsError, read_prompts
from flow_kernel.serve.mcp_runs import RUN_TEMPLATE, ServedRuns

# How long a cancelled call waits for its run to stop (the sandbox is asked, then killed).
STOP_WAIT = 10.0
MAX_COMPLETIONS = 100  # MCP's bound on one completion's values
RESOURCE_NOT_FOUND = -32002  # MCP's error code for a resource that is not there


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
    """One tool call: its progress and log notifications (in order, by one sender task) and
    its elicitations."""

    def __init__(self, ctx: Any, levels: LogLevels | None = None, logger: str = "flow") -> None:
        self.ctx = ctx
        self.clock = ProgressClock()
        self.levels = levels or LogLevels()
        self.connection = connection_of(ctx)
        self.modern = is_modern(getattr(ctx, "protocol_version", None))
        self.logger = logger
        self.queue: asyncio.Queue[tuple[str, tuple[Any, ...]] | None] = asyncio.Queue()
        self.sender = asyncio.create_task(self._send())

    def event(self, event: Event) -> None:
        message = progress_message(event)
        if message is not None:
            self.queue.put_nowait(("progress", (*self.clock.read(event), message)))
        level = EVENT_LEVELS.get(str(event.get("type")))
        text = log_text(event) if level is not None else None
        if level is not None and text is not None:
            self.log(level, text)

    def log(self, level: str, text: str) -> None:
        """A `notifications/message` for this call, when its client asked for `level`: with
        `logging/setLevel` on a handshake-era connection; on a 2026-07-28+ one by the call's
        own `_meta` opt-in, which the SDK applies as it sends."""
        if self.modern or self.levels.wants(self.connection, level):
            self.queue.put_nowait(("log", (level, text)))

    async def _send(self) -> None:
        while (notification := await self.queue.get()) is not None:
            kind, args = notification
            try:
                if kind == "progress":
                    await self.ctx.session.report_progress(*args)
                else:
                    await self._log_message(*args)
            except Exception:  # a client gone mid-call: the run's result still matters to the journal
                return

    def _log_message(self, level: str, text: str) -> Awaitable[None]:
        """The SDK's send of one `notifications/message`. The SDK marks the logging capability
        deprecated (as of protocol 2026-07-28, which still carries it per request) and warns
        when the send is called; this server keeps serving clients that ask for it, so the
        warning is silenced at this one call, which warns as it is made, not as it is awaited."""
        from mcp.shared.exceptions import MCPDeprecationWarning

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            sent: Awaitable[None] = self.ctx.session.send_log_message(
                level, text, logger=self.logger, related_request_id=self.ctx.request_id)
        return sent

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
    """The SDK's low-level server: `host`'s workflows as tools, the prompt files beside the
    served file as prompts, the runs each caller started as resources, logging and completion."""
    import mcp.types as types
    from mcp.server import Server
    from mcp.shared.exceptions import MCPError

    prompts, skipped = read_prompts(host.session.directory)
    for problem in skipped:
        print(f"flow serve: prompt left out: {problem}", file=sys.stderr)
    runs = ServedRuns()
    levels = LogLevels()

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
        channel = _McpChannel(ctx, levels, logger=f"flow/{workflow.name}")
        try:
            outcome = await run_to_its_end(host.run(workflow.name, dict(params.arguments or {}), channel))
            runs.add(caller(ctx), workflow.name, outcome)
            if outcome.error is not None:
                channel.log("error", f"{outcome.error.code}: {outcome.error.message} (run {outcome.run_id})")
        finally:
            await channel.finish()
        if outcome.error is not None:
            problem = outcome_error(outcome)
            return error_result(f"{problem['code']}: {problem['message']} (run {outcome.run_id})",
                                {"flow/error": problem, "flow/run": outcome.run_id})
        _, wrapped = output_schema(dict_copy(workflow))
        structured = {"result": outcome.result} if wrapped else outcome.result
        main = ([] if (primary := outcome.primary) is None else  # the run's primary artifact first, its main content
                [types.TextContent(text=primary["text"] if "text" in primary else json.dumps(primary["json"], ensure_ascii=False),
                                   _meta={"flow/primary": primary["name"]})])
        return types.CallToolResult(content=[*main, types.TextContent(text=json.dumps(outcome.result, ensure_ascii=False))],
                                    structured_content=structured)

    async def list_prompts(ctx: Any, params: Any) -> Any:
        return types.ListPromptsResult(prompts=[
            types.Prompt(name=p.name, description=p.description,
                         arguments=[types.PromptArgument(name=a, required=True) for a in p.arguments])
            for p in prompts.values()])

    async def get_prompt(ctx: Any, params: Any) -> Any:
        prompt = prompts.get(params.name)
        if prompt is None:
            raise MCPError(types.INVALID_PARAMS, f"no prompt `{params.name}` in this server")
        try:
            text = prompt.render(params.arguments)
        except PromptArgumentsError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        return types.GetPromptResult(description=prompt.description, messages=[
            types.PromptMessage(role="user", content=types.TextContent(text=text))])

    async def list_resources(ctx: Any, params: Any) -> Any:
        return types.ListResourcesResult(resources=[
            types.Resource(uri=r.uri, name=r.run_id, title=f"{r.workflow}: {r.status}", mime_type="text/plain",
                           description=f"A run of the workflow `{r.workflow}`, {r.status}: its summary, result "
                                       "and artifacts")
            for r in runs.of(caller(ctx))])

    async def list_templates(ctx: Any, params: Any) -> Any:
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            name="run", uri_template=RUN_TEMPLATE, mime_type="text/plain",
            description="A run this server started for you: its summary, result and artifacts")])

    async def read_resource(ctx: Any, params: Any) -> Any:
        run = runs.get(caller(ctx), str(params.uri))
        if run is None:  # not there, or another caller's: the same answer
            raise MCPError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": str(params.uri)})
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=c.uri, mime_type=c.mime_type, text=c.text) for c in run.contents])

    async def set_level(ctx: Any, params: Any) -> Any:
        levels.set(connection_of(ctx), str(params.level))
        return types.EmptyResult()

    async def complete(ctx: Any, params: Any) -> Any:
        ref, argument = params.ref, params.argument
        offered: list[str] = []
        if ref.type == "ref/prompt" and ref.name not in prompts and ref.name in host.workflows:
            offered = enum_values(host.workflows[ref.name].input_schema, argument.name)
        elif ref.type == "ref/resource" and ref.uri == RUN_TEMPLATE and argument.name == "id":
            offered = [r.run_id for r in runs.of(caller(ctx))]
        matches = [value for value in offered if value.startswith(argument.value)]
        return types.CompleteResult(completion=types.Completion(
            values=matches[:MAX_COMPLETIONS], total=len(matches), has_more=len(matches) > MAX_COMPLETIONS))

    with warnings.catch_warnings():  # logging/setLevel: deprecated by a protocol version this server does not speak
        warnings.simplefilter("ignore")
        return Server(name, version=_version(), instructions="Each tool runs a Flow workflow in a sandbox.",
                      on_list_tools=list_tools, on_call_tool=call_tool, on_list_prompts=list_prompts,
                      on_get_prompt=get_prompt, on_list_resources=list_resources,
                      on_list_resource_templates=list_templates, on_read_resource=read_resource,
                      on_set_logging_level=set_level, on_completion=complete)


def enum_values(input_schema: dict[str, Any], parameter: str) -> list[str]:
    """The string values a workflow's parameter may take when its type is an enumeration
    (directly, through a named type, or optional); [] for any other parameter."""
    defs = input_schema.get("$defs") or {}
    schema = (input_schema.get("properties") or {}).get(parameter)
    found: list[str] = []
    pending = [schema]
    while pending and len(found) < 10_000:
        node = pending.pop(0)
        if not isinstance(node, dict):
            continue
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            pending.append(defs.get(ref[len("#/$defs/"):]))
        found.extend(v for v in node.get("enum") or [] if isinstance(v, str) and v not in found)
        if "const" in node and isinstance(node["const"], str) and node["const"] not in found:
            found.append(node["const"])
        pending.extend(node.get("anyOf") or [])
        pending.extend(node.get("oneOf") or [])
    return found


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

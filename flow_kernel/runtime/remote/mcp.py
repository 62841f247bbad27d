"""MCP servers lending tools to agents (docs/protocols.md), with the official `mcp` SDK's client.

A program names a lent tool with a Flow signature, `tool search(query: string) -> any from mcp
"docs"`, so the checker types it like any tool and the model sees that contract; the server
is one the configuration declares (`[mcp.docs]`, runtime/remote/config.py), which applies only
when the person granted it. One run opens a server on its first call (a child over stdio, or
streamable HTTP) and closes it when the run ends (`McpConnections.aclose`).

The server's annotations are untrusted hints: `destructiveHint` true or absent makes a call ask
the operator first unless the person listed the tool under `no_approval`; they never take away
an approval the declaration asks for. Every failure — the server does not start, has no such
tool, raises, answers `isError`, takes longer than `timeout_ms` — goes back to the model as
`{"error": …}` like a Python tool's (runtime/tools.py).

The SDK is imported only when a server is used: it is the `protocols` extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flow_kernel.runtime.remote.config import McpServerSettings

if TYPE_CHECKING:
    from mcp import Client

EXTRA = "protocols"  # pip install 'flow-kernel[protocols]'
# `command = ["{python}", "server.py"]`: the Python Flow runs in (which has the MCP SDK).
PYTHON = "{python}"


class McpUnavailable(Exception):
    """A server that could not be used; the message says why, for the model or the person."""


def split_source(source: str, tool: str) -> tuple[str, str]:
    """`"docs"` -> ("docs", the Flow tool's name); `"docs/get-page"` -> ("docs", "get-page")."""
    server, slash, remote = source.partition("/")
    return server, (remote if slash and remote else tool)


@dataclass(frozen=True)
class RemoteTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    destructive: bool | None  # annotations.destructiveHint as the server said it (None: absent)
    read_only: bool | None


def needs_approval(settings: McpServerSettings, tool: RemoteTool, declared: bool) -> bool:
    """Whether a call asks the operator: the declaration's `requires approval` always does; a
    tool the server does not say is harmless (`destructiveHint` true or absent) does unless the
    person's configuration lists it under `no_approval`."""
    if declared:
        return True
    return tool.destructive is not False and tool.name not in settings.no_approval


def _remote_tool(tool: Any) -> RemoteTool:
    annotations = getattr(tool, "annotations", None)
    return RemoteTool(tool.name, tool.description or "", dict(tool.input_schema or {}),
                      dict(tool.output_schema) if tool.output_schema else None,
                      getattr(annotations, "destructive_hint", None), getattr(annotations, "read_only_hint", None))


def result_value(result: Any) -> Any:
    """A `CallToolResult` as the JSON the model gets: its structured content, else its text
    (parsed when it is JSON), an error as `{"error": …}`."""
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    others = [{"type": getattr(block, "type", "?")} for block in result.content if getattr(block, "type", None) != "text"]
    if result.is_error:
        return {"error": "; ".join(texts) or "the tool reported an error"}
    if result.structured_content is not None:
        return result.structured_content
    values: list[Any] = []
    for text in texts:
        try:
            values.append(json.loads(text))
        except ValueError:
            values.append(text)
    values.extend(others)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _client(settings: McpServerSettings, folder: Path | None, closing: contextlib.AsyncExitStack) -> Client:
    """The SDK's client for one server; what it opens besides (the child's stderr sink, the
    HTTP client) is closed by `closing` when the connection ends."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import get_default_environment, stdio_client

    if settings.command:
        executable = sys.executable if settings.command[0] == PYTHON else settings.command[0]
        # The child gets the SDK's short list of safe variables (PATH, HOME, …), never the
        # person's whole environment with its API keys; its stderr is not the kernel's.
        params = StdioServerParameters(command=executable, args=list(settings.command[1:]),
                                       env=get_default_environment(),
                                       cwd=str(Path(folder or ".") / settings.cwd) if settings.cwd else
                                       (str(folder) if folder else None))
        errlog = closing.enter_context(open(os.devnull, "w"))  # noqa: SIM115 - closed with the connection
        return Client(stdio_client(params, errlog=errlog), read_timeout_seconds=settings.timeout_ms / 1000)
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {}
    if settings.token_env:
        token = os.environ.get(settings.token_env)
        if not token:
            raise McpUnavailable(f"the MCP server `{settings.name}` needs a token in ${settings.token_env}, "
                                 "which is not set")
        headers["Authorization"] = f"Bearer {token}"
    # The SDK's own defaults: a response stream may stay open long after connecting (a slow
    # tool answers on it); each call's bound is `timeout_ms`, applied per request.
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))
    closing.push_async_callback(http.aclose)
    assert settings.url is not None
    return Client(streamable_http_client(settings.url, http_client=http),
                  read_timeout_seconds=settings.timeout_ms / 1000)


class _Connection:
    """One open server for one run. The SDK's client is an async context (an anyio task
    group) that must be entered and left by the same task, so a task of its own holds it
    open until `close`; calls from the run's other tasks go through the client meanwhile."""

    def __init__(self, settings: McpServerSettings, folder: Path | None) -> None:
        self.settings = settings
        self.folder = folder
        self.tools: dict[str, RemoteTool] = {}
        self.client: Client | None = None
        self._ready: asyncio.Future[None] | None = None
        self._closing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def open(self) -> None:
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._hold(self._ready))
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), self.settings.timeout_ms / 1000)
        except TimeoutError:
            raise McpUnavailable(f"the MCP server `{self.settings.name}` did not start within "
                                 f"{self.settings.timeout_ms} ms") from None

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        try:
            async with contextlib.AsyncExitStack() as closing:
                await self._serve(_client(self.settings, self.folder, closing), ready)
        except McpUnavailable as exc:
            if not ready.done():
                ready.set_exception(exc)
        except Exception as exc:  # the SDK's and the transport's errors, whatever their class
            if not ready.done():
                ready.set_exception(McpUnavailable(f"the MCP server `{self.settings.name}` "
                                                   f"({self.settings.describe()}) did not start: {_why(exc)}"))
        finally:
            self.client = None
            if not ready.done():
                ready.set_exception(McpUnavailable(f"the MCP server `{self.settings.name}` closed"))

    async def _serve(self, client: Client, ready: asyncio.Future[None]) -> None:
        """Connect, list the tools, then hold the connection open until `close`."""
        async with client:
            listed = await client.list_tools()
            tools = list(listed.tools)
            cursor = listed.next_cursor
            for _ in range(100):  # a server that pages forever cannot hang the run
                if not cursor:
                    break
                more = await client.list_tools(cursor=cursor)
                tools += more.tools
                cursor = more.next_cursor
            self.tools = {t.name: _remote_tool(t) for t in tools}
            self.client = client
            ready.set_result(None)
            await self._closing.wait()

    async def close(self) -> None:
        self._closing.set()
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(self._task, 5)
        if self._ready is not None and self._ready.done() and not self._ready.cancelled():
            self._ready.exception()  # retrieved: a server that never started is not "never retrieved"


def _why(exc: BaseException) -> str:
    """The innermost message of an exception group (anyio wraps the transport's)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class McpConnections:
    """The servers of one run, opened on first use."""

    def __init__(self, servers: dict[str, McpServerSettings], folder: Path | None = None) -> None:
        self.servers = servers
        self.folder = folder
        self._open: dict[str, _Connection] = {}

    def knows(self, server: str) -> bool:
        return server in self.servers

    async def _connection(self, server: str) -> _Connection:
        if server not in self.servers:
            raise McpUnavailable(f"no MCP server `{server}` is declared in the configuration ([mcp.{server}])")
        try:
            import mcp  # noqa: F401
        except ImportError:
            raise McpUnavailable(f"the MCP SDK is not installed (pip install 'flow-kernel[{EXTRA}]')") from None
        connection = self._open.get(server)
        if connection is None:
            connection = self._open[server] = _Connection(self.servers[server], self.folder)
        await connection.open()
        return connection

    async def tool(self, server: str, name: str) -> RemoteTool:
        connection = await self._connection(server)
        found = connection.tools.get(name)
        if found is None:
            raise McpUnavailable(f"the MCP server `{server}` has no tool `{name}`"
                                 + (f" (it has: {', '.join(sorted(connection.tools))})" if connection.tools else ""))
        return found

    async def call(self, server: str, name: str, arguments: dict[str, Any]) -> Any:
        """The tool's result as the model gets it; every failure as `{"error": …}`."""
        try:
            connection = await self._connection(server)
        except McpUnavailable as exc:
            return {"error": str(exc)}
        client = connection.client
        if client is None:
            return {"error": f"the MCP server `{server}` has closed"}
        timeout_ms = connection.settings.timeout_ms
        late = {"error": f"`{name}` on the MCP server `{server}` did not answer within {timeout_ms} ms"}
        try:
            # The SDK's own read timeout ends the request and keeps the connection usable (an
            # asyncio cancellation from outside closes it); the outer bound is a backstop.
            result = await asyncio.wait_for(client.call_tool(name, arguments, read_timeout_seconds=timeout_ms / 1000),
                                            timeout_ms / 1000 + 5)
        except TimeoutError:
            return late
        except Exception as exc:  # MCPError, a broken transport, a result the SDK refused
            if "timed out" in str(exc).lower() or "timeout" in type(exc).__name__.lower():
                return late
            return {"error": f"`{name}` on the MCP server `{server}` failed: {_why(exc)}"}
        return result_value(result)

    async def aclose(self) -> None:
        connections, self._open = list(self._open.values()), {}
        for connection in connections:
            await connection.close()


async def probe(settings: McpServerSettings, folder: Path | None = None) -> list[RemoteTool]:
    """Start a server, list its tools, close it (`%mcp`, `flow doctor`). Raises McpUnavailable."""
    connections = McpConnections({settings.name: settings}, folder)
    try:
        connection = await connections._connection(settings.name)
        return list(connection.tools.values())
    finally:
        await connections.aclose()


_JSON_TO_FLOW = {"string": "string", "integer": "int", "number": "number", "boolean": "bool", "null": "null"}


def flow_type(schema: Any) -> str:
    """A JSON Schema as a Flow type, as near as Flow says it (`any` where it cannot)."""
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema and all(isinstance(v, str) for v in schema["enum"]) and schema["enum"]:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _JSON_TO_FLOW:
        return _JSON_TO_FLOW[kind]
    if kind == "array":
        return f"[{flow_type(schema.get('items'))}]"
    if kind == "object" and isinstance(schema.get("properties"), dict) and schema["properties"]:
        required = set(schema.get("required", []))
        fields = [f"{_field(n)}{'' if n in required else '?'}: {flow_type(s)}" for n, s in schema["properties"].items()]
        return "{ " + ", ".join(fields) + " }"
    return "any"


def _field(name: str) -> str:
    return name if name.isidentifier() else json.dumps(name)


def flow_signature(server: str, tool: RemoteTool) -> str:
    """The Flow declaration that names a lent tool, for the person to paste (`%mcp`)."""
    flow_name = tool.name.replace("-", "_").replace(".", "_")
    if not flow_name.isidentifier():
        flow_name = "tool_" + "".join(c if c.isalnum() else "_" for c in tool.name)
    schema = tool.input_schema
    required = set(schema.get("required", [])) if isinstance(schema.get("required"), list) else set()
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    params = ", ".join(f"{n}{'' if n in required else '?'}: {flow_type(s)}" for n, s in (props or {}).items()
                       if n.isidentifier())
    returns = flow_type(tool.output_schema) if tool.output_schema else "any"
    source = server if flow_name == tool.name else f"{server}/{tool.name}"
    return f'tool {flow_name}({params}) -> {returns} from mcp "{source}"'


def _probe_now(settings: McpServerSettings, folder: Path | None) -> list[RemoteTool]:
    """`probe` from synchronous code, even under a running loop (a kernel's): in a thread of its own."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, probe(settings, folder)).result()


def server_report(servers: dict[str, McpServerSettings], folder: Path | None,
                  names: list[str] | None = None) -> list[tuple[str, bool, str, list[str]]]:
    """Each server started and listed: (name, started, how it is reached or why it did not
    start, its tools as Flow declarations with what a call asks). For `%mcp` and `flow doctor`."""
    rows: list[tuple[str, bool, str, list[str]]] = []
    for name in names or sorted(servers):
        settings = servers[name]
        try:
            tools = _probe_now(settings, folder)
        except McpUnavailable as exc:
            rows.append((name, False, str(exc), []))
            continue
        lines = []
        for tool in sorted(tools, key=lambda t: t.name):
            asks = "asks first" if needs_approval(settings, tool, False) else "runs unasked"
            lines.append(f"{flow_signature(name, tool)}    # {asks}")
        count = f"{len(tools)} tool" + ("" if len(tools) == 1 else "s")
        rows.append((name, True, f"{settings.transport}: {settings.describe()}, {count}", lines))
    return rows

"""What the protocol tests share: free loopback ports, a server child that is waited for and
stopped (`flow serve` with the tokens it prints), clients of the served agents that send a
token, and a provider that calls the tools it is told to (the provider loop without a model)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flow_kernel.runtime.providers.base import ProviderReply, ProviderRequest

HERE = Path(__file__).resolve().parent
DOCS_SERVER = HERE.parents[1] / "notebooks" / "docs_server.py"  # the MCP server of gallery lesson 13
PYTHON = sys.executable
FLOW = str(HERE.parents[1] / ".venv" / "bin" / "flow")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}: "
                               f"{process.stderr.read().decode() if process.stderr else ''}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


@contextmanager
def server_process(args: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env={**os.environ, **(env or {})})
    try:
        wait_for_port(port, process)
        yield process
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes], reader: threading.Thread | None = None) -> None:
    """End a server child (politely, then not), and close its stderr once `reader` has read it."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if reader is not None:
        reader.join(5)
    if process.stderr is not None:
        process.stderr.close()


@dataclass
class Served:
    """A `flow serve` child over HTTP: its URL, the main token and each issued one it printed,
    and the lines of its stderr so far."""

    process: subprocess.Popen[bytes]
    url: str
    token: str | None
    issued: dict[str, str] = field(default_factory=dict)
    stderr: list[str] = field(default_factory=list)

    def auth(self, name: str | None = None) -> dict[str, str]:
        """The header a client of principal `name` (the main token's when None) sends."""
        return {"Authorization": f"Bearer {self.issued[name] if name else self.token}"}


@contextmanager
def flow_serve(args: list[str], port: int, issue: list[str] | tuple[str, ...] = (), env: dict[str, str] | None = None,
               path: str = "/") -> Iterator[Served]:
    """`flow ARGS --issue-token NAME…` as a child, once it listens and has printed its tokens."""
    issued = [a for name in issue for a in ("--issue-token", name)]
    process = subprocess.Popen([FLOW, *args, *issued], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
    lines: list[str] = []

    def drain() -> None:  # a full pipe would stop the server
        assert process.stderr is not None
        for raw in process.stderr:
            lines.append(raw.decode(errors="replace").rstrip("\n"))

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        wait_for_port(port, process)
        deadline = time.monotonic() + 30
        while not _banner_complete(lines, issue) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        token = next((line.split("token: ", 1)[1] for line in lines if line.startswith("flow serve: token: ")
                      and "$" not in line), None)  # not "the value of $VAR": --token-env's is not printed
        tokens = {line.split("token for ", 1)[1].split(": ", 1)[0]: line.rsplit(": ", 1)[1]
                  for line in lines if line.startswith("flow serve: token for ")}
        assert set(tokens) == set(issue), lines
        yield Served(process, f"http://127.0.0.1:{port}{path}", token, tokens, lines)
    finally:
        stop(process, reader)


def _banner_complete(lines: list[str], issue: list[str] | tuple[str, ...]) -> bool:
    listening = any(" on http://" in line for line in lines)
    return listening and sum(line.startswith("flow serve: token for ") for line in lines) == len(issue) and (
        any(line.startswith("flow serve: token: ") for line in lines) or any("--no-auth" in line for line in lines))


@asynccontextmanager
async def mcp_client(url: str, headers: dict[str, str], **kw: Any) -> AsyncIterator[Any]:
    """The MCP SDK's client of a streamable HTTP server, connected, sending `headers` (a bearer token)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
                Client(streamable_http_client(url, http_client=http), **kw) as client):
        yield client


@asynccontextmanager
async def a2a_client(url: str, headers: dict[str, str], streaming: bool = True) -> AsyncIterator[Any]:
    """The a2a-sdk client of a served agent, sending `headers` on every request."""
    import httpx
    from a2a.client import ClientConfig, create_client

    async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(60)) as http:
        client = await create_client(url, ClientConfig(streaming=streaming, httpx_client=http))
        async with client:
            yield client


class ToolUser:
    """Calls the tools of its plan in order, then answers with what they returned."""

    def __init__(self, plan: list[tuple[str, dict[str, Any]]]) -> None:
        self.plan = plan
        self.requests: list[ProviderRequest] = []

    async def attempt(self, request: ProviderRequest) -> ProviderReply:
        self.requests.append(request)
        results = []
        for name, arguments in self.plan:
            assert request.call_tool is not None
            results.append(await request.call_tool(name, arguments))
        return ProviderReply(results)

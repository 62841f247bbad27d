"""What the tests of `flow serve`'s bounds, deadlines and shutdown share: the command as a child
(always with `--token-env`, so it needs the same flags whether a credential is required by
default or not), the same command in this process (so that a test can take a guard away),
and the official clients sending the bearer token."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.cli import main
from flow_kernel.serve import a2a as serve_a2a
from flow_kernel.serve import common as serve_common
from flow_kernel.serve import mcp as serve_mcp
from tests.protocols.helpers import free_port, wait_for_port

TOKEN = "bounds-test-token-0123456789"
TOKEN_ENV = "FLOW_SERVE_TEST_TOKEN"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FLOW = str(Path(os.environ.get("VIRTUAL_ENV", Path(__file__).resolve().parents[2] / ".venv")) / "bin" / "flow")


def serve_args(file: Path, mode: str, port: int, *more: str) -> list[str]:
    """`serve FILE --a2a 127.0.0.1:PORT --token-env VAR …` (mode "a2a"), or `--mcp --http …` ("mcp")."""
    address = f"127.0.0.1:{port}"
    modes = ["--a2a", address] if mode == "a2a" else ["--mcp", "--http", address]
    return ["serve", str(file), *modes, "--token-env", TOKEN_ENV, *more]


@dataclass
class Child:
    process: subprocess.Popen[bytes]
    url: str
    lines: list[str] = field(default_factory=list)  # its stderr, as it comes


@contextmanager
def flow_serve_child(file: Path, mode: str, *more: str) -> Iterator[Child]:
    """The real `flow serve` as a child process in FILE's folder, once it listens."""
    port = free_port()
    process = subprocess.Popen([FLOW, *serve_args(file, mode, port, *more)], cwd=file.parent,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env={**os.environ, TOKEN_ENV: TOKEN})
    child = Child(process, f"http://127.0.0.1:{port}" + ("/mcp" if mode == "mcp" else "/"))

    def drain() -> None:  # a full pipe would stop the server
        assert process.stderr is not None
        for raw in process.stderr:
            child.lines.append(raw.decode(errors="replace").rstrip("\n"))

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        wait_for_port(port, process)
        yield child
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        reader.join(5)


class InProcess:
    """`flow serve …` run by `main` in a thread of this process (no signals there), so that a
    test may monkeypatch what it builds; `uvicorn` is its server once it listens."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, file: Path, mode: str, *more: str) -> None:
        monkeypatch.setenv(TOKEN_ENV, TOKEN)
        monkeypatch.chdir(file.parent)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}" + ("/mcp" if mode == "mcp" else "/")
        self.started = threading.Event()
        self.uvicorn: Any = None
        real = serve_common.serve_http

        async def spied(app: Any, host: str, port: int, ready: Any = None, bounds: Any = None) -> None:
            def seen(server: Any) -> None:
                self.uvicorn = server
                self.started.set()

            await real(app, host, port, seen, bounds)

        monkeypatch.setattr(serve_a2a, "serve_http", spied)
        monkeypatch.setattr(serve_mcp, "serve_http", spied)
        argv = serve_args(file, mode, self.port, *more)
        self.thread = threading.Thread(target=main, args=(argv,), daemon=True)
        self.thread.start()
        assert self.started.wait(60), "the server did not start"

    def stop(self) -> None:
        self.uvicorn.should_exit = True
        self.thread.join(30)


@asynccontextmanager
async def a2a(url: str, streaming: bool = False) -> AsyncIterator[Any]:
    """The a2a-sdk client of a served agent, with the bearer token."""
    import httpx
    from a2a.client import ClientConfig, create_client

    async with httpx.AsyncClient(headers=AUTH, timeout=httpx.Timeout(60)) as http:
        client = await create_client(url, ClientConfig(streaming=streaming, httpx_client=http))
        async with client:
            yield client


def a2a_run(workflow: str, arguments: dict[str, Any]) -> Any:
    """A2A `SendMessage` of one workflow run."""
    from a2a.helpers.proto_helpers import new_data_part, new_message
    from a2a.types import Role, SendMessageRequest

    return SendMessageRequest(message=new_message([new_data_part({"workflow": workflow, "input": arguments})],
                                                  role=Role.ROLE_USER))


async def a2a_send(client: Any, workflow: str, arguments: dict[str, Any]) -> Any:
    """The task a blocking send left (completed, failed, or waiting for input)."""
    responses = [r async for r in client.send_message(a2a_run(workflow, arguments))]
    task_id = responses[0].task.id
    from a2a.types import GetTaskRequest

    return await client.get_task(GetTaskRequest(id=task_id))


async def a2a_until(client: Any, task_id: str, states: set[int], seconds: float = 60) -> Any:
    """Poll `GetTask` until the task is in one of `states` (a generous deadline, not a measure)."""
    from a2a.types import GetTaskRequest

    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        task = await client.get_task(GetTaskRequest(id=task_id))
        if task.status.state in states or loop.time() > deadline:
            return task
        await asyncio.sleep(0.1)


@asynccontextmanager
async def mcp(url: str, **kw: Any) -> AsyncIterator[Any]:
    """The MCP SDK's client of a streamable HTTP server, with the bearer token."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (httpx2.AsyncClient(headers=AUTH, timeout=httpx2.Timeout(30, read=300)) as http,
                Client(streamable_http_client(url, http_client=http), **kw) as client):
        yield client


class NeverAnswers:
    """An MCP client's elicitation callback that shows the question and never answers;
    `asked` is set once a question came."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def __call__(self, context: Any, params: Any) -> Any:
        self.asked.set()
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")


def journals(folder: Path) -> list[Path]:
    return sorted((folder / ".flow" / "runs").glob("*.jsonl"))

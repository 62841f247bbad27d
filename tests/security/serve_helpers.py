"""What the tests of `flow serve`'s door share: the server as `flow serve` builds it (its door,
its workflow host, the A2A or MCP app) run in this process, in a thread, so that a test can
take one guard away and show the attack then gets through; and raw JSON-RPC over httpx,
for the requests whose exact answer matters."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx

from flow_kernel.cli import build_parser
from flow_kernel.cli.serve import DEFAULT_KEPT_SECONDS, DEFAULT_KEPT_TASKS, _workflow_host
from flow_kernel.serve import a2a as serve_a2a
from flow_kernel.serve import mcp as serve_mcp
from flow_kernel.serve.a2a_tasks import KeptLimits
from flow_kernel.serve.door import MAIN, open_door

A2A_VERSION = {"A2A-Version": "1.0"}
DEFAULT_KEPT = KeptLimits(DEFAULT_KEPT_TASKS, DEFAULT_KEPT_SECONDS)


class InProcessServer:
    """`flow serve FILE --a2a ADDRESS` (or `--mcp --http ADDRESS`) with the door `open_door`
    builds from the same flags, served by uvicorn in a thread of this process."""

    def __init__(self, served: Path, port: int, *, a2a: bool = True, host: str = "127.0.0.1",
                 issue: tuple[str, ...] = (), no_auth: bool = False, allow_origins: tuple[str, ...] = (),
                 kept: KeptLimits = DEFAULT_KEPT, flags: tuple[str, ...] = ()) -> None:
        address = f"{host}:{port}"
        mode = ["--a2a", address] if a2a else ["--mcp", "--http", address]
        args = build_parser().parse_args(["serve", str(served), *mode, *flags])
        self.door = open_door(host, port, no_auth=no_auth, issue=issue, allow_origins=allow_origins)
        self.workflows = _workflow_host(args)
        self.a2a, self.kept = a2a, kept
        self.host, self.port = host, port
        self.base = f"http://{host}:{port}"
        self.url = self.base + ("/" if a2a else "/mcp")
        self.started = threading.Event()
        self.uvicorn: Any = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.started.wait(30), "the server did not start"

    def token(self, name: str = MAIN) -> str:
        return next(token for token, principal in self.door.principals.items() if principal == name)

    def auth(self, name: str = MAIN) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token(name)}"}

    def _run(self) -> None:
        def ready(server: Any) -> None:
            self.uvicorn = server
            self.started.set()

        async def serve() -> None:
            try:
                if self.a2a:
                    await serve_a2a.serve_a2a(self.workflows, "served", self.door, self.kept, ready)
                else:
                    await serve_mcp.serve_streamable_http(self.workflows, "served", self.door, ready)
            finally:
                await self.workflows.aclose()  # its sandbox, in the loop that started it

        asyncio.run(serve())

    def stop(self) -> None:
        if self.uvicorn is not None:
            self.uvicorn.should_exit = True
        self.thread.join(15)


def rpc(url: str, method: str, params: dict[str, Any], headers: dict[str, str] | None = None,
        timeout: float = 60) -> dict[str, Any]:
    """One A2A 1.0 JSON-RPC call over HTTP; the whole JSON-RPC response (its result or error)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = httpx.post(url, json=body, headers={**A2A_VERSION, **(headers or {})}, timeout=timeout)
    response.raise_for_status()
    answer: dict[str, Any] = response.json()
    return answer


def start_message(workflow: str, arguments: dict[str, Any], message_id: str = "m1") -> dict[str, Any]:
    """`SendMessage` params that run `workflow` (answered when the task ends or asks a question)."""
    return {"message": {"role": "ROLE_USER", "messageId": message_id,
                        "parts": [{"data": {"workflow": workflow, "input": arguments}}]}}


def reply_message(task: dict[str, Any], text: str, message_id: str = "r1") -> dict[str, Any]:
    """`SendMessage` params answering the question a task waits on."""
    return {"message": {"role": "ROLE_USER", "messageId": message_id, "taskId": task["id"],
                        "contextId": task["contextId"], "parts": [{"text": text}]}}

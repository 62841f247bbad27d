"""What the protocol tests share: free loopback ports, a server child that is waited for and
stopped, and a provider that calls the tools it is told to (the provider loop without a model)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flow_kernel.runtime.provider_base import ProviderReply, ProviderRequest

HERE = Path(__file__).resolve().parent
DOCS_SERVER = HERE.parents[1] / "notebooks" / "docs_server.py"  # the MCP server of gallery lesson 13
PYTHON = sys.executable


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
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


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

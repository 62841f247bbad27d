"""The door `flow serve` opens (issue 20, item 5; docs/security.md "Serving workflows"):
loopback only unless the person names a host, and then every request needs the bearer
token. The attack — a client without the token asking the served MCP server for its tools
and calling one — is tried for real over HTTP against the server as `flow serve` builds it,
and gets out once the guard is taken away (the reopened door)."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.cli import build_parser, main, serve_a2a, serve_mcp
from flow_kernel.cli.serve import _workflow_host
from flow_kernel.cli.serve_common import required_token
from tests.protocols.helpers import HERE, free_port

TOKEN = "a-long-enough-test-token-1234"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "intruder", "version": "1"}}}


def test_a_host_beyond_loopback_needs_a_token(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    served = str(HERE / "served.flow")
    assert main(["serve", served, "--mcp", "--http", "0.0.0.0:8765"]) == 2
    assert "--token-env" in capsys.readouterr().err
    monkeypatch.setenv("SHORT", "abc")
    assert main(["serve", served, "--a2a", "10.0.0.5:8765", "--token-env", "SHORT"]) == 2
    assert "at least 16 characters" in capsys.readouterr().err
    assert required_token("127.0.0.1", None) is None and required_token("::1", None) is None
    with pytest.raises(ValueError):
        required_token("192.168.1.10", None)


class _Server:
    """`flow serve FILE --mcp --http 127.0.0.1:PORT --token-env VAR`, in this process so that a
    test can take its guard away."""

    def __init__(self, served: Path, port: int, a2a: bool = False) -> None:
        mode = ["--a2a", f"127.0.0.1:{port}"] if a2a else ["--mcp", "--http", f"127.0.0.1:{port}"]
        args = build_parser().parse_args(["serve", str(served), *mode, "--token-env", "SERVE_TOKEN"])
        self.a2a = a2a
        self.host = _workflow_host(args)
        self.port = port
        self.started = threading.Event()
        self.uvicorn: Any = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.started.wait(30), "the server did not start"

    def _run(self) -> None:
        def ready(server: Any) -> None:
            self.uvicorn = server
            self.started.set()

        async def serve() -> None:
            try:
                if self.a2a:
                    await serve_a2a.serve_a2a(self.host, "served", "127.0.0.1", self.port, TOKEN, ready)
                else:
                    await serve_mcp.serve_streamable_http(self.host, "served", "127.0.0.1", self.port, TOKEN, ready)
            finally:
                await self.host.aclose()  # its sandbox, in the loop that started it

        asyncio.run(serve())

    def stop(self) -> None:
        self.uvicorn.should_exit = True
        self.thread.join(15)


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SERVE_TOKEN", TOKEN)
    shutil.copy(HERE / "served.flow", tmp_path / "served.flow")
    return tmp_path / "served.flow"


@pytest.fixture
def start(served: Path) -> Iterator[Any]:
    servers: list[_Server] = []

    def go(a2a: bool = False) -> _Server:
        servers.append(_Server(served, free_port(), a2a))
        return servers[-1]

    yield go
    for server in servers:
        server.stop()


def _post(port: int, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=json.dumps(INITIALIZE).encode(),
                                     headers={"Content-Type": "application/json",
                                              "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _tools_without_token(port: int) -> list[str]:
    from mcp import Client

    async def go() -> list[str]:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            return [t.name for t in (await client.list_tools()).tools]

    return asyncio.run(go())


def test_a_client_without_the_token_gets_nothing(start: Any) -> None:
    server = start()
    assert _post(server.port, {})[0] == 401
    assert _post(server.port, {"Authorization": "Bearer wrong-token-of-some-length"})[0] == 401
    assert _post(server.port, {"Authorization": TOKEN})[0] == 401  # the scheme is part of it
    with pytest.raises(BaseException):  # noqa: B017 - the SDK's own error for a 401, whatever its class
        _tools_without_token(server.port)
    status, body = _post(server.port, {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and "serverInfo" in body  # the person's client gets in


def test_reopened_door_without_the_guard_lets_the_intruder_in(start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_mcp, "bearer_guard", lambda app, token: app)  # the door as if never built
    server = start()
    status, body = _post(server.port, {})
    assert status == 200 and "serverInfo" in body
    assert "greet" in _tools_without_token(server.port)


def _card(port: int, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/.well-known/agent-card.json", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _send(port: int, headers: dict[str, str]) -> tuple[int, str]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "role": "user", "messageId": "m1", "parts": [{"kind": "data", "data": {"workflow": "words",
                                                                            "input": {"text": "a b"}}}]}}}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_a2a_agent_needs_the_token_too(start: Any) -> None:
    server = start(a2a=True)
    assert _card(server.port, {})[0] == 401
    assert _send(server.port, {})[0] == 401  # no task runs for the intruder
    status, card = _card(server.port, {"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and json.loads(card)["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "bearer"


def test_reopened_a2a_door_runs_the_intruders_task(start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_a2a, "bearer_guard", lambda app, token: app)
    server = start(a2a=True)
    assert _card(server.port, {})[0] == 200
    status, body = _send(server.port, {})
    assert status == 200 and "completed" in body.lower()  # a workflow ran for a caller without the token


def test_a_loopback_a2a_agent_refuses_other_host_names(start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """DNS rebinding: a page at http://evil.example:PORT whose name now resolves to 127.0.0.1
    sends its own Host; the loopback server refuses any name but its loopback ones."""
    server = start(a2a=True)
    forged = {"Host": f"evil.example:{server.port}", "Authorization": f"Bearer {TOKEN}"}
    assert _send(server.port, forged)[0] == 421
    assert _card(server.port, {"Host": f"localhost:{server.port}", "Authorization": f"Bearer {TOKEN}"})[0] == 200


def test_reopened_host_check_lets_a_rebound_page_run_a_task(start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_a2a, "loopback_host_guard", lambda app, host, port: app)
    server = start(a2a=True)
    status, body = _send(server.port, {"Host": f"evil.example:{server.port}", "Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and "completed" in body.lower()

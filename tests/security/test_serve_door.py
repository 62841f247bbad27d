"""The door `flow serve` opens over HTTP (docs/security.md, "Serving workflows"): a credential
by default, like Jupyter's server — a token generated at start and printed, or `--token-env`'s,
or one `--issue-token NAME` printed — unless the person opts out in words with `--no-auth`
(loopback only, with a warning). The attack — a client without the token, or with a wrong
one, asking the served MCP server for its tools or the A2A agent to run a workflow — is tried
for real over HTTP against the server as `flow serve` builds it, and gets in once the guard
is taken away (the reopened door). A rebound page's `Host` is tried the same way."""

from __future__ import annotations

import asyncio
import json
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.cli import main
from flow_kernel.serve import door as serve_door
from flow_kernel.serve.door import ExposureError, open_door
from tests.protocols.helpers import HERE, flow_serve, free_port
from tests.security.serve_helpers import InProcessServer

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "intruder", "version": "1"}}}


def test_the_door_refuses_what_it_cannot_guard(capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    served = str(HERE / "served.flow")
    assert main(["serve", served, "--mcp", "--http", "0.0.0.0:8765", "--no-auth"]) == 2
    assert "--no-auth on 0.0.0.0" in capsys.readouterr().err
    monkeypatch.setenv("SHORT", "abc")
    assert main(["serve", served, "--a2a", "10.0.0.5:8765", "--token-env", "SHORT"]) == 2
    assert "at least 16 characters" in capsys.readouterr().err
    assert main(["serve", served, "--a2a", "127.0.0.1:8765", "--allow-origin", "http://x.example/path"]) == 2
    assert "an origin is SCHEME://HOST[:PORT]" in capsys.readouterr().err
    assert main(["serve", served, "--mcp", "--issue-token", "bob"]) == 2  # stdio has no door to open
    assert "go with HTTP" in capsys.readouterr().err
    for bad in (["main"], ["bob", "bob"], ["no spaces"]):
        with pytest.raises(ExposureError):
            open_door("127.0.0.1", 1, issue=bad)
    with pytest.raises(ExposureError):
        open_door("127.0.0.1", 1, no_auth=True, issue=["bob"])
    door = open_door("127.0.0.1", 1, issue=["bob", "carol"])
    assert sorted(door.principals.values()) == ["bob", "carol", "main"] and len(set(door.principals)) == 3
    assert all(len(token) >= 40 for token in door.principals)  # secrets.token_urlsafe(32)
    assert open_door("127.0.0.1", 1).principals != open_door("127.0.0.1", 1).principals  # a new one each start
    assert not open_door("::1", 1, no_auth=True).auth


@pytest.fixture
def served(tmp_path: Path) -> Path:
    shutil.copy(HERE / "served.flow", tmp_path / "served.flow")
    return tmp_path / "served.flow"


@pytest.fixture
def start(served: Path) -> Iterator[Any]:
    servers: list[InProcessServer] = []

    def go(**kw: Any) -> InProcessServer:
        servers.append(InProcessServer(served, free_port(), **kw))
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
    server = start(a2a=False, issue=("bob",))
    assert _post(server.port, {})[0] == 401
    assert _post(server.port, {"Authorization": "Bearer wrong-token-of-some-length"})[0] == 401
    assert _post(server.port, {"Authorization": server.token()})[0] == 401  # the scheme is part of it
    with pytest.raises(BaseException):  # noqa: B017 - the SDK's own error for a 401, whatever its class
        _tools_without_token(server.port)
    for principal in ("main", "bob"):  # the person's clients get in, each with its own token
        status, body = _post(server.port, server.auth(principal))
        assert status == 200 and "serverInfo" in body


def test_reopened_door_without_the_guard_lets_the_intruder_in(start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_door, "bearer_guard", lambda app, door, public=(): app)  # the door as if never built
    server = start(a2a=False)
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


def _runs(server: InProcessServer) -> int:
    return len(list((server.workflows.session.directory / ".flow" / "runs").glob("*.jsonl")))


def test_the_a2a_agent_needs_the_token_too(start: Any) -> None:
    server = start()
    assert _send(server.port, {})[0] == 401  # no task runs for the intruder
    assert _send(server.port, {"Authorization": "Bearer wrong-token-of-some-length"})[0] == 401
    assert _runs(server) == 0
    status, card = _card(server.port, {})  # the card is public: it says which scheme to use
    assert status == 200 and json.loads(card)["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
    status, body = _send(server.port, server.auth())
    assert status == 200 and "completed" in body.lower()


def test_reopened_a2a_door_runs_the_intruders_task(start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_door, "bearer_guard", lambda app, door, public=(): app)
    server = start()
    status, body = _send(server.port, {})
    assert status == 200 and "completed" in body.lower()  # a workflow ran for a caller without the token
    assert _runs(server) == 1


def test_a_loopback_a2a_agent_refuses_other_host_names(start: Any) -> None:
    """DNS rebinding: a page at http://evil.example:PORT whose name now resolves to 127.0.0.1
    sends its own Host; the loopback server refuses any name but its own and loopback's."""
    server = start()
    forged = {"Host": f"evil.example:{server.port}", **server.auth()}
    assert _send(server.port, forged)[0] == 421
    assert _card(server.port, {"Host": f"localhost:{server.port}"})[0] == 200


def test_reopened_host_check_lets_a_rebound_page_run_a_task(start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_door, "loopback_host_guard", lambda app, door: app)
    server = start()
    status, body = _send(server.port, {"Host": f"evil.example:{server.port}", **server.auth()})
    assert status == 200 and "completed" in body.lower()


def test_the_command_prints_its_token_and_issued_ones(served: Path) -> None:
    """The real command: the token and each issued one printed once at start, each let in."""
    port = free_port()
    with flow_serve(["serve", str(served), "--a2a", f"127.0.0.1:{port}"], port, issue=["ci", "laptop"]) as agent:
        assert agent.token is not None and set(agent.issued) == {"ci", "laptop"}
        printed = "\n".join(agent.stderr)
        assert printed.count(agent.token) == 1 and all(printed.count(t) == 1 for t in agent.issued.values())
        assert _send(port, {})[0] == 401
        for name in (None, "ci", "laptop"):
            assert _send(port, agent.auth(name))[0] == 200


def test_no_auth_is_said_in_words_and_warned_about(served: Path) -> None:
    port = free_port()
    with flow_serve(["serve", str(served), "--a2a", f"127.0.0.1:{port}", "--no-auth"], port) as agent:
        assert agent.token is None
        assert any("warning: --no-auth" in line for line in agent.stderr)
        status, body = _send(port, {})
        assert status == 200 and "completed" in body.lower()

"""Where a request to `flow serve` may come from (docs/security.md, "Serving workflows"): a
browser's request carries `Origin`, and both servers refuse one that is not the server's own
or allowed with `--allow-origin` (403), on every address; the A2A JSON-RPC endpoint refuses a
body that is not `application/json` (415) — the "simple" request a page may send anywhere
without asking first; and MCP over HTTP on any loopback address (127.0.0.2 too, where the
SDK's own check is off by default) refuses a rebound `Host` and a foreign `Origin`. Each is
tried for real over HTTP, then against the same server with the guard taken away (the
reopened door), where it gets through."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flow_kernel.serve import door as serve_door
from flow_kernel.serve import mcp as serve_mcp
from tests.protocols.helpers import HERE, free_port
from tests.security.serve_helpers import A2A_VERSION, InProcessServer

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "page", "version": "1"}}}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
SEND = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
    "role": "ROLE_USER", "messageId": "m1", "parts": [{"data": {"workflow": "words", "input": {"text": "a b"}}}]}}}


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Any]:
    shutil.copy(HERE / "served.flow", tmp_path / "served.flow")
    servers: list[InProcessServer] = []

    def go(**kw: Any) -> InProcessServer:
        servers.append(InProcessServer(tmp_path / "served.flow", free_port(), **kw))
        return servers[-1]

    yield go
    for server in servers:
        server.stop()


def _open_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_door, "origin_guard", lambda app, door: app)


def _mcp(server: InProcessServer, headers: dict[str, str]) -> int:
    return httpx.post(server.url, json=INITIALIZE, headers={**MCP_HEADERS, **server.auth(), **headers}, timeout=10).status_code


def _a2a(server: InProcessServer, headers: dict[str, str], body: bytes | None = None) -> httpx.Response:
    return httpx.post(server.url, content=body if body is not None else json.dumps(SEND).encode(),
                      headers={"Content-Type": "application/json", **A2A_VERSION, **server.auth(), **headers}, timeout=60)


def _runs(server: InProcessServer) -> int:
    return len(list((server.workflows.session.directory / ".flow" / "runs").glob("*.jsonl")))


def _another_local_page() -> str:
    """The origin of a page served by another program on this machine."""
    return f"http://127.0.0.1:{free_port()}"


def test_a_foreign_origin_is_refused_by_both_servers(start: Any) -> None:
    a2a, mcp = start(), start(a2a=False)
    for origin in (_another_local_page(), "http://evil.example", "null"):
        assert _a2a(a2a, {"Origin": origin}).status_code == 403
        assert _mcp(mcp, {"Origin": origin}) == 403
    assert _runs(a2a) == 0
    assert _a2a(a2a, {"Origin": a2a.base}).status_code == 200  # the server's own pages may
    assert _mcp(mcp, {"Origin": f"http://localhost:{mcp.port}"}) == 200
    assert _a2a(a2a, {}).status_code == 200  # no Origin: not a browser's request


def test_reopened_origin_check_serves_the_foreign_page(start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _open_origin(monkeypatch)
    monkeypatch.setattr(serve_mcp, "transport_security", lambda door: None)  # the SDK's default for 127.0.0.1
    a2a, mcp = start(), start(a2a=False)
    page = _another_local_page()
    response = _a2a(a2a, {"Origin": page})
    assert response.status_code == 200 and "TASK_STATE_COMPLETED" in response.text
    assert _mcp(mcp, {"Origin": page}) == 200  # the SDK alone lets every port of 127.0.0.1 in


def test_an_allowed_origin_is_served(start: Any) -> None:
    a2a = start(allow_origins=("http://localhost:3000",))
    mcp = start(a2a=False, allow_origins=("http://localhost:3000",))
    assert _a2a(a2a, {"Origin": "http://localhost:3000"}).status_code == 200
    assert _mcp(mcp, {"Origin": "http://localhost:3000"}) == 200
    assert _a2a(a2a, {"Origin": "http://localhost:3001"}).status_code == 403


SIMPLE = ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; b=x"]


def test_a_simple_post_cannot_start_a_run(start: Any) -> None:
    """What a page may send anywhere without a preflight: text/plain or a form, no Origin
    check to rely on (a page may strip it with a sandboxed frame's `null`, or a non-browser)."""
    server = start()
    for kind in SIMPLE:
        response = _a2a(server, {"Content-Type": kind})
        assert response.status_code == 415, kind
    assert _runs(server) == 0
    assert _a2a(server, {"Content-Type": "application/json; charset=utf-8"}).status_code == 200


def test_reopened_body_check_runs_the_simple_post(start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_door, "json_body_guard", lambda app: app)
    server = start()
    response = _a2a(server, {"Content-Type": "text/plain"})
    assert response.status_code == 200 and "TASK_STATE_COMPLETED" in response.text
    assert _runs(server) == 1


def test_mcp_on_another_loopback_address_refuses_a_rebound_host_and_a_foreign_origin(start: Any) -> None:
    server = start(a2a=False, host="127.0.0.2")
    assert _mcp(server, {"Host": f"evil.example:{server.port}"}) == 421
    assert _mcp(server, {"Origin": "http://evil.example"}) == 403
    assert _mcp(server, {"Origin": _another_local_page()}) == 403
    assert _mcp(server, {}) == 200
    assert _mcp(server, {"Origin": f"http://127.0.0.2:{server.port}"}) == 200


def test_the_sdk_check_alone_guards_127_0_0_2_too(start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's transport security, configured for the address bound, stands without ours."""
    _open_origin(monkeypatch)
    monkeypatch.setattr(serve_door, "loopback_host_guard", lambda app, door: app)
    server = start(a2a=False, host="127.0.0.2")
    assert _mcp(server, {"Host": f"evil.example:{server.port}"}) == 421
    assert _mcp(server, {"Origin": "http://evil.example"}) == 403


def test_reopened_127_0_0_2_serves_the_rebound_page(start: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """As it was: the SDK's check on for 127.0.0.1/localhost/::1 only, no guard of ours."""
    _open_origin(monkeypatch)
    monkeypatch.setattr(serve_door, "loopback_host_guard", lambda app, door: app)
    monkeypatch.setattr(serve_mcp, "transport_security", lambda door: None)
    server = start(a2a=False, host="127.0.0.2")
    assert _mcp(server, {"Host": f"evil.example:{server.port}"}) == 200
    assert _mcp(server, {"Origin": "http://evil.example"}) == 200


def test_off_loopback_the_origin_check_stands_as_well(start: Any) -> None:
    """Bound to every interface (a token required): no Host check there, the Origin one holds."""
    a2a, mcp = start(host="0.0.0.0"), start(a2a=False, host="0.0.0.0")
    assert _a2a(a2a, {"Origin": "http://evil.example"}).status_code == 403
    assert _mcp(mcp, {"Origin": "http://evil.example"}) == 403
    assert _a2a(a2a, {"Content-Type": "text/plain"}).status_code == 415
    assert _runs(a2a) == 0
    assert _a2a(a2a, {}).status_code == 200

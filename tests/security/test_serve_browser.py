"""A web page the person opens cannot make `flow serve` run a workflow (docs/security.md,
"Serving workflows"). The page is served from another local port (another origin) and
opened in headless Chromium; its script `fetch`es the A2A endpoint twice: a "simple" request
(`text/plain`, `no-cors`, which a browser sends anywhere without asking) and a JSON one
(which the browser first asks about with a preflight). The server runs with `--no-auth`, so
that what stops the page is the Origin and body checks alone: no run starts. With those
checks taken away (the reopened door), the simple request starts the run."""

from __future__ import annotations

import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.serve import door as serve_door
from tests.browser.lab import CHROMIUM, launch
from tests.protocols.helpers import free_port
from tests.security.serve_helpers import InProcessServer

HERE = Path(__file__).resolve().parent

ATTACK = """<!doctype html><title>a page on another origin</title><script>
async function attack(url) {
  const body = JSON.stringify({jsonrpc: "2.0", id: 1, method: "message/send", params: {message: {
    role: "user", messageId: "m1", parts: [{kind: "data", data: {workflow: "echo", input: {text: "from a page"}}}]}}});
  const tried = {};
  try {
    await fetch(url, {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body});
    tried.simple = "sent";
  } catch (e) { tried.simple = String(e); }
  try {
    const r = await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"}, body});
    tried.json = r.status;
  } catch (e) { tried.json = String(e); }
  return tried;
}
</script>"""


def _missing() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright is not installed"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = ATTACK.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def page_origin() -> Iterator[str]:
    """The attacker's page, from another local port: another origin."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Any]:
    shutil.copy(HERE / "release.flow", tmp_path / "release.flow")
    servers: list[InProcessServer] = []

    def go() -> InProcessServer:
        servers.append(InProcessServer(tmp_path / "release.flow", free_port(), no_auth=True))
        return servers[-1]

    yield go
    for server in servers:
        server.stop()


def _open_the_page(page_origin: str, target: str) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page()
            page.goto(page_origin + "/")
            tried: dict[str, Any] = page.evaluate("url => attack(url)", target)
            return tried
        finally:
            browser.close()


def _runs(server: InProcessServer) -> int:
    return len(list((server.workflows.session.directory / ".flow" / "runs").glob("*.jsonl")))


def test_a_page_on_another_origin_cannot_start_a_run(served: Any, page_origin: str) -> None:
    server = served()
    tried = _open_the_page(page_origin, server.url)
    assert tried["simple"] == "sent"  # the browser sent it; the server refused it
    assert "Failed to fetch" in str(tried["json"])  # the preflight refused: the JSON body never sent
    assert _runs(server) == 0


def test_reopened_without_the_origin_and_body_checks_the_page_starts_a_run(
        served: Any, page_origin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_door, "origin_guard", lambda app, door: app)
    monkeypatch.setattr(serve_door, "json_body_guard", lambda app: app)
    server = served()
    tried = _open_the_page(page_origin, server.url)
    assert tried["simple"] == "sent"
    assert _runs(server) == 1  # the simple request ran `echo` (the JSON one still met the browser's preflight)

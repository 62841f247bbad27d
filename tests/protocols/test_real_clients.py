"""Clients written by other teams against the real `flow serve` on loopback, always started with
`--token-env` and sent the bearer token: the official MCP conformance suite
(`@modelcontextprotocol/conformance`) and the MCP TypeScript SDK's client over streamable HTTP,
and the A2A JavaScript SDK's client (`@a2a-js/sdk`). They are pinned by tests/protocols/js's
package-lock.json, which scripts/setup installs with `npm ci`."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.sandbox.node import find_node
from flow_kernel.serve import mcp as serve_mcp
from tests.protocols.helpers import HERE
from tests.protocols.serving import TOKEN, Child, InProcess, flow_serve_child

JS = HERE / "js"
CONFORMANCE = JS / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

pytestmark = pytest.mark.skipif(not (JS / "node_modules").is_dir(),
                                reason="tests/protocols/js/node_modules is missing: run scripts/setup (npm ci there)")

# The server scenarios Flow supports (tests/protocols/js/conformance.flow serves their tools); every
# other scenario of the suite is listed in conformance-baseline.yml as expected to fail.
SUPPORTED = ["server-initialize", "ping", "tools-list", "tools-call-simple-text", "tools-call-error",
             "tools-call-with-progress", "tools-call-elicitation", "json-schema-2020-12",
             "server-sse-multiple-streams", "dns-rebinding-protection", "logging-set-level", "completion-complete",
             "tools-call-with-logging", "resources-list", "prompts-list", "prompts-get-simple", "prompts-get-with-args"]


def node(script: str | Path, *args: str, origin: str | None = None, preload: bool = False,
         seconds: float = 240) -> subprocess.CompletedProcess[str]:
    """Run a Node script of tests/protocols/js with the token in its environment."""
    env = {"PATH": str(Path(find_node().path).parent), "FLOW_TEST_TOKEN": TOKEN, "FLOW_TEST_ORIGIN": origin or "",
           "NO_COLOR": "1"}
    command = [find_node().path, *(["--import", "./bearer.mjs"] if preload else []), str(script), *args]
    return subprocess.run(command, cwd=JS, env=env, capture_output=True, text=True, timeout=seconds, check=False)


def report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stdout + done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def copied(tmp_path: Path, name: str, source: Path) -> Path:
    """The served file in a folder of its own: each run's journal is written beside it."""
    shutil.copy(source, tmp_path / name)
    return tmp_path / name


@pytest.fixture(scope="module")
def conformance_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Child]:
    file = copied(tmp_path_factory.mktemp("conformance"), "conformance.flow", JS / "conformance.flow")
    shutil.copytree(JS / "prompts", file.parent / "prompts")  # served as MCP prompts
    with flow_serve_child(file, "mcp") as child:
        yield child


def test_the_mcp_conformance_suite_passes_every_scenario_flow_supports(conformance_server: Child,
                                                                     tmp_path: Path) -> None:
    url = conformance_server.url
    origin = url.rsplit("/", 1)[0]
    done = node(CONFORMANCE, "server", "--url", url, "--suite", "all", "--expected-failures",
                "conformance-baseline.yml", "--output-dir", str(tmp_path), origin=origin, preload=True)
    print(done.stdout[done.stdout.find("=== SUMMARY"):])
    # exit 0: every scenario passed except those the baseline lists, and each of those failed
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    checks: dict[str, list[dict[str, Any]]] = {}
    for folder in tmp_path.iterdir():
        scenario = folder.name.removeprefix("server-").rsplit("-", 6)[0]  # server-NAME-<ISO time>
        checks[scenario] = json.loads((folder / "checks.json").read_text())
    for scenario in SUPPORTED:
        assert checks[scenario] and all(c["status"] in ("SUCCESS", "INFO") for c in checks[scenario]), scenario
    (progress,) = checks["tools-call-with-progress"]
    assert [(n["progress"], n.get("total")) for n in progress["details"]["progressNotifications"]] == \
        [(0, 100), (50, 100), (100, 100)]  # emit progress's numbers, as sent
    (error,) = checks["tools-call-error"]
    assert error["details"]["result"]["content"][0]["text"].startswith(
        "assertion: This tool intentionally returns an error for testing (run ")
    assert "structuredContent" not in error["details"]["result"]
    (logged,) = checks["tools-call-with-logging"]  # the workflow's prints, at level info
    assert [(m["level"], m["data"]) for m in logged["details"]["logs"]] == [
        ("info", "Tool execution started"), ("info", "Tool processing data"), ("info", "Tool execution completed")]


def test_the_typescript_sdk_client_sees_the_real_error_and_progress(conformance_server: Child) -> None:
    """The TS SDK checks a result's structured content against the tool's output schema once it
    has listed the tools: an error result must carry none that breaks it."""
    got = report(node("mcp_client.mjs", conformance_server.url))
    assert got["failed"] == {"isError": True, "structured": None,
                             "text": got["failed"]["text"]}
    assert got["failed"]["text"].startswith("assertion: This tool intentionally returns an error for testing (run r")
    assert got["progress"] == [{"progress": 0, "total": 100, "message": "started"},
                               {"progress": 50, "total": 100, "message": "half way"},
                               {"progress": 100, "total": 100, "message": "finished"}]
    assert got["progressed"]["structured"] == {"result": "Progress complete"}


def test_an_error_result_with_structured_content_hides_the_error_from_the_typescript_sdk(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Reopened twin: the error shape the server used to send (structured content `{error, run}`,
    which the output schema does not allow) makes the TS SDK throw a schema error instead."""
    import mcp.types as types

    def structured_error(text: str, meta: dict[str, Any] | None = None) -> Any:
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True,
                                    structured_content={"error": (meta or {}).get("flow/error"),
                                                        "run": (meta or {}).get("flow/run")})

    monkeypatch.setattr(serve_mcp, "error_result", structured_error)
    server = InProcess(monkeypatch, copied(tmp_path, "conformance.flow", JS / "conformance.flow"), "mcp")
    try:
        got = report(node("mcp_client.mjs", server.url))
    finally:
        server.stop()
    assert "does not match the tool's output schema" in got["failed"]["thrown"]
    assert "intentionally" not in got["failed"]["thrown"]


def test_the_a2a_javascript_sdk_client(tmp_path: Path) -> None:
    file = copied(tmp_path, "served.flow", HERE / "served.flow")
    with flow_serve_child(file, "a2a") as child:
        got = report(node("a2a_client.mjs", child.url.rstrip("/")))
    assert got["card"] == {"name": "served", "skills": ["greet", "words", "remove", "paint", "wait_long"],
                           "streaming": True, "schemes": ["bearer"]}
    assert got["sent"]["state"] == "TASK_STATE_COMPLETED"
    assert got["sent"]["artifacts"] == {"greeting.txt": "Hello, Ada!", "result": {"to": "Ada", "text": "Hello, Ada!"}}
    streamed = got["streamed"]
    assert streamed[0] == {"kind": "task", "state": "TASK_STATE_SUBMITTED"}
    assert [e["text"] for e in streamed if e.get("state") == "TASK_STATE_WORKING"][1:] == \
        ["stage compose", "composing", "agent greeter started", "agent greeter answered", "done"]
    assert [e["name"] for e in streamed if e["kind"] == "artifactUpdate"] == ["greeting.txt", "result"]
    assert streamed[-1]["state"] == "TASK_STATE_COMPLETED"
    assert (got["asked"]["state"], got["asked"]["message"]) == ("TASK_STATE_INPUT_REQUIRED", "Delete x?")
    assert got["waiting"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert got["answered"]["state"] == got["got"]["state"] == "TASK_STATE_COMPLETED"
    assert got["got"]["artifacts"] == {"result": "deleted x"}
    assert got["cancelled"]["state"] == got["afterCancel"]["state"] == "TASK_STATE_CANCELED"
    assert got["next"]["artifacts"] == {"result": 2}  # the server took the next task
    assert not any("never retrieved" in line for line in child.lines)

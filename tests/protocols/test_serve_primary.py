"""A run's primary artifact (`publish primary`) as the protocols serve it (docs/protocols.md):
the A2A task's final artifact, after `result`, marked `primary` (the official `a2a-sdk`
client against `flow serve --a2a`), and the MCP tool result's first content (the official
`mcp` client over stdio), the structured content still the result; and `flow run --format
json`'s `primary`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from a2a.helpers.proto_helpers import get_data_parts, new_data_part, new_message
from a2a.types import Role, SendMessageRequest, TaskState
from mcp import Client, StdioServerParameters

from tests.protocols.helpers import FLOW, a2a_client, flow_serve, free_port

REPORT = '''## Writes a report about a topic.
workflow report(topic: string) -> int {
  publish "notes.txt" "notes on ${topic}"
  publish primary "report.md" "# ${topic}\\n\\nAll good."
  publish "data.json" { topic: topic }
  return 3
}
'''


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("primary") / "report.flow"
    path.write_text(REPORT, encoding="utf-8")
    return path


def test_the_a2a_task_ends_with_the_primary_artifact(served: Path) -> None:
    port = free_port()
    request = SendMessageRequest(message=new_message([new_data_part({"workflow": "report", "input": {"topic": "Q3"}})],
                                                     role=Role.ROLE_USER))

    async def go(url: str, headers: dict[str, str]) -> list[Any]:
        async with a2a_client(url, headers, streaming=True) as client:
            return [r async for r in client.send_message(request)]

    with flow_serve(["serve", str(served), "--a2a", f"127.0.0.1:{port}"], port) as agent:
        responses = asyncio.run(go(agent.url, agent.auth()))
    artifacts = [r.artifact_update.artifact for r in responses if r.HasField("artifact_update")]
    assert [a.name for a in artifacts] == ["notes.txt", "data.json", "result", "report.md"]
    final = artifacts[-1]
    assert final.parts[0].text == "# Q3\n\nAll good." and final.metadata["primary"] is True
    assert get_data_parts(artifacts[2].parts) == [3]
    assert responses[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


def test_the_mcp_tool_result_leads_with_the_primary_artifact(served: Path) -> None:
    params = StdioServerParameters(command=FLOW, args=["serve", str(served), "--mcp"], cwd=str(served.parent))

    async def go() -> Any:
        async with Client(params) as client:
            return await client.call_tool("report", {"topic": "Q3"})

    result = asyncio.run(go())
    assert not result.is_error and result.structured_content == {"result": 3}
    main, serialized = result.content
    assert main.text == "# Q3\n\nAll good." and main.meta == {"flow/primary": "report.md"}
    assert json.loads(serialized.text) == 3


def test_flow_run_json_returns_the_primary(served: Path) -> None:
    ran = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "run", str(served), "report",
                          "--input", '{"topic": "Q3"}', "--format", "json"], cwd=served.parent, capture_output=True,
                         text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    shown = json.loads(ran.stdout)
    assert shown["result"] == 3 and shown["primary"] == {"name": "report.md", "text": "# Q3\n\nAll good."}

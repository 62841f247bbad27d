"""`flow serve FILE --a2a HOST:PORT` driven by the official `a2a-sdk` client (issue 20, item 3):
the real command as a child on loopback, the workflows of tests/protocols/served.flow as
skills; send, stream, get, cancel, and input-required answered by the client's reply. The
client sends the token the command printed (the door itself: tests/security/test_serve_auth.py)."""

from __future__ import annotations

import asyncio
import json
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from a2a.helpers.proto_helpers import get_data_parts, new_data_part, new_message, new_text_part
from a2a.types import CancelTaskRequest, GetTaskRequest, Role, SendMessageRequest, TaskState

from tests.protocols.helpers import HERE, Served, a2a_client, flow_serve, free_port


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("a2a")
    shutil.copy(HERE / "served.flow", folder / "served.flow")
    port = free_port()
    with flow_serve(["serve", str(folder / "served.flow"), "--a2a", f"127.0.0.1:{port}"], port) as served:
        yield served


@pytest.fixture(scope="module")
def agent_url(agent: Served) -> str:
    return agent.url.rstrip("/")


def message(parts: list[Any], task_id: str | None = None, context_id: str | None = None) -> SendMessageRequest:
    return SendMessageRequest(message=new_message(parts, role=Role.ROLE_USER, task_id=task_id, context_id=context_id))


def run(workflow: str, arguments: dict[str, Any]) -> SendMessageRequest:
    return message([new_data_part({"workflow": workflow, "input": arguments})])


async def collect(agent: Served, request: SendMessageRequest, streaming: bool) -> list[Any]:
    async with a2a_client(agent.url, agent.auth(), streaming=streaming) as client:
        return [r async for r in client.send_message(request)]


def state_of(response: Any) -> int:
    if response.HasField("task"):
        return int(response.task.status.state)
    return int(response.status_update.status.state)


def test_the_agent_card_lists_the_workflows_as_skills(agent_url: str) -> None:
    with urllib.request.urlopen(f"{agent_url}/.well-known/agent-card.json", timeout=10) as response:
        card = json.loads(response.read())  # public: a client learns from it which token to send
    assert [s["id"] for s in card["skills"]] == ["greet", "words", "remove", "paint", "wait_long"]
    assert card["skills"][0]["description"] == "Greets someone by name."
    assert card["capabilities"]["streaming"] is True
    assert card["supportedInterfaces"][0]["url"] == f"{agent_url}/"
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
    assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}]


def test_send_runs_a_workflow_to_completion(agent: Served) -> None:
    (response,) = asyncio.run(collect(agent, run("greet", {"name": "Ada"}), streaming=False))
    task = response.task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    result = next(a for a in task.artifacts if a.name == "result")
    assert get_data_parts(result.parts) == [{"to": "Ada", "text": "Hello, Ada!"}]
    published = next(a for a in task.artifacts if a.name == "greeting.txt")
    assert published.parts[0].text == "Hello, Ada!"


def test_stream_sends_the_runs_events_as_status_updates_and_artifacts(agent: Served) -> None:
    responses = asyncio.run(collect(agent, run("greet", {"name": "Ada"}), streaming=True))
    assert responses[0].HasField("task")
    updates = [r.status_update.status.message.parts[0].text for r in responses[1:]
               if r.HasField("status_update") and r.status_update.status.state == TaskState.TASK_STATE_WORKING]
    assert updates[1:] == ["stage compose", "composing", "agent greeter started", "agent greeter answered", "done"]
    artifacts = [r.artifact_update.artifact.name for r in responses if r.HasField("artifact_update")]
    assert artifacts == ["greeting.txt", "result"]
    assert state_of(responses[-1]) == TaskState.TASK_STATE_COMPLETED


def test_a_failed_run_fails_the_task_with_its_code(agent: Served) -> None:
    responses = asyncio.run(collect(agent, run("words", {"text": ""}), streaming=True))
    last = responses[-1].status_update
    assert last.status.state == TaskState.TASK_STATE_FAILED
    assert last.status.message.parts[0].text.startswith("assertion: the text is empty")
    (rejected,) = asyncio.run(collect(agent, run("nope", {}), streaming=False))
    assert rejected.task.status.state == TaskState.TASK_STATE_REJECTED


def test_input_required_then_the_reply_resumes_the_run(agent: Served) -> None:
    async def go() -> tuple[list[Any], Any, list[Any], list[Any], Any]:
        async with a2a_client(agent.url, agent.auth()) as client:
            first = [r async for r in client.send_message(run("remove", {"item": "x"}))]
            task_id, context_id = first[0].task.id, first[0].task.context_id
            waiting = await client.get_task(GetTaskRequest(id=task_id))
            answered = [r async for r in client.send_message(message([new_text_part("yes")], task_id, context_id))]
            second = [r async for r in client.send_message(run("paint", {}))]
            paint_id, paint_context = second[0].task.id, second[0].task.context_id
            chosen = [r async for r in client.send_message(
                message([new_data_part({"answer": "blue"})], paint_id, paint_context))]
            return first, waiting, answered, second, chosen

    first, waiting, answered, second, chosen = asyncio.run(go())
    asking = first[-1].status_update
    assert asking.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert asking.status.message.parts[0].text == "Delete x?"
    assert dict(asking.metadata)["kind"] == "approve"
    assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert state_of(answered[-1]) == TaskState.TASK_STATE_COMPLETED
    assert answered[-1].status_update.status.message.parts[0].text == '"deleted x"'
    assert list(dict(second[-1].status_update.metadata)["choice"]) == ["red", "blue"]
    assert chosen[-1].status_update.status.message.parts[0].text == '"painted blue"'


def test_cancel_stops_a_running_workflow(agent: Served) -> None:
    async def go() -> tuple[Any, Any, Any]:
        async with a2a_client(agent.url, agent.auth()) as client:
            stream = client.send_message(run("wait_long", {}))
            started = await stream.__anext__()
            task_id = started.task.id
            await stream.aclose()
            cancelled = await client.cancel_task(CancelTaskRequest(id=task_id))
            after = await client.get_task(GetTaskRequest(id=task_id))
            again = [r async for r in client.send_message(run("words", {"text": "a b"}))]
            return cancelled, after, again

    cancelled, after, again = asyncio.run(go())
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert after.status.state == TaskState.TASK_STATE_CANCELED
    # the server goes on: the next task runs (the cancelled run let go of the sandbox)
    result = next(a for r in again if r.HasField("artifact_update") for a in [r.artifact_update.artifact])
    assert get_data_parts(result.parts) == [2]


def test_a_flow_agent_calls_a_served_workflow_over_a2a(agent: Served, agent_url: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Flow to Flow: an agent whose model is the `greet` skill of `flow serve --a2a`, with the
    token the server printed in the variable its [a2a.NAME] names."""
    from flow_kernel import Session

    assert agent.token is not None
    monkeypatch.setenv("SERVED_TOKEN", agent.token)
    (tmp_path / "flow.toml").write_text(f'[a2a.greeter]\nurl = "{agent_url}"\nskill = "greet"\n'
                                        'token_env = "SERVED_TOKEN"\n')
    s = Session(directory=tmp_path, config=tmp_path / "flow.toml", sandbox=False, journal_dir=None)
    program = ('agent front { model: "a2a/greeter", output: { to: string, text: string } }\n'
               'front("Ada")')
    outcome = s.run(program)
    assert outcome.error is None, outcome.to_json()
    assert outcome.result == {"to": "Ada", "text": "Hello, Ada!"}

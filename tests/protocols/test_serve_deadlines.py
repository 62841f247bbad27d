"""A question to a served run's caller has a deadline (`flow serve --question-timeout`,
docs/protocols.md "Bounds and shutdown"): past it the run takes the `--operator` policy's
answer, else the question's own default (`timeout T else V`), else fails closed with
`operator-unavailable` naming the deadline. Tried with the real command and the official
clients: an MCP client that never answers its elicitation, an A2A task left `input-required`."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from a2a.types import TaskState

from flow_kernel.cli import main
from tests.protocols.helpers import HERE
from tests.protocols.serving import (
    NeverAnswers,
    a2a,
    a2a_send,
    a2a_until,
    flow_serve_child,
    journals,
    mcp,
)

ENDED = {TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED}


@pytest.fixture
def waiting(tmp_path: Path) -> Path:
    shutil.copy(HERE / "waiting.flow", tmp_path / "waiting.flow")
    return tmp_path / "waiting.flow"


def _decided_by(folder: Path) -> dict[str, str]:
    """Each question of the folder's journaled runs, and who decided it (`by`)."""
    from flow_kernel.runtime.durable.journal import read_journal

    return {e["data"]["question"]: e["data"].get("by", e["data"].get("error"))
            for path in journals(folder) for e in read_journal(path) if e.get("type") == "approval.resolved"}


def _mcp_calls(url: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def go() -> list[Any]:
        async with mcp(url, elicitation_callback=NeverAnswers(), mode="legacy") as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return asyncio.run(go())


def test_mcp_an_unanswered_elicitation_takes_the_questions_default(waiting: Path) -> None:
    with flow_serve_child(waiting, "mcp", "--question-timeout", "1") as child:
        shipped, painted, removed = _mcp_calls(child.url, [("ship", {}), ("paint", {}), ("remove", {"item": "x"})])
    assert shipped.structured_content == {"result": "shipped"}
    assert painted.structured_content == {"result": "painted blue"}
    assert removed.is_error  # no default, no --operator: fails closed, saying why
    text = removed.content[0].text
    assert text.startswith("operator-unavailable") and "within 1s" in text and "--question-timeout" in text
    assert _decided_by(waiting.parent) == {"Ship?": "timeout", "Which colour?": "timeout",
                                           "Delete x?": "operator-unavailable"}


def test_mcp_past_the_deadline_the_operator_policy_answers_first(waiting: Path) -> None:
    with flow_serve_child(waiting, "mcp", "--question-timeout", "1", "--operator", "auto-deny") as child:
        shipped, removed = _mcp_calls(child.url, [("ship", {}), ("remove", {"item": "x"})])
    assert shipped.structured_content == {"result": "kept"}
    assert removed.structured_content == {"result": "kept x"}
    assert _decided_by(waiting.parent) == {"Ship?": "auto-deny", "Delete x?": "auto-deny"}


def test_a2a_a_task_left_input_required_goes_on_with_the_default(waiting: Path) -> None:
    async def go(url: str) -> tuple[Any, Any, Any, Any]:
        async with a2a(url) as client:
            ship = await a2a_send(client, "ship", {})
            remove = await a2a_send(client, "remove", {"item": "x"})
            return (ship, await a2a_until(client, ship.id, ENDED),
                    remove, await a2a_until(client, remove.id, ENDED))

    with flow_serve_child(waiting, "a2a", "--question-timeout", "1") as child:
        asked, shipped, asked_too, removed = asyncio.run(go(child.url))
    assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED  # shown to the caller first
    assert shipped.status.state == TaskState.TASK_STATE_COMPLETED
    assert shipped.status.message.parts[0].text == '"shipped"'
    assert asked_too.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert removed.status.state == TaskState.TASK_STATE_FAILED
    assert removed.status.message.parts[0].text.startswith("operator-unavailable: no answer to 'Delete x?' within 1s")


def test_a2a_an_answer_in_time_still_wins(waiting: Path) -> None:
    from a2a.helpers.proto_helpers import new_message, new_text_part
    from a2a.types import Role, SendMessageRequest

    async def go(url: str) -> Any:
        async with a2a(url) as client:
            asked = await a2a_send(client, "remove", {"item": "y"})
            reply = SendMessageRequest(message=new_message([new_text_part("yes")], role=Role.ROLE_USER,
                                                           task_id=asked.id, context_id=asked.context_id))
            [r async for r in client.send_message(reply)]
            return await a2a_until(client, asked.id, ENDED)

    with flow_serve_child(waiting, "a2a", "--question-timeout", "600") as child:
        removed = asyncio.run(go(child.url))
    assert removed.status.state == TaskState.TASK_STATE_COMPLETED
    assert removed.status.message.parts[0].text == '"deleted y"'


@pytest.mark.parametrize("flag", [["--question-timeout", "0"], ["--question-timeout", "inf"], ["--max-body", "0"]])
def test_a_bound_that_is_not_positive_is_a_usage_error(waiting: Path, flag: list[str],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", str(waiting), "--mcp", *flag]) == 2
    assert "must be positive" in capsys.readouterr().err


def test_a2a_a_message_while_the_run_goes_on_past_its_deadline_answers_nothing(waiting: Path) -> None:
    from a2a.helpers.proto_helpers import new_message, new_text_part
    from a2a.types import Role, SendMessageRequest

    async def go(url: str) -> tuple[Any, list[Any], Any]:
        async with a2a(url) as client:
            asked = await a2a_send(client, "ship_slowly", {})
            going = await a2a_until(client, asked.id, {TaskState.TASK_STATE_WORKING})  # the deadline passed
            late = SendMessageRequest(message=new_message([new_text_part("no")], role=Role.ROLE_USER,
                                                          task_id=asked.id, context_id=asked.context_id))
            replies = [r async for r in client.send_message(late)]
            return going, replies, await a2a_until(client, asked.id, ENDED)

    with flow_serve_child(waiting, "a2a", "--question-timeout", "1") as child:
        going, replies, ended = asyncio.run(go(child.url))
    assert going.status.state == TaskState.TASK_STATE_WORKING  # no longer input-required, with no request open
    assert replies  # the late message's request saw the run to its end...
    assert ended.status.state == TaskState.TASK_STATE_COMPLETED
    assert ended.status.message.parts[0].text == '"late"'  # ...and did not answer the question: the default did

"""Tasks belong to their caller (docs/security.md, "Serving workflows"): each A2A task of
`flow serve` records the principal whose token created it, and another principal — another
token the person issued — can neither list it, get it, cancel it, resubscribe to it nor
answer its question: the answer is "task not found", the same as for a task that never
existed. Tried for real over HTTP by an attacker holding a token of its own; then against
the same server with scoping taken away (every caller one principal, as before), where the
attacker reads the victim's task and its "yes" makes the victim's `release` end `published`."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flow_kernel.serve import a2a_tasks
from tests.protocols.helpers import free_port
from tests.security.serve_helpers import (
    A2A_VERSION,
    InProcessServer,
    reply_message,
    rpc,
    start_message,
)

HERE = Path(__file__).resolve().parent
TASK_NOT_FOUND = -32001


@pytest.fixture
def server(tmp_path: Path) -> Iterator[InProcessServer]:
    shutil.copy(HERE / "release.flow", tmp_path / "release.flow")
    served = InProcessServer(tmp_path / "release.flow", free_port(), issue=("victim", "attacker"))
    yield served
    served.stop()


def _waiting_release(server: InProcessServer) -> dict[str, Any]:
    """The victim starts `release` of a secret version; the task waits for its approval."""
    task: dict[str, Any] = rpc(server.url, "SendMessage", start_message("release", {"version": "v9-secret"}),
                               server.auth("victim"))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return task


def _subscribe(server: InProcessServer, task_id: str, who: str) -> str:
    """`SubscribeToTask` as `who`: the stream's text (an error arrives as its one event)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
    with httpx.stream("POST", server.url, json=body, headers={**A2A_VERSION, **server.auth(who)}, timeout=30) as stream:
        return next(stream.iter_text())


def _not_found_alike(answer: dict[str, Any], task_id: str) -> dict[str, Any]:
    error = dict(answer["error"])
    error["message"] = str(error.get("message", "")).replace(task_id, "ID")
    return error


def test_another_caller_cannot_see_or_touch_the_task(server: InProcessServer) -> None:
    task = _waiting_release(server)
    victim_id, never = task["id"], "0c9e0ea4-0000-4000-8000-000000000000"
    listed = rpc(server.url, "ListTasks", {}, server.auth("attacker"))["result"]
    assert listed["tasks"] == [] and listed["totalSize"] == 0
    for method, params in (("GetTask", {"id": "{}"}), ("CancelTask", {"id": "{}"})):
        for task_id in (victim_id, never):
            answer = rpc(server.url, method, {k: v.format(task_id) for k, v in params.items()}, server.auth("attacker"))
            assert answer["error"]["code"] == TASK_NOT_FOUND, (method, answer)
        victim_answer = rpc(server.url, method, {"id": victim_id}, server.auth("attacker"))
        never_answer = rpc(server.url, method, {"id": never}, server.auth("attacker"))
        assert _not_found_alike(victim_answer, victim_id) == _not_found_alike(never_answer, never)  # nothing told
    reply = rpc(server.url, "SendMessage", reply_message(task, "yes"), server.auth("attacker"))
    assert reply["error"]["code"] == TASK_NOT_FOUND
    assert str(TASK_NOT_FOUND) in _subscribe(server, victim_id, "attacker")
    # the victim's task is untouched, still its own, still waiting; its answer decides
    mine = rpc(server.url, "ListTasks", {}, server.auth("victim"))["result"]
    assert [t["id"] for t in mine["tasks"]] == [victim_id]
    assert rpc(server.url, "GetTask", {"id": victim_id}, server.auth("victim"))["result"]["status"]["state"] == \
        "TASK_STATE_INPUT_REQUIRED"
    ended = rpc(server.url, "SendMessage", reply_message(task, "no"), server.auth("victim"))["result"]["task"]
    assert ended["status"]["state"] == "TASK_STATE_COMPLETED"
    assert ended["status"]["message"]["parts"][0]["text"] == '"held"'
    card = httpx.get(server.base + "/.well-known/agent-card.json", timeout=10).text
    assert "v9-secret" not in card and victim_id not in card  # the public card holds nothing of callers


def test_reopened_without_scoping_the_attacker_approves_the_victims_release(
        server: InProcessServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(a2a_tasks, "task_owner", lambda context: "")  # every caller the same, as before
    task = _waiting_release(server)
    listed = rpc(server.url, "ListTasks", {"historyLength": 5}, server.auth("attacker"))["result"]
    assert [t["id"] for t in listed["tasks"]] == [task["id"]]
    assert "v9-secret" in str(listed)  # the victim's input, in the attacker's hands
    assert rpc(server.url, "GetTask", {"id": task["id"]}, server.auth("attacker"))["result"]["id"] == task["id"]
    answered = rpc(server.url, "SendMessage", reply_message(task, "yes"), server.auth("attacker"))["result"]["task"]
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
    ended = rpc(server.url, "GetTask", {"id": task["id"]}, server.auth("victim"))["result"]
    assert ended["status"]["message"]["parts"][0]["text"] == '"published"'  # the victim's release, published


def test_reopened_without_scoping_the_attacker_cancels_the_victims_task(
        server: InProcessServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(a2a_tasks, "task_owner", lambda context: "")
    task = _waiting_release(server)
    cancelled = rpc(server.url, "CancelTask", {"id": task["id"]}, server.auth("attacker"))["result"]
    assert cancelled["status"]["state"] == "TASK_STATE_CANCELED"

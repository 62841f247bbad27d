"""The tasks `flow serve --a2a` keeps (docs/protocols.md): `ListTasks` with the A2A spec's paging
fields (pageSize 1–100, default 50, the size used in the answer; nextPageToken, empty on the
last page; totalSize before paging) and an unknown status filter refused as invalid params;
finished tasks kept per caller up to `--keep-tasks` (least recently used dropped first, a
task waiting for an answer never) and for `--keep-finished` seconds, their journals staying
in `.flow/runs`. The real command as a child, JSON-RPC over HTTP with its printed token."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.serve import a2a_tasks
from tests.protocols.helpers import Served, flow_serve, free_port
from tests.security.serve_helpers import InProcessServer, reply_message, rpc, start_message

RELEASE = Path(__file__).resolve().parents[1] / "security" / "release.flow"
INVALID_PARAMS = -32602
TASK_NOT_FOUND = -32001


@contextmanager
def _serving(folder: Path, *flags: str) -> Iterator[Served]:
    shutil.copy(RELEASE, folder / "release.flow")
    port = free_port()
    with flow_serve(["serve", str(folder / "release.flow"), "--a2a", f"127.0.0.1:{port}", *flags], port) as agent:
        yield agent


def _echo(agent: Served, text: str) -> dict[str, Any]:
    task: dict[str, Any] = rpc(agent.url, "SendMessage", start_message("echo", {"text": text}), agent.auth())["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    return task


def _list(agent: Served, **params: Any) -> dict[str, Any]:
    return rpc(agent.url, "ListTasks", params, agent.auth())


def test_list_tasks_pages_as_the_spec_says(tmp_path: Path) -> None:
    with _serving(tmp_path) as agent:
        made = [_echo(agent, f"t{i}")["id"] for i in range(3)]
        whole = _list(agent)["result"]
        assert (whole["pageSize"], whole["totalSize"], whole["nextPageToken"]) == (50, 3, "")
        assert sorted(t["id"] for t in whole["tasks"]) == sorted(made)
        first = _list(agent, pageSize=2)["result"]
        assert (first["pageSize"], first["totalSize"], len(first["tasks"])) == (2, 3, 2) and first["nextPageToken"]
        second = _list(agent, pageSize=2, pageToken=first["nextPageToken"])["result"]
        assert (second["totalSize"], len(second["tasks"]), second["nextPageToken"]) == (3, 1, "")
        assert {t["id"] for t in first["tasks"] + second["tasks"]} == set(made)  # each once, newest first
        for size in (0, 101, -1):
            assert _list(agent, pageSize=size)["error"]["code"] == INVALID_PARAMS
        for status in ("TASK_STATE_BOGUS", "done", 99):
            refused = _list(agent, status=status)
            assert refused["error"]["code"] == INVALID_PARAMS, refused  # not "every task"
        done = _list(agent, status="TASK_STATE_COMPLETED")["result"]
        assert done["totalSize"] == 3
        working = _list(agent, status="TASK_STATE_WORKING")["result"]
        assert (working["tasks"], working["totalSize"], working["nextPageToken"]) == ([], 0, "")


def test_finished_tasks_are_kept_up_to_the_cap_least_recently_used_dropped(tmp_path: Path) -> None:
    with _serving(tmp_path, "--keep-tasks", "2") as agent:
        waiting: dict[str, Any] = rpc(agent.url, "SendMessage", start_message("release", {"version": "v1"}),
                                      agent.auth())["result"]["task"]
        first, second = _echo(agent, "one")["id"], _echo(agent, "two")["id"]
        assert rpc(agent.url, "GetTask", {"id": first}, agent.auth())["result"]["id"] == first  # now the most recent
        third = _echo(agent, "three")["id"]
        kept = {t["id"] for t in _list(agent)["result"]["tasks"]}
        assert kept == {waiting["id"], first, third}  # `second` was the least recently used
        assert rpc(agent.url, "GetTask", {"id": second}, agent.auth())["error"]["code"] == TASK_NOT_FOUND
        ended = rpc(agent.url, "SendMessage", reply_message(waiting, "yes"), agent.auth())["result"]["task"]
        assert ended["status"]["state"] == "TASK_STATE_COMPLETED"  # the live task was never dropped
        assert len(_list(agent)["result"]["tasks"]) == 2
        assert len(list((tmp_path / ".flow" / "runs").glob("*.jsonl"))) == 4  # the journals keep every run


def test_finished_tasks_go_after_their_time(tmp_path: Path) -> None:
    with _serving(tmp_path, "--keep-finished", "1") as agent:
        task = _echo(agent, "soon gone")["id"]
        deadline = time.monotonic() + 30
        while "result" in rpc(agent.url, "GetTask", {"id": task}, agent.auth()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert rpc(agent.url, "GetTask", {"id": task}, agent.auth())["error"]["code"] == TASK_NOT_FOUND
        assert _list(agent)["result"]["totalSize"] == 0


def test_without_the_status_check_an_unknown_status_lists_every_task(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The check taken away, the SDK reads the unknown name as "unspecified": no filter."""
    monkeypatch.setattr(a2a_tasks, "checked_list_params", lambda endpoint: endpoint)
    shutil.copy(RELEASE, tmp_path / "release.flow")
    server = InProcessServer(tmp_path / "release.flow", free_port())
    try:
        rpc(server.url, "SendMessage", start_message("echo", {"text": "x"}), server.auth())
        listed = rpc(server.url, "ListTasks", {"status": "TASK_STATE_BOGUS"}, server.auth())
        assert listed["result"]["totalSize"] == 1
    finally:
        server.stop()

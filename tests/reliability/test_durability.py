"""A kernel killed with SIGKILL in the middle of a run: the run's journal holds every
event up to the kill and reads back; the cassette holds every answer recorded before it;
the sandbox processes do not outlive their kernel; a new kernel lists the run as
interrupted in `%runs`, and replaying the cassette reproduces the completed part of the
run without calling the provider again."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from flow_kernel.runtime.durable.cassette import CassettePlayer
from flow_kernel.runtime.durable.journal import read_journal
from flow_kernel.runtime.events.vocabulary import comparable
from tests.kernel.kernel_helpers import execute
from tests.reliability.fault_helpers import (
    FakeModel,
    check_journal,
    journals,
    new_journal,
    sandbox_processes,
    start_kernel,
    wait_for_event,
)

CELL = ('agent a { model: "openai/ok-1" }\nagent stuck { model: "openai/hang-1" }\n'
        'print "start"\nlet one = a("first")\nlet two = a("second")\nlet three = stuck("third")\nthree')


@pytest.fixture()
def model() -> Iterator[FakeModel]:
    server = FakeModel()
    yield server
    server.close()


def test_a_kernel_killed_mid_run_keeps_its_journal_and_cassette(tmp_path: Path, model: FakeModel) -> None:
    env = {"OPENAI_BASE_URL": model.url, "OPENAI_API_KEY": "sk-durability"}
    km, kc = start_kernel(tmp_path, **env)
    try:
        assert execute(kc, "%record calls.jsonl").status == "ok"
        before = journals(tmp_path)
        kc.execute(CELL)
        journal = wait_for_event(tmp_path, before, "agent.started", count=3)  # the third hangs at the provider
        nodes = sandbox_processes(km)
        assert nodes, "the kernel should have a sandbox process"
        os.kill(km.provisioner.pid, signal.SIGKILL)  # type: ignore[attr-defined]
        psutil.Process(km.provisioner.pid).wait(30)  # type: ignore[attr-defined]
    finally:
        kc.stop_channels()
        km.cleanup_resources()
    # Orphaned sandboxes see their stdin close and exit by themselves.
    _, alive = psutil.wait_procs(nodes, timeout=30)
    assert alive == [], alive
    # Everything up to the kill, in order, nothing torn; no end was recorded.
    events = check_journal_prefix(journal)
    types = [e["type"] for e in events]
    assert types[:2] == ["workflow.started", "print"]
    assert types.count("agent.started") == 3 and types.count("agent.completed") == 2 and types[-1] == "agent.started"
    recorded = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [(e["agent"], e["output"]) for e in recorded] == [("a", "ok"), ("a", "ok")]
    requests_before_replay = len(model.bodies)

    km, kc = start_kernel(tmp_path, **env)
    try:
        runs = execute(kc, "%runs")
        text = runs.of("display_data")[0]["data"]["text/plain"]
        (row,) = [line for line in text.splitlines() if journal.stem in line]
        assert "interrupted" in row, text
        assert execute(kc, "%replay calls.jsonl").status == "ok"
        before = journals(tmp_path)
        replay = execute(kc, CELL)
        # The two recorded calls replay; the third was never answered, so the cassette has no
        # answer for it: a clear error, and no provider call at all.
        assert replay.status == "error" and replay.content["ename"] == "agent-invocation", replay.content
        assert "has no answer" in replay.content["evalue"]
        assert len(model.bodies) == requests_before_replay
        replayed = check_journal(new_journal(tmp_path, before), ends_with="agent-invocation",
                                 contains=("print", "agent.completed", "agent.completed"))
        assert execute(kc, '"after the replay"').result == "after the replay"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    # The replay's events are the killed run's, up to the kill (ids, times and latencies aside).
    killed_part = strip(comparable(events))
    assert strip(comparable(replayed))[:len(killed_part)] == killed_part


def test_a_torn_last_cassette_line_still_replays(tmp_path: Path) -> None:
    entry = {"agent": "a", "label": "a", "occurrence": 1, "attempt": 1, "prompt_hash": None, "output": "ok"}
    path = tmp_path / "torn.jsonl"
    path.write_text(json.dumps(entry) + "\n" + json.dumps(entry)[:25])  # killed mid-write
    player = CassettePlayer(path)
    assert player.answer(("any.flow", "a", "a", 1, 1)).output == "ok"  # an entry without scope answers any
    path.write_text(json.dumps(entry)[:25] + "\n" + json.dumps(entry) + "\n")  # damage elsewhere is refused
    with pytest.raises(ValueError, match="not a cassette entry"):
        CassettePlayer(path)


def check_journal_prefix(path: Path) -> list[dict[str, object]]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines()
             if not line.startswith('{"journal":')]  # the checkpoint records between the events
    events = read_journal(path)
    assert len(events) == len(lines)  # flushed per event: no torn line even after SIGKILL
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    return events


def strip(events: list[dict[str, object]]) -> list[tuple[object, ...]]:
    out = []
    for e in events:
        data = e.get("data") if isinstance(e.get("data"), dict) else {}
        assert isinstance(data, dict)
        keep = {k: v for k, v in data.items() if k not in ("replayed", "cassette", "by", "usage", "provider")}
        out.append((e["type"], json.dumps(keep, sort_keys=True)))
    return out


"""Record and replay: a recorded run replays with the same result and the same events
(timestamps and latencies aside), without the provider."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable.cassette import CassettePlayer, CassetteRecorder
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = '''type N = { n: int }
agent a {
  model: "scripted"
  output: N
  repair: 1
  retry: { on: ["agent-invocation"], attempts: 2 }
  script: [{ n: "bad" }, { n: 1 }, fail("agent-invocation", "flaky"), { n: 2 }, { n: 3 }]
}
let xs = parallelMap(range(3), i => a("item ${i}"), concurrency: 2)
xs[*].n'''


def run(source: str, *, record: Path | None = None, replay: Path | None = None) -> RunOutcome:
    context = RunContext(recorder=CassetteRecorder(record) if record is not None else None,
                         player=CassettePlayer(replay) if replay is not None else None)
    return asyncio.run(run_compiled(compile_source(SourceFile("c.flow", source)), InProcessExecutor(), context))


def comparable(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["type"], e["seq"], e["span"], e["stage"], json.dumps({k: v for k, v in e["data"].items() if k != "latency_ms"}))
            for e in events]


def test_replay_reproduces_the_recorded_run(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    recorded = run(PROGRAM, record=cassette)
    assert recorded.error is None and recorded.result == [1, 2, 3]
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert {"agent", "label", "occurrence", "attempt", "prompt_hash"} <= set(lines[0])
    assert any("error" in line for line in lines) and any(line["attempt"] > 1 for line in lines)
    # The replay does not use the script at all: give the agent one that would answer differently.
    other = PROGRAM.replace('script: [{ n: "bad" }, { n: 1 }, fail("agent-invocation", "flaky"), { n: 2 }, { n: 3 }]',
                            'script: [{ n: 99 }]')
    replayed = run(other, replay=cassette)
    assert replayed.result == recorded.result
    assert comparable(replayed.events) == comparable(recorded.events)


def test_a_call_missing_from_the_cassette_names_its_label(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    run('agent a { model: "scripted", script: ["x"] }\na("one", label: "first")', record=cassette)
    outcome = run('agent a { model: "scripted", script: ["x"] }\na("one", label: "first")\na("two", label: "second")',
                  replay=cassette)
    assert outcome.error is not None and outcome.error.code == "agent-invocation"
    assert "`second`" in outcome.error.message


def test_flow_run_records_and_replays(tmp_path: Path) -> None:
    source = tmp_path / "p.flow"
    source.write_text(PROGRAM)
    cassette = tmp_path / "run.jsonl"

    def flow(*args: str) -> dict[str, Any]:
        out = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "run", str(source), "--format", "json", *args],
                             capture_output=True, text=True, cwd=tmp_path, timeout=120)
        return json.loads(out.stdout)

    assert flow("--record", str(cassette))["result"] == [1, 2, 3]
    source.write_text(PROGRAM.replace('{ n: "bad" }, { n: 1 }', '{ n: 7 }'))
    assert flow("--replay", str(cassette))["result"] == [1, 2, 3]
    bad = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "run", str(source), "--replay", str(tmp_path / "none")],
                         capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert bad.returncode == 2 and "cannot read the cassette" in bad.stderr


# -- replay identity (issue 17, item 1): scope = the cell (by its text) or file, and workflow;
#    occurrences within the run; re-recording a scope replaces its entries only.

AGENT = 'agent a { model: "scripted", script: ["one", "two"] }'
OTHER_AGENT = 'agent a { model: "scripted", script: ["live answer"] }'  # what a call gets if it is not replayed
CELL = 'parallelMap(range(2), i => a("hello"))'  # one label, called twice: occurrences 1 and 2


def session_in(tmp_path: Path) -> Any:
    from flow_kernel import Session

    return Session(directory=tmp_path, journal_dir=None)


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_an_unchanged_cell_replays_every_time_it_runs(tmp_path: Path) -> None:
    s = session_in(tmp_path)
    s.run(AGENT)
    s.record("tape.jsonl")
    assert s.run(CELL).result == ["one", "two"]
    s.run(OTHER_AGENT)
    s.replay("tape.jsonl")
    for _ in range(3):  # occurrences count within the run: a re-run starts again at call 1
        outcome = s.run(CELL)
        assert outcome.error is None, outcome.error
        assert outcome.result == ["one", "two"]


def test_an_edited_prompt_misses_with_the_nearest_request_and_a_diff(tmp_path: Path) -> None:
    s = session_in(tmp_path)
    s.run(AGENT)
    s.record("tape.jsonl")
    s.run('a("Summarise the release notes for users")')
    s.run('a("bye", label: "bye")')
    s.replay("tape.jsonl")
    outcome = s.run('a("Summarise the release notes for developers")')
    assert outcome.error is not None and outcome.error.code == "agent-invocation"
    message = outcome.error.message
    assert "has no answer for `a@1:1`" in message and "nearest recorded request is `a@1:1` call 1" in message
    assert "-Summarise the release notes for users" in message
    assert "+Summarise the release notes for developers" in message
    assert outcome.error.details["nearest"]["diff"].count("\n") == 1


def test_a_changed_prompt_of_a_file_names_what_differs(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    run('agent a { model: "scripted", script: ["x"] }\na("line one\\nline two", label: "l")', record=cassette)
    outcome = run('agent a { model: "scripted", script: ["x"] }\na("line one\\nline 2", label: "l")', replay=cassette)
    assert outcome.error is not None and "but for another prompt" in outcome.error.message
    assert "-line two\n+line 2" in outcome.error.message and "line one" not in outcome.error.message


def test_recording_a_cell_again_replaces_its_entries_and_keeps_the_others(tmp_path: Path) -> None:
    s = session_in(tmp_path)
    s.run(AGENT)
    s.record("tape.jsonl")
    s.run(CELL)
    s.run('a("bye", label: "bye")')
    before = entries(tmp_path / "tape.jsonl")
    s.run(CELL)
    s.run(CELL)
    after = entries(tmp_path / "tape.jsonl")
    assert len(after) == len(before) == 3  # one set per cell, not one per run
    assert sorted(map(json.dumps, after)) == sorted(map(json.dumps, before))
    # a new recording (another session) of one cell keeps the other cell's entries
    again = session_in(tmp_path)
    again.run('agent a { model: "scripted", script: ["fresh"] }')
    again.record("tape.jsonl")
    again.run(CELL)
    final = entries(tmp_path / "tape.jsonl")
    assert [e["output"] for e in final if e["label"] == "bye"] == ["one"]
    assert [e["output"] for e in final if e["label"] != "bye"] == ["fresh", "fresh"]
    assert not list(tmp_path.glob(".tape.jsonl.*"))  # the atomic rewrite leaves no temporary file


def test_a_cassette_recorded_before_scopes_still_replays(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"agent": "a", "label": "a@1:1", "occurrence": 1, "attempt": 1,
                               "prompt_hash": "2cf24dba5fb0a30e", "output": "recorded"}) + "\n")
    s = session_in(tmp_path)
    s.run(OTHER_AGENT)
    s.replay("old.jsonl")
    assert s.run('a("hello")').result == "recorded"
    assert s.run('a("hello")').result == "recorded"
    missed = s.run('a("hullo")')
    assert missed.error is not None and "recorded without its prompt text" in missed.error.message

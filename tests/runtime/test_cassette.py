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


def run(source: str, **kw: Any) -> RunOutcome:
    return asyncio.run(run_compiled(compile_source(SourceFile("c.flow", source)), InProcessExecutor(), **kw))


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

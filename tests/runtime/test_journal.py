"""The journal of a run: every event, written as it happens, complete up to a failure."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable.journal import read_journal
from flow_kernel.runtime.run import run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor

ROOT = Path(__file__).resolve().parents[2]


def run(source: str, tmp_path: Path) -> Any:
    compiled = compile_source(SourceFile("j.flow", source))
    return asyncio.run(run_compiled(compiled, InProcessExecutor(), RunContext(journal_dir=tmp_path)))


def test_journal_holds_every_event_in_order(tmp_path: Path) -> None:
    outcome = run('stage "a" { print "one" }\nlog "two"\n3', tmp_path)
    assert outcome.journal == tmp_path / f"{outcome.run_id}.jsonl"
    # Equal as JSON: the run keeps its order keys as tuples, the journal has them as lists.
    assert read_journal(outcome.journal) == json.loads(json.dumps(outcome.events))
    assert [e["seq"] for e in outcome.events] == list(range(1, len(outcome.events) + 1))


def test_a_failed_run_is_in_its_journal(tmp_path: Path) -> None:
    outcome = run('print "before"\nrequire 1 == 2 : "no"\nprint "after"', tmp_path)
    events = read_journal(outcome.journal)
    types = [e["type"] for e in events]
    assert types[-2:] == ["require.failed", "workflow.failed"]
    assert events[-1]["data"]["code"] == "assertion"
    assert "after" not in json.dumps(events)


def test_host_side_failures_are_recorded(tmp_path: Path) -> None:
    compiled = compile_source(SourceFile("j.flow", "workflow w(n: int) -> int { return n }"))
    outcome = asyncio.run(run_compiled(compiled, InProcessExecutor(), RunContext(journal_dir=tmp_path), workflow="w",
                                       input={"n": "x"}))
    (last,) = read_journal(outcome.journal)
    assert last["type"] == "workflow.failed" and last["data"]["code"] == "workflow-input-validation"


def test_a_killed_host_keeps_the_journal_up_to_the_kill(tmp_path: Path) -> None:
    source = tmp_path / "slow.flow"
    source.write_text('agent a { model: "scripted", script: ["x", slow(30s, "late")] }\n'
                      'print "started"\nlet first_reply = a("one")\nlet second = a("two")\nsecond')
    proc = subprocess.Popen([sys.executable, "-m", "flow_kernel.cli", "run", str(source)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    runs = tmp_path / ".flow" / "runs"
    try:
        for _ in range(300):
            files = list(runs.glob("*.jsonl")) if runs.exists() else []
            if files and sum(1 for e in read_journal(files[0]) if e["type"] == "agent.started") == 2:
                break
            asyncio.run(asyncio.sleep(0.1))
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    (journal,) = runs.glob("*.jsonl")
    types = [e["type"] for e in read_journal(journal)]
    assert types[:2] == ["workflow.started", "print"]
    assert types.count("agent.completed") == 1 and types[-1] == "agent.started"

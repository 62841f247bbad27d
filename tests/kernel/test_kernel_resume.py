"""Durable runs in the Flow kernel over the real Jupyter protocol (docs/durability.md):

- a kernel killed mid-cell (a restart) and the run resumed with `%resume` in the new kernel:
  the same result, and the provider (the official `openai` client against a loopback server
  that counts requests) never asked again for a call the journal held;
- a deferred approval (`%operator defer`) answered from the CLI (`flow answer`) after the
  kernel that asked was shut down, then resumed in a new kernel;
- the same answered through the prompt widget of a new kernel (`%resume`, the click sent
  as the frontend sends it, a comm message).
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.runtime.durable.journal import read_checkpoint
from tests.kernel.kernel_helpers import collect, execute, start
from tests.kernel.test_kernel_widgets import click_when_shown
from tests.reliability.test_kill_resume import CALLS, EXPECTED, PROGRAM, CountingServer

DEFERRED = '''%operator defer
agent w { model: "scripted", script: [when("draft", "Draft 1")] }
let d = w("draft")
let ok = approve "Publish ${d}?"
ok ? "published ${d}" : "kept ${d}"'''


def shown(reply: Any) -> str:
    return "\n".join(str(c["data"].get("text/plain")) for c in reply.of("display_data"))


def defer_in_a_kernel_then_shut_it_down(folder: Path) -> tuple[str, str]:
    km, kc = start(folder, live_view=False)
    try:
        reply = execute(kc, DEFERRED)
        assert reply.status == "ok", reply.outputs
        text = shown(reply)
        run = re.search(r"run (r[0-9a-f]{12}) is waiting", text)
        pending = re.search(r"^\s+(p[0-9a-f]{10})\s+approve: Publish Draft 1\?", text, re.M)
        assert run and pending, text
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)  # the kernel that asked is gone; the run waits on disk
    return run.group(1), pending.group(1)


def test_a_deferred_approval_answered_from_the_cli_resumes_in_a_new_kernel(tmp_path: Path) -> None:
    run, pending = defer_in_a_kernel_then_shut_it_down(tmp_path)
    listed = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "runs", "--waiting"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert run in listed.stdout and pending in listed.stdout
    answered = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "answer", run, pending, "true"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert answered.returncode == 0, answered.stderr
    km, kc = start(tmp_path, live_view=False)
    try:
        resumed = execute(kc, f"%resume {run}")
        assert resumed.status == "ok", resumed.outputs
        assert resumed.result == "\"published Draft 1\"" or "published Draft 1" in str(resumed.result)
        again = execute(kc, f"%answer {run} {pending} false")
        assert again.status == "error" and "run-ended" in again.error["evalue"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    checkpoint = read_checkpoint(tmp_path / ".flow" / "runs" / f"{run}.jsonl")
    assert checkpoint.status == "completed" and checkpoint.executions == 2
    assert checkpoint.answers[pending]["by"] == "flow answer" and checkpoint.answers[pending]["value"] is True


def test_a_deferred_approval_answered_in_the_widget_of_a_new_kernel(tmp_path: Path) -> None:
    run, pending = defer_in_a_kernel_then_shut_it_down(tmp_path)
    km, kc = start(tmp_path)
    try:
        msg_id = kc.execute(f"%resume {run}", allow_stdin=True)  # a person at the frontend
        started = time.perf_counter()
        seen: list[dict[str, Any]] = []
        click_when_shown(kc, msg_id, "Approve", seen)
        reply = collect(kc, msg_id, started)
        assert reply.status == "ok", reply.outputs
        assert "published Draft 1" in str(reply.result)
        asked = [m["content"]["data"]["state"] for m in seen if m["msg_type"] == "comm_open"]
        assert any(f"Run {run} waits: Publish Draft 1?" in str(state.get("value")) for state in asked), asked
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    answer = read_checkpoint(tmp_path / ".flow" / "runs" / f"{run}.jsonl").answers[pending]
    assert answer["by"] == "widget" and answer["value"] is True


def test_last_answers_and_resumes_the_run_this_kernel_left_waiting(tmp_path: Path) -> None:
    """`%answer last …` / `%resume last`: a notebook (gallery lesson 15) goes on with the run a
    cell above left waiting without writing its random id into a cell; the summary of that
    cell says `waiting`, not `completed` (its workflow never ended)."""
    km, kc = start(tmp_path, live_view=False)
    try:
        none_yet = execute(kc, "%resume last")
        assert none_yet.status == "error" and "no run of this kernel is waiting" in none_yet.error["evalue"]
        reply = execute(kc, DEFERRED)
        text = shown(reply)
        assert "Flow run: waiting" in text and "Flow run: completed" not in text, text
        run = re.search(r"run (r[0-9a-f]{12}) is waiting", text)
        pending = re.search(r"^\s+(p[0-9a-f]{10})\s+approve: Publish Draft 1\?", text, re.M)
        assert run and pending, text
        answered = execute(kc, f"%answer last {pending.group(1)} true")
        assert answered.status == "ok", answered.outputs
        assert f"of run {run.group(1)}: true" in shown(answered)
        resumed = execute(kc, "%resume last")
        assert resumed.status == "ok", resumed.outputs
        assert "published Draft 1" in str(resumed.result)
        assert "Flow run: completed" in shown(resumed)
        again = execute(kc, f"%answer last {pending.group(1)} false")  # it went on: nothing of this kernel waits
        assert again.status == "error" and "no run of this kernel is waiting" in again.error["evalue"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    checkpoint = read_checkpoint(tmp_path / ".flow" / "runs" / f"{run.group(1)}.jsonl")
    assert checkpoint.status == "completed" and checkpoint.executions == 2
    assert checkpoint.answers[pending.group(1)]["by"] == "%answer"


def test_a_kernel_restarted_mid_cell_resumes_the_run_with_resume(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    server = CountingServer()
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    km, kc = start(tmp_path, live_view=False)
    runs = tmp_path / ".flow" / "runs"
    try:
        kc.execute(PROGRAM)
        deadline = time.time() + 90
        held, kill_at = 0, random.Random(int(os.environ.get("FLOW_KILL_SEED", "1717"))).randint(2, CALLS - 2)
        while time.time() < deadline:  # kill when the journal holds `kill_at` calls (and a little later)
            journals = list(runs.glob("r*.jsonl")) if runs.is_dir() else []
            if journals:
                held = sum(1 for key in read_checkpoint(journals[0]).effects if key.startswith("agent:"))
                if held >= kill_at:
                    break
            time.sleep(0.005)
        km.restart_kernel(now=True)  # the kernel process is killed, a new one starts
        (journal,) = runs.glob("r*.jsonl")
        held = sum(1 for key in read_checkpoint(journal).effects if key.startswith("agent:"))
        asked_before = len(server.log)
        assert 0 < held < CALLS, held
        kc.stop_channels()
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=90)
        status = execute(kc, "%runs")
        assert f"{journal.stem}" in shown(status) and "interrupted" in shown(status)
        resumed = execute(kc, f"%resume {journal.stem}")
        assert resumed.status == "ok", resumed.outputs
        (result,) = resumed.of("execute_result")
        assert result["data"]["application/json"] == EXPECTED
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    after = [call for _, call in server.log[asked_before:]]
    print(f"\nkernel restarted with {held} of {CALLS} calls journaled; {asked_before} requests before, "
          f"{len(after)} after (from call {min(after)})")
    assert after == list(range(held, CALLS))  # the journaled calls were not asked again
    assert asked_before in (held, held + 1)  # at most the one call in flight at the kill is asked twice

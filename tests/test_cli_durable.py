"""`flow run --operator defer`, `flow answer`, `flow runs`, `flow resume` as a person types
them (docs/durability.md): exit 3 and the JSON of a waiting run, answers refused with their
codes, a resume after editing the source refused with the name of what changed, and the
run going on once the source is back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROGRAM = '''agent writer { model: "scripted", role: "release notes writer", script: [when("notes", "v2 notes")] }
let notes = writer("notes")
let ok = approve "Publish ${notes}?"
let channel = ask "Where?" choice ["blog", "mail"]
ok ? "published ${notes} on ${channel}" : "kept"
'''


def flow(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flow_kernel.cli", *args], cwd=folder, capture_output=True,
                          text=True, timeout=120)


def test_defer_answer_runs_and_resume_from_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "release.flow").write_text(PROGRAM, encoding="utf-8")
    waiting = flow(tmp_path, "run", "release.flow", "--operator", "defer", "--format", "json")
    assert waiting.returncode == 3, waiting.stderr
    shown = json.loads(waiting.stdout)
    run = shown["run"]
    assert shown["ok"] is None and shown["status"] == "waiting"
    (pending,) = shown["pending"]
    assert pending == {"id": pending["id"], "kind": "approve", "question": "Publish v2 notes?", "details": None,
                       "choices": None}

    listed = json.loads(flow(tmp_path, "runs", "--waiting", "--format", "json").stdout)
    assert [(r["run"], r["status"], r["pending"]) for r in listed] == [(run, "waiting", [pending])]

    wrong = flow(tmp_path, "answer", run, pending["id"], "yes please")
    assert wrong.returncode == 1 and "error[bad-answer]" in wrong.stderr
    assert flow(tmp_path, "answer", run, pending["id"], "true").returncode == 0
    twice = flow(tmp_path, "answer", run, pending["id"], "false")
    assert twice.returncode == 1 and "error[already-answered]" in twice.stderr
    unknown = flow(tmp_path, "answer", "r000000000000", pending["id"], "true")
    assert unknown.returncode == 1 and "error[unknown-run]" in unknown.stderr

    # the source edited: the resume is refused, naming the declaration
    (tmp_path / "release.flow").write_text(PROGRAM.replace("release notes writer", "poet"), encoding="utf-8")
    refused = flow(tmp_path, "resume", run)
    assert refused.returncode == 1
    assert "error[source-changed]" in refused.stderr and "the declaration `writer` changed" in refused.stderr
    (tmp_path / "release.flow").write_text(PROGRAM, encoding="utf-8")

    # the approval answered, the run goes on and defers again at the question (the same policy)
    asked = flow(tmp_path, "resume", run, "--format", "json")
    assert asked.returncode == 3, asked.stderr
    (question,) = json.loads(asked.stdout)["pending"]
    assert question["kind"] == "ask" and question["choices"] == ["blog", "mail"] and question["id"] != pending["id"]
    assert flow(tmp_path, "answer", run, question["id"], "mail").returncode == 0  # typed as text
    done = flow(tmp_path, "resume", run, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"ok": True, "result": "published v2 notes on mail", "run": run}
    statuses = flow(tmp_path, "runs")
    assert run in statuses.stdout and "completed" in statuses.stdout
    ended = flow(tmp_path, "resume", run)
    assert ended.returncode == 1 and "error[run-ended]" in ended.stderr

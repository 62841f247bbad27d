"""`flow cancel` as a person types it (docs/durability.md): a `flow run` going on in another
process (a real sandbox, a `run` child that would sleep for a minute) cancelled from here —
its journal ends `cancelled` by `flow cancel`, `flow runs` says so, `flow resume` refuses
it — and the refusals of an ended run and of ids that are not run ids."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from flow_kernel.runtime.durable.journal import read_checkpoint
from flow_kernel.runtime.durable.resume import list_runs

SLOW = 'let slept = run "sleep" ["60"]\nprint("never")\nslept.stdout\n'


def flow(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "flow_kernel.cli", *args], cwd=folder, capture_output=True,
                          text=True, timeout=120)


def running_run(folder: Path) -> str | None:
    """The run `flow runs` would say is running (read here: a command a poll would be slow)."""
    return next((info.run for info in list_runs(folder / ".flow" / "runs") if info.status == "running"), None)


def test_a_run_in_another_process_is_cancelled_by_flow_cancel(tmp_path: Path) -> None:
    (tmp_path / "slow.flow").write_text(SLOW, encoding="utf-8")
    child = subprocess.Popen([sys.executable, "-m", "flow_kernel.cli", "run", "slow.flow", "--allow-run", "sleep 60",
                              "--format", "json"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        give_up = time.monotonic() + 90  # a bound on a slow machine, not a measure of speed
        run = None
        while run is None and child.poll() is None and time.monotonic() < give_up:
            run = running_run(tmp_path)
            time.sleep(0.2)
        assert run is not None, child.communicate(timeout=30)
        cancelled = flow(tmp_path, "cancel", run, "--wait", "60", "--format", "json")
        assert cancelled.returncode == 0, cancelled.stderr
        assert json.loads(cancelled.stdout) == {"ok": True, "run": run, "status": "cancelled"}
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 1, err
    result = json.loads(out)
    assert result["ok"] is False and result["error"]["code"] == "cancelled"
    assert result["error"]["details"]["by"] == "flow cancel" and "never" not in out
    assert "never retrieved" not in err and "Traceback" not in err

    journal = tmp_path / ".flow" / "runs" / f"{run}.jsonl"
    checkpoint = read_checkpoint(journal)
    assert checkpoint.status == "cancelled" and checkpoint.ends[-1]["by"] == "flow cancel"
    assert sorted(p.name for p in journal.parent.iterdir()) == [journal.name]  # the request was taken away
    listed = flow(tmp_path, "runs")
    assert f"{run}   cancelled by flow cancel" in listed.stdout
    resumed = flow(tmp_path, "resume", run)
    assert resumed.returncode == 1 and "error[run-ended]" in resumed.stderr and "cancelled by flow cancel" in resumed.stderr
    again = flow(tmp_path, "cancel", run)
    assert again.returncode == 1 and "error[run-ended]" in again.stderr and "nothing to cancel" in again.stderr


def test_flow_cancel_refuses_what_names_no_run(tmp_path: Path) -> None:
    for bad in ("../../etc/passwd", "r0123"):
        refused = flow(tmp_path, "cancel", bad)
        assert refused.returncode == 1 and "error[unknown-run]" in refused.stderr and "not a run id" in refused.stderr
    unknown = flow(tmp_path, "cancel", "r0123456789ab", "--format", "json")
    assert unknown.returncode == 1
    assert json.loads(unknown.stdout)["error"]["code"] == "unknown-run"
    assert not (tmp_path / ".flow").exists() or not any((tmp_path / ".flow").rglob("*.cancel"))

"""`flow eval` and `flow batch` as a person runs them: exit codes, bad data lines on stderr,
and `--resume` after the eval was killed with SIGKILL halfway."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from flow_kernel.cli import main as flow_main
from tests.eval.cases import FAILING, PROGRAM, write_cases

FLOW = [sys.executable, "-m", "flow_kernel.cli"]


def flow(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([*FLOW, *args], cwd=cwd, capture_output=True, text=True, timeout=240, env=env)


def in_process(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """`flow ARGS` in this process (the same `main` as the command): (exit code, stdout, stderr)."""
    def run(*args: str) -> tuple[int, str, str]:
        code = flow_main(list(args))
        out, err = capsys.readouterr()
        return code, out, err
    return run


def test_exit_codes_and_bad_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "parity.flow").write_text(PROGRAM)
    write_cases(tmp_path / "cases.jsonl", 40)  # the three bad lines fall after 40 cases: at 41+
    data = (tmp_path / "cases.jsonl").read_text().splitlines()
    data.insert(5, "{oops")
    (tmp_path / "cases.jsonl").write_text("\n".join(data) + "\n")
    # n36 fails its run, n9/n19/n29/n39 are misclassified: parity 35/40
    ok = flow("eval", "parity.flow", "classify", "--data", "cases.jsonl", "--scorer", "field:parity,min=0.85",
              "--format", "json", "--concurrency", "2", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    report = json.loads(ok.stdout)
    assert report["summary"]["scorers"]["field:parity"]["pass_rate"] == 0.875
    assert report["summary"]["failures"] == {"assertion": 1}
    assert "cases.jsonl line 6: not JSON" in ok.stderr and "(skipped)" in ok.stderr
    assert [s["line"] for s in report["skipped"]] == [6, 42, 43, 44]
    # the rest in this process (the same `main` as the `flow` command), the scoring on the sandbox all the same
    monkeypatch.chdir(tmp_path)

    run = in_process(capsys)

    code, out, _ = run("eval", "parity.flow", "classify", "--data", "cases.jsonl", "--scorer", "field:parity")
    assert code == 1 and "NOT PASSED" in out and "field:parity" in out
    code, out, _ = run("batch", "parity.flow", "classify", "--data", "cases.jsonl")
    assert code == 1 and "failures: assertion x1" in out  # one item's run failed
    (tmp_path / "fine.jsonl").write_text('{"n": 1}\n{"n": 2}\n')
    assert run("batch", "parity.flow", "classify", "--data", "fine.jsonl")[0] == 0
    for args, message in [
        (["eval", "parity.flow", "nope", "--data", "cases.jsonl"], "`nope` is not a workflow"),
        (["eval", "parity.flow", "classify", "--data", "cases.jsonl", "--scorer", "fuzzy"], "unknown scorer"),
        (["eval", "parity.flow", "classify", "--data", "absent.jsonl"], "cannot read the data"),
        (["eval", "parity.flow", "classify", "--data", "cases.jsonl", "--resume"], "--resume needs --out"),
        (["eval", "parity.flow", "classify", "--data", "cases.txt"], "cannot read the data"),
        (["eval", "parity.flow", "classify", "--data", "cases.jsonl", "--concurrency", "0"], "at least 1"),
        (["eval", "parity.flow", "classify"], "--data"),
    ]:
        code, _, err = run(*args)
        assert code == 2 and message in err, (args, err)
    (tmp_path / "broken.flow").write_text("workflow classify(n: int) -> int { return nope }\n")
    code, _, err = run("eval", "broken.flow", "classify", "--data", "cases.jsonl")
    assert code == 2 and "F2001" in err



def test_an_eval_with_no_scorer_scores_exact_or_says_there_is_nothing_to_score(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`flow eval` with no --scorer compares with the data's `expected` by `exact` (n9 is
    misclassified: 11 of 12 pass); with no `expected` anywhere it refuses before anything
    runs, naming the way out. `flow batch` on the same data still scores nothing."""
    (tmp_path / "parity.flow").write_text(PROGRAM)
    write_cases(tmp_path / "cases.jsonl", 12, bad=False)
    (tmp_path / "inputs.jsonl").write_text("".join(f'{{"n": {n}}}\n' for n in range(3)))
    monkeypatch.chdir(tmp_path)

    run = in_process(capsys)

    code, out, _ = run("eval", "parity.flow", "classify", "--data", "cases.jsonl", "--format", "json")
    report = json.loads(out)
    assert code == 1 and report["scorers"] == ["exact"]
    assert report["summary"]["scorers"]["exact"]["pass_rate"] == round(11 / 12, 4)
    assert [i["id"] for i in report["items"] if not i["passed"]] == ["n9"]
    code, out, _ = run("eval", "parity.flow", "classify", "--data", "cases.jsonl")
    assert code == 1 and out.startswith("eval of classify on cases.jsonl") and "\n  exact " in out
    code, out, err = run("eval", "parity.flow", "classify", "--data", "inputs.jsonl")
    assert (code, out) == (2, "")
    assert err == ("flow eval: error: nothing to score: no scorer was named and no case of inputs.jsonl has "
                   "`expected`; name one (--scorer exact, field:PATH, schema:FILE, workflow:NAME, judge:AGENT, ...), "
                   "or run the cases unscored with `flow batch`\n")
    code, out, _ = run("batch", "parity.flow", "classify", "--data", "cases.jsonl", "--format", "json")
    assert code == 0 and json.loads(out)["scorers"] == [] and json.loads(out)["summary"]["scorers"] == {}

def test_resume_after_sigkill_halfway(tmp_path: Path) -> None:
    """Killed with SIGKILL once half the items are in the results file; `--resume` runs only
    the missing and the failed ones, and the file ends with every item exactly once counted."""
    slow = PROGRAM.replace('{ label: "even" }),', 'slow(60ms, { label: "even" })),', 1)
    (tmp_path / "parity.flow").write_text(slow)
    n = 60
    write_cases(tmp_path / "cases.jsonl", n, bad=False)
    args = ["eval", "parity.flow", "classify", "--data", "cases.jsonl", "--scorer", "field:parity",
            "--concurrency", "2", "--out", "results.jsonl"]
    process = subprocess.Popen([*FLOW, *args], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    results = tmp_path / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if results.exists() and len(results.read_text().splitlines()) > n // 2:
            break
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # the eval and its sandboxes, at once
    process.wait()
    before = [json.loads(line) for line in results.read_text().splitlines()[1:] if line.endswith("}")]
    assert n // 2 <= len(before) < n, len(before)
    done_ids = {r["id"] for r in before if r["error"] is None}
    resumed = flow(*args, "--resume", "--format", "json", cwd=tmp_path)
    assert resumed.returncode == 1, resumed.stderr  # misclassified items: parity below 100%
    report = json.loads(resumed.stdout)
    assert report["resumed"] == len(done_ids)
    lines = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    items = [r for r in lines[1:] if r.get("kind") == "item"]
    rerun = [r["id"] for r in items[len(before):]]
    assert not set(rerun) & done_ids  # nothing that was done ran again
    failed_before = {r["id"] for r in before if r["error"] is not None}
    assert set(rerun) == {f"n{i}" for i in range(n)} - done_ids  # the missing, and the failed again
    assert failed_before <= set(rerun)
    last = {r["id"]: r for r in items}
    assert len(last) == n and report["summary"]["items"] == n
    assert report["summary"]["failures"] == {"assertion": len([i for i in FAILING if i < n])}

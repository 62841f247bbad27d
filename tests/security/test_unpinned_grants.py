"""A grant of `run` by name alone (`--allow-run sort`, `%allow run sort`) lets the program
run a shell through the executable's own flags (`sort --compress-program=sh`,
test_run_doors.py). Flow says so, once a run, on stderr: `flow run`, `flow eval`, `flow
serve`, `flow resume` when they start, the kernel's `%allow run` when it grants it; a
pinned grant (`--allow-run 'sort -n'`) is said nothing of. The reopened twin switches
the warning off: the same run then starts a shell through `sort` without a word."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flow_kernel.cli import main
from flow_kernel.runtime.policy import processes
from tests.kernel.kernel_helpers import execute, start
from tests.security.test_run_doors import sort_attack

WARNING = "any arguments: pin them with 'sort ARGS'"
# Two `run`s of sort in one run: the warning is about the grant, said once, not per call.
TWICE = 'let a = run "sort" ["-n"] stdin "2\\n1\\n"\nlet b = run "sort" ["-r"] stdin "1\\n2\\n"\na.stdout + b.stdout'


def flow_run(capsys: pytest.CaptureFixture[str], tmp_path: Path, source: str, *grants: str) -> tuple[int, str, str]:
    (tmp_path / "p.flow").write_text(source, encoding="utf-8")
    code = main(["run", str(tmp_path / "p.flow"), *(f"--allow-run={g}" for g in grants)])
    out, err = capsys.readouterr()
    return code, out, err


def test_flow_run_warns_once_of_a_grant_by_name(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = flow_run(capsys, tmp_path, TWICE, "sort", "echo hi")
    assert code == 0 and out == "1\n2\n2\n1\n\n", err
    assert err.count(WARNING) == 1
    assert err.count("any arguments") == 1  # `echo hi` is pinned


def test_flow_run_says_nothing_of_a_pinned_grant(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = flow_run(capsys, tmp_path, TWICE, "sort -n", "sort -r")
    assert code == 0 and out == "1\n2\n2\n1\n\n", err
    assert "any arguments" not in err


def test_the_warned_grant_is_the_one_a_shell_gets_through(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    marker = tmp_path / "sorted-shell"
    _, _, err = flow_run(capsys, tmp_path, sort_attack(marker), "sort")
    assert marker.exists()  # the door the warning is about: open (sort then exits 2), and said
    assert err.count(WARNING) == 1


def test_reopened_without_the_warning_the_shell_runs_unsaid(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "unpinned", lambda entries: [])
    marker = tmp_path / "sorted-shell"
    _, _, err = flow_run(capsys, tmp_path, sort_attack(marker), "sort")
    assert marker.exists()
    assert "any arguments" not in err


def test_which_grants_are_any_arguments() -> None:
    assert processes.unpinned(["sort", "git log *", "echo hi", "find *", "tar -x", "wc", "/bin/sh", "'bad"]) == \
        ["find", "sort", "wc"]  # a name alone or `NAME *`; a malformed entry grants nothing
    assert processes.unpinned(["sort -n", "sort"]) == ["sort"]  # the name alone wins, as in RunPolicy


def test_the_kernel_says_it_once_on_stderr(tmp_path: Path) -> None:
    """Granted by FLOW_ALLOW and again by `%allow run`: named above the first cell's output, once."""
    km, kc = start(tmp_path, live_view=False, allow="run:sort")
    try:
        first = execute(kc, "1 + 1")
        again = execute(kc, "%allow run sort\n" + TWICE)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert first.status == "ok" and again.status == "ok" and again.result == "1\n2\n2\n1\n"
    said = [c["text"] for reply in (first, again) for c in reply.of("stream") if c["name"] == "stderr"]
    assert "".join(said).count(WARNING) == 1 and WARNING in "".join(c["text"] for c in first.of("stream"))


def test_flow_serve_warns_once_as_it_starts() -> None:
    """`flow serve` over stdio with no client (stdin closed): it says it before it serves."""
    hello = Path(__file__).resolve().parents[2] / "examples" / "hello.flow"
    done = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "serve", str(hello), "--mcp",
                           "--allow-run", "sort", "--allow-run", "git log *"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.stderr.count(WARNING) == 1 and done.stderr.count("any arguments") == 1, done.stderr

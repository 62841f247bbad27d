"""A scripted agent's run killed (SIGKILL, a real `flow run` child) at every call boundary and
resumed with `flow resume` ends with the uninterrupted run's result (docs/durability.md): the
script's cursor is where the journal's attempts left it, not back at its first entry.

A boundary is the journal holding k of the run's calls; each entry is `slow(…)`, so the run
waits at each boundary long enough to be killed there. The kills are chained: the run is
killed after its first call, its resume after the second, … then resumed to the end.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from tests.reliability.test_kill_resume import FLOW, journaled_calls

CALLS = 6
SEQUENTIAL = '''agent a { model: "scripted", script: [SCRIPT] }
var answers = []
for i in range(CALLS) {
  answers = answers + [a("call ${i}")]
}
answers
'''.replace("SCRIPT", ", ".join(f'slow(400ms, "c{n}")' for n in range(1, CALLS + 1))).replace("CALLS", str(CALLS))
# parallelMap starts its items in input order, so item n takes entry n; the delays make them
# end (and be journaled) one after another.
PARALLEL = '''agent a { model: "scripted", script: [SCRIPT] }
parallelMap(["w", "x", "y", "z"], t => a("item ${t}"))
'''.replace("SCRIPT", ", ".join(f'slow({200 + 900 * n}ms, "p{n + 1}")' for n in range(4)))


def start(folder: Path, run_id: str | None) -> subprocess.Popen[str]:
    command = [*FLOW, "run", "prog.flow"] if run_id is None else [*FLOW, "resume", run_id]
    return subprocess.Popen([*command, "--format", "json"], cwd=folder, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def kill_when_journal_holds(folder: Path, process: subprocess.Popen[str], calls: int) -> int:
    """SIGKILL `process` once the journal holds `calls` calls; the calls it then holds."""
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if journaled_calls(folder)[1] >= calls:
            process.kill()
            break
        time.sleep(0.01)
    process.communicate(timeout=120)
    assert process.returncode == -signal.SIGKILL, f"the run ended before its journal held {calls} calls"
    return journaled_calls(folder)[1]


def finished(folder: Path, process: subprocess.Popen[str]) -> object:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, (out, err)
    return json.loads(out)["result"]


def killed_at_each_boundary(folder: Path, program: str, boundaries: range) -> tuple[object, list[int]]:
    """The program run, killed once its journal holds each of `boundaries` calls (a resume each
    time), then resumed to its end: its result, and the calls journaled at each kill."""
    (folder / "prog.flow").write_text(program, encoding="utf-8")
    held: list[int] = []
    for boundary in boundaries:
        run_id = journaled_calls(folder)[0]
        held.append(kill_when_journal_holds(folder, start(folder, run_id), max(boundary, held[-1] if held else 0)))
    return finished(folder, start(folder, journaled_calls(folder)[0])), held


def test_a_scripted_run_killed_at_every_call_boundary_resumes_to_the_uninterrupted_result(tmp_path: Path) -> None:
    (tmp_path / "whole").mkdir()
    (tmp_path / "whole" / "prog.flow").write_text(SEQUENTIAL, encoding="utf-8")
    uninterrupted = finished(tmp_path / "whole", start(tmp_path / "whole", None))
    assert uninterrupted == [f"c{n}" for n in range(1, CALLS + 1)]

    (tmp_path / "killed").mkdir()
    result, held = killed_at_each_boundary(tmp_path / "killed", SEQUENTIAL, range(1, CALLS))
    assert all(0 < h < CALLS for h in held), held  # every kill left a run to resume
    assert result == uninterrupted, held


def test_a_scripted_parallel_map_killed_mid_fan_out_resumes_to_the_uninterrupted_result(tmp_path: Path) -> None:
    (tmp_path / "whole").mkdir()
    (tmp_path / "whole" / "prog.flow").write_text(PARALLEL, encoding="utf-8")
    uninterrupted = finished(tmp_path / "whole", start(tmp_path / "whole", None))
    assert uninterrupted == ["p1", "p2", "p3", "p4"]

    (tmp_path / "killed").mkdir()
    result, held = killed_at_each_boundary(tmp_path / "killed", PARALLEL, range(2, 3))
    assert all(0 < h < 4 for h in held), held
    assert result == uninterrupted, held

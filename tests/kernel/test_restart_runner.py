"""`CellRunner.shutdown` (frontend/cell.py), what a kernel's shutdown or restart calls: a
run going on in the background and a cell's run both stop, their views close with the
summary of what happened (`interrupted`), and their journals end `interrupted` (resumable).
In a process of its own: shutting down marks the whole process as ending."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from flow_kernel.runtime.durable.journal import read_checkpoint
from flow_kernel.runtime.durable.resume import list_runs

SCRIPT = r'''
import asyncio, json, sys
from pathlib import Path
from flow_kernel.frontend import CellRunner
from flow_kernel.runtime.session import Session
from tests.frontend.test_cell import NotebookPort

class WatchedPort(NotebookPort):
    """A notebook whose runs have the live view the kernel gives (views/run_view.py)."""

    def open_view(self, title, run_id, agents):
        from flow_kernel.views.run_view import RunView

        return RunView(title, run_id, agents=agents)


SLOW = 'agent s { model: "scripted", script: [slow(30s, "done")] }\ns("take your time")'


async def main(folder: Path) -> dict:
    runner = CellRunner(Session(directory=folder))
    port = WatchedPort(answers=[])
    await runner.run_cell("%background\n" + SLOW, port)
    cell = asyncio.ensure_future(runner.run_cell(SLOW, port))
    while len(runner.running) < 2 or any(live.view is None for live in runner.live.values()):
        await asyncio.sleep(0.01)  # until both runs are in their calls, their views open
    await runner.shutdown()
    end = await cell
    return {"summaries": {run: (bundle or {}).get("text/plain") for run, bundle in port.summaries_shown.items()},
            "cell_error": end.error.name if end.error else None, "running": len(runner.running)}

print(json.dumps(asyncio.run(main(Path(sys.argv[1])))))
'''


def test_shutdown_stops_every_run_as_interrupted(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["running"] == 0 and said["cell_error"] == "cancelled"
    assert len(said["summaries"]) == 2
    assert all("Flow run: interrupted" in str(text) for text in said["summaries"].values()), said
    infos = list_runs(tmp_path / ".flow" / "runs")
    assert sorted(i.status for i in infos) == ["interrupted", "interrupted"]
    for info in infos:
        end = read_checkpoint(tmp_path / ".flow" / "runs" / f"{info.run}.jsonl").ends[-1]
        assert end["status"] == "interrupted"

"""Notebooks with the Flow kernel: executed by nbclient (cells depending on earlier
cells), and a committed notebook checked by nbval, as the gallery will be."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.kernel.make_notebook import GRANTS, HERE, execute, notebook

GRANTED = {**os.environ, "FLOW_ALLOW": GRANTS}  # the person's grant for the headless run


def test_nbclient_runs_cells_that_depend_on_earlier_cells(tmp_path: Path) -> None:
    done = execute(notebook(), tmp_path)
    outputs = [cell.outputs for cell in done.cells]
    assert [o["text"] for o in outputs[0]] == ["loaded 2 tickets\n"]  # no agents, stages…: no run view
    assert outputs[1] == []  # declarations only
    summary, result = outputs[2]  # headless: no live view, the summary and the result (once)
    lines = summary["data"]["text/plain"].splitlines()
    assert lines[0] == "Flow run: completed"
    assert lines[2:4] == ["  ✓ parallelMap triager: 2 calls: 2 done",
                          '    ✓ agent triager #1 "Refund"  1 attempt → {"id": "T1", "urgent": true}']
    assert "[true, false]" not in summary["data"]["text/plain"]
    assert result["data"]["text/plain"] == "[true, false]"
    assert outputs[3][-1]["data"]["text/plain"] == "true"
    assert '  approve "Escalate 1 ticket?" → yes (auto-approve)' in outputs[3][-2]["data"]["text/plain"]
    assert "let       triaged: {id: string, urgent: bool}[]" in outputs[4][0]["data"]["text/plain"]
    assert (tmp_path / ".flow" / "runs").is_dir()  # the journal is beside the notebook


def test_nbval_passes_on_the_committed_notebook(tmp_path: Path) -> None:
    shutil.copy(HERE / "cells.ipynb", tmp_path / "cells.ipynb")
    proc = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "-q", "-p", "no:cacheprovider", "cells.ipynb"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=GRANTED)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "5 passed" in proc.stdout


def test_nbval_fails_when_an_output_changes(tmp_path: Path) -> None:
    text = (HERE / "cells.ipynb").read_text(encoding="utf-8").replace("loaded 2 tickets", "loaded 3 tickets")
    (tmp_path / "cells.ipynb").write_text(text, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "-q", "-p", "no:cacheprovider", "cells.ipynb"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=GRANTED)
    assert proc.returncode != 0 and "1 failed" in proc.stdout

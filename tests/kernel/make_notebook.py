"""Writes tests/kernel/notebooks/cells.ipynb with its outputs, by running it with nbclient
in the Flow kernel (`python -m tests.kernel.make_notebook`). The test checks it with nbval."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).parent / "notebooks"
# Cell 4's `%operator auto-approve` answers for the person: nbclient and nbval are headless,
# so the person's grant comes in FLOW_ALLOW (docs/security.md), never from the notebook.
GRANTS = "operator:auto-approve"

CELLS = [
    "type Ticket = { id: string, title: string }\n"
    'let tickets: Ticket[] = [{ id: "T1", title: "Refund" }, { id: "T2", title: "Login" }]\n'
    'print "loaded ${len(tickets)} tickets"',
    'agent triager {\n  model: "scripted"\n  output: { id: string, urgent: bool }\n'
    '  script: [when("Refund", { id: "T1", urgent: true }), { id: "T2", urgent: false }]\n}',
    'let triaged = parallelMap(tickets, t => triager("${t.title}"))\ntriaged[*].urgent',
    "%operator auto-approve\n"
    'let ok = approve "Escalate ${count(triaged, r => r.urgent)} ticket?"\nok',
    "%who",
]


def notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "flow", "display_name": "Flow", "language": "flow"}
    nb.metadata["language_info"] = {"name": "flow"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    return nb


def execute(nb: nbformat.NotebookNode, cwd: Path) -> nbformat.NotebookNode:
    NotebookClient(nb, timeout=120, kernel_name="flow", resources={"metadata": {"path": str(cwd)}}).execute(
        env={**os.environ, "FLOW_ALLOW": GRANTS})
    return nb


if __name__ == "__main__":
    HERE.mkdir(exist_ok=True)
    done = execute(notebook(), HERE)
    nbformat.write(done, HERE / "cells.ipynb")

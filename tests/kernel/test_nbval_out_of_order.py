"""A notebook saved after its cells were run out of order and re-run still passes nbval
(issue 18, item 4): a run is named by its cell's text, not the execution count, and a cell
run again is the same cell — no F7003 against itself, no name that depends on the order.

The session is what a person does in JupyterLab: cell 1, 3, 2, then 1 and 2 again (over the
real protocol, each cell's last outputs kept as the frontend saves them); then nbval runs
the saved notebook top to bottom in a fresh kernel and compares every output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat

from flow_kernel.frontend.cell import cell_name
from tests.kernel.kernel_helpers import Reply, execute, start

CELLS = [
    'agent triager {\n  model: "scripted"\n  output: { id: string, severity: "low" | "high" }\n'
    '  script: [{ id: "T1", severity: "low" }]\n}',
    'pipeline "triage" {\n  stage "classify" {\n    let r = parallelMap(["a", "b"], t => triager("Ticket ${t}"))\n'
    '    log "triaged ${len(r)}"\n  }\n}\nlen(r)',
    'type Severity = "low" | "high"\nlet n = 40 + 2\nn',
]
ORDER = [0, 2, 1, 0, 1]  # 3 before 2, then 1 and 2 again


def _outputs(reply: Reply, count: int) -> list[Any]:
    """The outputs a frontend saves for this execution (a display update replaces its display)."""
    outputs: list[Any] = []
    for msg in reply.outputs:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            outputs.append(nbformat.v4.new_output("stream", name=content["name"], text=content["text"]))
        elif kind == "display_data":
            outputs.append(nbformat.v4.new_output("display_data", data=content["data"]))
        elif kind == "execute_result":
            outputs.append(nbformat.v4.new_output("execute_result", data=content["data"], execution_count=count))
        elif kind == "error":
            outputs.append(nbformat.v4.new_output("error", ename=content["ename"], evalue=content["evalue"],
                                                  traceback=content["traceback"]))
    return outputs


def test_nbval_passes_after_cells_ran_out_of_order_and_again(tmp_path: Path) -> None:
    km, kc = start(tmp_path)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "flow", "display_name": "Flow", "language": "flow"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    try:
        for count, index in enumerate(ORDER, 1):
            reply = execute(kc, CELLS[index])
            assert reply.status == "ok", reply.outputs
            streams = [c["text"] for c in reply.of("stream")]
            assert not any("F7003" in s for s in streams), streams  # the same cell again: quiet
            nb.cells[index].outputs = _outputs(reply, count)
            nb.cells[index].execution_count = count
        # A different cell redefining a name is still told.
        other = execute(kc, 'agent triager { model: "scripted", script: ["x"] }')
        assert any("F7003" in c["text"] for c in other.of("stream")), other.outputs
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    summary = "".join(o["data"]["text/plain"] for o in nb.cells[1].outputs if o["output_type"] == "display_data")
    assert "parallelMap triager: 2 calls: 2 done" in summary and "<cell 5>" not in summary
    path = tmp_path / "out-of-order.ipynb"
    nbformat.write(nb, path)
    proc = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "-q", "-p", "no:cacheprovider", str(path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "3 passed" in proc.stdout


def test_a_cell_is_named_by_its_text() -> None:
    assert cell_name("let n = 1") == cell_name("let n = 1\n") != cell_name("let n = 2")
    assert cell_name("x").startswith("<cell ") and len(cell_name("x")) == len("<cell 123456>")

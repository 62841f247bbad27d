"""The front ends' common ground: the cell runner (`cell.py`) and its port (`port.py`),
what a cell shows (`outputs.py`), the magic registry
(`magics.py`, with the runner's own magics in `run_magics.py`), and what `%eval` and
`%resume` do (`eval_magic.py`, `resume_magic.py`).

A layer between `runtime` (and `views`) and the front ends — the Flow kernel, `%%flow`, the
`flow` command, `flow serve`: they import it, it imports none of them. The model is
ipykernel's: one owner of the cell pipeline (IPython's `run_cell`), and kernels that only
adapt I/O to it. Each front end used to write the pipeline out itself (magics →
capabilities → compile → diagnostics → view → run → result), four times over, with the
"run is waiting" text twice and flags turned into grants four times (now
runtime/policy/grants.py); a new front end is now one `CellPort` implementation.
"""

from flow_kernel.frontend import run_magics as _run_magics  # noqa: F401 - registers the runner magics
from flow_kernel.frontend.cell import CellEnd, CellError, CellRunner
from flow_kernel.frontend.port import CellPort, HeadlessPort

__all__ = ["CellEnd", "CellError", "CellPort", "CellRunner", "HeadlessPort"]

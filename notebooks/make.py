"""Builds the teaching gallery: every `NN-name.ipynb` beside this file, from the lessons
in `lessons/` (one Python module a notebook). Each notebook is executed with the kernel
it names and saved with its outputs, so the committed notebooks read well on GitHub and
`pytest --nbval notebooks/` checks that they still produce the same outputs. Run ids and
times are saved as nbval reads them (`sanitize.cfg`, which `conftest.py` hands to nbval),
and the run journals the lessons write (`.flow/runs` here) are removed before and after.

    python notebooks/make.py          # all notebooks
    python notebooks/make.py 03       # the notebook(s) whose name starts with 03

Lessons 6, 7, 10 and 15 use capabilities only the person grants (`%tools`, `%allow run`,
`auto-approve`, `answers:`), and lesson 13 the MCP servers of the folder's flow.toml, so the
folder must be trusted first: `flow trust notebooks` (scripts/gallery does it; docs/kernel.md).
"""

from __future__ import annotations

import configparser
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the lessons package lives beside this file

from lessons import Cell, load_all  # noqa: E402

NOTEBOOKS: dict[str, list[Cell]] = load_all()
PYTHON_NOTEBOOKS = {"10-flow-from-python"}  # run in the IPython kernel with %%flow, not the Flow kernel


# -- building --------------------------------------------------------------------------------
def build(name: str, cells: list[Cell]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    if name in PYTHON_NOTEBOOKS:
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
        nb.metadata["language_info"] = {"name": "python"}
    else:
        nb.metadata["kernelspec"] = {"name": "flow", "display_name": "Flow", "language": "flow"}
        nb.metadata["language_info"] = {"name": "flow"}
    for index, cell in enumerate(cells):
        node = nbformat.v4.new_markdown_cell(cell.source) if cell.kind == "markdown" else \
            nbformat.v4.new_code_cell(cell.source)
        node.id = f"{name[:2]}-{index:02d}"  # stable ids: a rebuild changes no cell id
        if cell.tags:
            node.metadata["tags"] = list(cell.tags)
        nb.cells.append(node)
    return nb


def execute(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Run every cell in the notebook's kernel; a cell tagged raises-exception may fail, no other."""
    client = NotebookClient(nb, timeout=120, kernel_name=nb.metadata["kernelspec"]["name"], resources={"metadata": {"path": str(HERE)}},
                            allow_errors=False, record_timing=False)
    client.execute()
    return nb


def sanitizers() -> list[tuple[re.Pattern[str], str]]:
    """nbval's sanitizers of the gallery (sanitize.cfg; conftest.py hands them to nbval)."""
    config = configparser.ConfigParser(interpolation=None)
    config.read(HERE / "sanitize.cfg", encoding="utf-8")
    return [(re.compile(config[s]["regex"]), config[s]["replace"]) for s in config.sections()]


def sanitize(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Saved outputs read a run id and a time as nbval reads them (RUN-ID, TIMESTAMP): the
    same every build, and what nbval compares a fresh execution's outputs with."""
    patterns = sanitizers()

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            for pattern, replace in patterns:
                value = pattern.sub(replace, value)
            return value
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        return value

    for cell in nb.cells:
        for output in cell.get("outputs", []):
            for key in ("text", "data", "evalue", "traceback"):
                if key in output:
                    output[key] = clean(output[key])
    return nbformat.from_dict(nb)


def make(name: str) -> Path:
    nb = sanitize(execute(build(name, NOTEBOOKS[name])))
    path = HERE / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def main(argv: list[str]) -> int:
    from flow_kernel.runtime.policy.trust import TrustStore

    if not TrustStore().is_trusted(HERE):
        print(f"{HERE} is not trusted: its lessons use %tools, %allow run and auto-approve, which only you "
              "grant. Run `flow trust notebooks` first (docs/kernel.md).", file=sys.stderr)
        return 2
    wanted = [n for n in NOTEBOOKS if not argv or any(n.startswith(a) for a in argv)]
    if not wanted:
        print(f"no notebook matches {' '.join(argv)}; they are: {', '.join(NOTEBOOKS)}", file=sys.stderr)
        return 2
    # The run journals are not part of the gallery: none left from an earlier build or a
    # session in this folder (lesson 15 lists the waiting runs), none left after.
    shutil.rmtree(HERE / ".flow", ignore_errors=True)
    try:
        for name in wanted:
            print(f"{make(name).relative_to(HERE.parent)}", flush=True)
    finally:
        shutil.rmtree(HERE / ".flow", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The teaching gallery (notebooks/): every notebook passes nbval with its committed outputs,
runs in the Flow kernel, is what notebooks/make.py says it is, and keeps no output that
would change from run to run (run ids, timestamps)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

GALLERY = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(GALLERY.glob("[0-9][0-9]-*.ipynb"))
RUN_ID = re.compile(r"\br[0-9a-f]{12}\b")
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"  # a model id, random, ignored by nbval


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _make() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gallery_make", GALLERY / "make.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def _texts(output: dict[str, Any]) -> list[str]:
    """Every text an output shows (nbval compares these)."""
    if output["output_type"] == "stream":
        return ["".join(output["text"])]
    if output["output_type"] == "error":
        return [output["ename"], output["evalue"], *output["traceback"]]
    texts = []
    for mime, value in output.get("data", {}).items():
        if mime == WIDGET_VIEW:
            continue
        if mime.endswith("json"):
            texts.append(json.dumps(value, ensure_ascii=False))
        else:  # nbformat stores text as a list of lines
            texts.append(value if isinstance(value, str) else "".join(value))
    return texts


def test_the_gallery_is_there() -> None:
    assert [p.name[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05", "06"]
    assert (GALLERY / "answers.json").is_file()
    assert not (GALLERY / ".flow").exists()  # make.py removes the run journals


def test_nbval_passes_on_every_notebook(tmp_path: Path) -> None:
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for path in [*NOTEBOOKS, GALLERY / "answers.json"]:
        shutil.copy(path, folder / path.name)
    report = tmp_path / "report.xml"
    proc = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "-q", "-p", "no:cacheprovider",
                           f"--junitxml={report}", "notebooks/"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    collected: dict[str, int] = {}
    for case in ET.parse(report).getroot().iter("testcase"):  # classname: notebooks.01-hello-flow.ipynb
        name = next((p.name for p in NOTEBOOKS if (case.get("classname") or "").endswith(p.name)), "?")
        collected[name] = collected.get(name, 0) + 1
    code_cells = {p.name: sum(1 for c in _load(p)["cells"] if c["cell_type"] == "code") for p in NOTEBOOKS}
    assert collected == code_cells


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_flow_and_deterministic(path: Path) -> None:
    nb = _load(path)
    assert nb["metadata"]["kernelspec"] == {"name": "flow", "display_name": "Flow", "language": "flow"}
    assert nb["metadata"]["language_info"]["name"] == "flow"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    for cell in code:
        assert cell["execution_count"] is not None, "every code cell was executed"
        for output in cell["outputs"]:
            for text in _texts(output):
                assert not RUN_ID.search(text), (cell["source"], text)
                assert not TIMESTAMP.search(text), (cell["source"], text)
        failed = any(o["output_type"] == "error" for o in cell["outputs"])
        assert failed == ("raises-exception" in cell["metadata"].get("tags", [])), cell["source"]


def test_notebooks_are_what_make_py_says() -> None:
    make = _make()
    assert sorted(make.NOTEBOOKS) == [p.stem for p in NOTEBOOKS]
    for path in NOTEBOOKS:
        cells = _load(path)["cells"]
        expected = make.NOTEBOOKS[path.stem]
        assert [(c["cell_type"], "".join(c["source"]), tuple(c["metadata"].get("tags", []))) for c in cells] == \
            [(c.kind, c.source, c.tags) for c in expected], f"{path.name} is stale: run python notebooks/make.py"

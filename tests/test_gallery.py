"""The teaching gallery (notebooks/): every notebook passes nbval with its committed outputs,
runs in the Flow kernel, is what notebooks/make.py says it is, and keeps no output that
would change from run to run (run ids, timestamps)."""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from flow_kernel.source import SourceFile

GALLERY = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(GALLERY.glob("[0-9][0-9]-*.ipynb"))
RUN_ID = re.compile(r"\br[0-9a-f]{12}\b")
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"  # a model id, random, ignored by nbval


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


@functools.cache
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
    numbers = [int(p.name[:2]) for p in NOTEBOOKS]
    assert numbers == list(range(1, 17))  # 16 lessons, none missing: README and docs/notebooks.md list them
    assert (GALLERY / "answers.json").is_file()
    tracked = subprocess.run(["git", "ls-files", "notebooks/.flow"], cwd=GALLERY.parent, capture_output=True, text=True)
    assert tracked.stdout == ""  # run journals are never part of the gallery (make.py removes them)


def test_nbval_passes_on_every_notebook(tmp_path: Path) -> None:
    # The notebooks with what they use beside them (answers, tools, cassettes), not the
    # lessons they are built from.
    shutil.copytree(GALLERY, tmp_path / "notebooks",
                    ignore=shutil.ignore_patterns("lessons", "make.py", ".flow", "__pycache__", ".ipynb_checkpoints"))
    # Lessons 6-8 and 10 use what only the person grants (%tools, %allow run, auto-approve,
    # answers:): the person trusts the gallery's folder, as scripts/gallery does and
    # docs/kernel.md says — here in the tests' own FLOW_CONFIG_HOME (tests/conftest.py).
    trusted = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "trust", "notebooks"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
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
    if path.stem in _make().PYTHON_NOTEBOOKS:  # %%flow in the IPython kernel
        assert nb["metadata"]["kernelspec"]["name"] == "python3"
    else:
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


# -- what the gallery teaches ----------------------------------------------------------------
# Every statement and expression form, provider, operator policy and runtime error code
# appears in at least one notebook cell (issue 7). Forms come from the syntax tree's own
# classes and operator tables, so a new form without a lesson fails this test.
def _flow_cells() -> list[tuple[str, dict[str, Any]]]:
    """(Flow source, cell) of every code cell: a Flow notebook's cells with their magic
    lines blanked, a Python notebook's `%%flow` cells without their first line."""
    cells = []
    for path in NOTEBOOKS:
        nb = _load(path)
        flow_kernel = nb["metadata"]["kernelspec"]["name"] == "flow"
        for cell in nb["cells"]:
            if cell["cell_type"] != "code":
                continue
            lines = "".join(cell["source"]).split("\n")
            if flow_kernel:
                cells.append(("\n".join("" if line.startswith("%") else line for line in lines), cell))
            elif lines[0].startswith("%%flow"):
                cells.append(("\n".join(lines[1:]), cell))
    return cells


def _nodes(node: object) -> Iterator[object]:
    """Every syntax node under `node` (a node or a list of them), itself included."""
    from dataclasses import fields

    from flow_kernel.lang import ast

    if isinstance(node, list):
        for item in node:
            yield from _nodes(item)
    elif isinstance(node, ast.Node):
        yield node
        for f in fields(node):
            yield from _nodes(getattr(node, f.name))


def _forms(node: object, seen: set[str]) -> None:
    from flow_kernel.lang import ast

    for n in _nodes(node):
        seen.add(type(n).__name__)
        if isinstance(n, ast.Binary | ast.Unary):
            seen.add(f"{type(n).__name__} {n.op}")
        if isinstance(n, ast.Member) and getattr(n, "optional", False):
            seen.add("Member ?.")


def _all_forms() -> set[str]:
    from flow_kernel.lang import ast
    from flow_kernel.lang.parse_expr import BINARY_PREC

    wanted = {cls.__name__ for base in (ast.Expr, ast.Stmt, ast.Decl) for cls in base.__subclasses__()}
    wanted -= {"ErrorExpr"}  # what the parser makes of broken code
    wanted |= {f"Binary {op}" for op in BINARY_PREC} | {"Unary -", "Unary not", "Member ?."}
    return wanted


def _outputs_text(cell: dict[str, Any]) -> str:
    return "\n".join(text for output in cell["outputs"] for text in _texts(output))


def test_every_statement_and_expression_form_is_in_a_cell() -> None:
    from flow_kernel.diagnostics import Reporter
    from flow_kernel.lang.parser import parse

    seen: set[str] = set()
    for source, _ in _flow_cells():
        _forms(parse(SourceFile("<cell>", source), Reporter()), seen)
    assert not _all_forms() - seen, f"no notebook cell uses: {sorted(_all_forms() - seen)}"


def test_every_provider_and_operator_policy_is_in_a_cell() -> None:
    from flow_kernel.runtime.policy.operator import POLICIES
    from flow_kernel.runtime.providers.table import PROVIDERS

    sources = ["".join(cell["source"]) for path in NOTEBOOKS for cell in _load(path)["cells"]
               if cell["cell_type"] == "code"]
    text = "\n".join(sources)
    providers = {name: f'model: "{name}"' if entry.local else f'model: "{name}/' for name, entry in PROVIDERS.items()}
    providers["replay"] = "%replay "
    missing = [name for name, needle in providers.items() if needle not in text]
    policies = [*POLICIES, "answers:"]
    missing += [f"operator {p}" for p in policies
                if not re.search(rf"(%operator|--operator) {re.escape(p)}", text)]
    assert not missing, f"no notebook cell shows: {missing}"


def test_functions_folds_and_prompt_variables_are_in_a_cell() -> None:
    # Flow 1.2's language (issue 33): functions, one called in a pure lambda and one in
    # parallelMap's, reduce and flatMap, a prompt file with values — and a diagnostic of
    # each shown on purpose (a wrong return, a lambda's arity, a placeholder with no value).
    from flow_kernel.diagnostics import Reporter
    from flow_kernel.lang import ast
    from flow_kernel.lang.parser import parse

    nodes = [n for source, _ in _flow_cells() for n in _nodes(parse(SourceFile("<cell>", source), Reporter()))]
    calls = [(n.callee.name, n) for n in nodes if isinstance(n, ast.Call) and isinstance(n.callee, ast.Name)]
    functions = {n.name.name for n in nodes if isinstance(n, ast.FnDecl)}
    assert functions, "no notebook cell declares a fn"
    assert {"reduce", "flatMap"} <= {name for name, _ in calls}
    in_lambdas = {name for name, call in calls if name in ("map", "parallelMap")
                  if any(isinstance(n, ast.Call) and isinstance(n.callee, ast.Name) and n.callee.name in functions
                         for n in _nodes(call.args))}
    assert in_lambdas == {"map", "parallelMap"}
    assert any(name == "file" and len(call.args) == 2 for name, call in calls)
    shown = "\n".join(_outputs_text(cell) for _, cell in _flow_cells())
    assert [code for code in ("F3001", "F3019", "F4035") if f"[{code}] error" not in shown] == []


def test_every_runtime_error_code_is_in_a_cell() -> None:
    from flow_kernel.errors import FlowError

    shown: set[str] = set()
    for path in NOTEBOOKS:
        for cell in _load(path)["cells"]:
            if cell["cell_type"] != "code":
                continue
            source, outputs = "".join(cell["source"]), _outputs_text(cell)
            for code in FlowError.by_code:
                if f"error[{code}]" in outputs or re.search(rf'(catch|on:).*"{code}"', source) or \
                        any(o.get("ename") == code for o in cell["outputs"]):
                    shown.add(code)
    assert not set(FlowError.by_code) - shown, f"no notebook cell shows: {sorted(set(FlowError.by_code) - shown)}"

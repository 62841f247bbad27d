"""What the golden comparison feeds the front end and the runtime: collected once from a
source tree and frozen as data (`data/inputs.json`, `data/run_inputs.json`), so that the
corpus cannot drift under the golden. Plain data only, no flow_kernel import: the
regeneration script collects from another checkout (a `git worktree`) with this module.

A diagnostics input is `{"cells": [[name, text], ...], "files": {path: text}}`: one cell is
a file checked alone; several are notebook cells checked in order against one session,
each committed when it checks clean (as the kernel and tests/lang/flowcases.py do);
`files` is what `use` and prompt files read (`path` as written, `./` dropped).

A run input is `{"cells": [[name, text], ...]}`: the cells run in order in one session
(one cell for a program of the run corpus)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from tests.flow_sources import flow_files

Input = dict[str, Any]

# Test helpers whose first argument (SourceFile: second) is a whole Flow program.
_PROGRAM_TAKERS = {"parse_src", "parse_ok", "decl", "check", "compile_source", "compiled", "run", "run_async",
                   "compile", "run_check", "run_example"}
_FLOWISH = re.compile(r"\b(let|var|agent|workflow|type|tool|team)\b|\n")


def split_example(text: str) -> tuple[list[str], dict[str, str]]:
    """`# %% cell` / `# %% file NAME` sections (tests/lang/flowcases.py's format)."""
    parts = re.split(r"^# %% file (\S+)[ \t]*\n", text, flags=re.M)
    main, rest = parts[0], parts[1:]
    files = {rest[i]: rest[i + 1] for i in range(0, len(rest), 2)}
    cells = re.split(r"^# %% cell[ \t]*\n", main, flags=re.M)
    return cells, files


def example_input(text: str) -> Input:
    cells, files = split_example(text)
    if len(cells) == 1:
        return {"cells": [["main.flow", cells[0]]], "files": files}
    return {"cells": [[f"cell[{i}]", cell] for i, cell in enumerate(cells, start=1)], "files": files}


def notebook_cells(path: Path) -> list[str]:
    """A Flow notebook's code cells with magic lines blanked; a Python notebook's `%%flow`
    cells without their first line."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    flow_kernel = nb["metadata"]["kernelspec"]["name"] == "flow"
    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        lines = "".join(cell["source"]).split("\n")
        if flow_kernel:
            cells.append("\n".join("" if line.startswith("%") else line for line in lines))
        elif lines[0].startswith("%%flow"):
            cells.append("\n".join(lines[1:]))
    return cells


def _gallery_files(root: Path) -> dict[str, str]:
    gallery = root / "notebooks"
    files = {p.name: p.read_text(encoding="utf-8") for p in flow_files(gallery)}
    files |= {f"prompts/{p.name}": p.read_text(encoding="utf-8") for p in sorted((gallery / "prompts").glob("*"))
              if p.is_file()}
    return files


def _literal_lists(path: Path) -> dict[str, Any]:
    """The top-level `NAME = [...]` / `NAME: T = (...)` literals of a data module, read
    without importing it."""
    out: dict[str, Any] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        target, value = None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        if target is not None and isinstance(value, (ast.List, ast.Tuple)):
            try:
                out[target] = ast.literal_eval(value)
            except ValueError:
                continue
    return out


def run_programs(root: Path) -> list[tuple[str, str]]:
    """(name, source) of tests/runtime/programs.py's cases."""
    tables = _literal_lists(root / "tests/runtime/programs.py")
    return [(name, source) for table in ("STATEMENTS", "EXPRESSIONS", "BUILTIN_CALLS", "AGENTS")
            for name, source, _ in tables[table]]


def embedded_sources(root: Path) -> list[str]:
    """Flow programs written inline in tests: a string constant given to a helper that takes
    a whole program (parse_src, check, compile_source, session.run, ...) or as a
    SourceFile's text, when it looks like Flow (a newline or a declaration keyword)."""
    found: dict[str, None] = {}
    for path in sorted((root / "tests").rglob("test_*.py")):
        if "golden" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name == "SourceFile" and len(node.args) >= 2:
                arg: ast.expr = node.args[1]
            elif name in _PROGRAM_TAKERS and node.args:
                arg = node.args[0]
            else:
                continue
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _FLOWISH.search(arg.value):
                found.setdefault(arg.value)
    return list(found)


def diagnostics_inputs(root: Path, fuzz: list[str], bench_program: str) -> dict[str, Input]:
    """Every input of the diagnostics golden, by a stable id."""
    out: dict[str, Input] = {}
    for path in sorted((root / "tests/lang/cases").glob("*.flow")):
        out[f"cases/{path.name}"] = example_input(path.read_text(encoding="utf-8"))
    for path in sorted((root / "tests/lang/fuzz_corpus").glob("*.flow")):
        # bytes decoded as they are: \r and other line breaks kept (test_fuzz does the same)
        out[f"fuzz_corpus/{path.name}"] = {"cells": [["fuzz.flow", path.read_bytes().decode("utf-8")]], "files": {}}
    for module in sorted((root / "flow_kernel/diagnostics").glob("_catalogue_*.py")):
        for entry in _literal_lists(module).get("ENTRIES", []):
            code, failing, fixed = entry[0], entry[4], entry[5]
            out[f"catalogue/{code}/failing"] = example_input(failing)
            out[f"catalogue/{code}/fixed"] = example_input(fixed)
    for path in flow_files(root / "examples"):
        out[f"examples/{path.name}"] = {"cells": [[f"examples/{path.name}", path.read_text(encoding="utf-8")]], "files": {}}
    files = _gallery_files(root)
    for path in sorted((root / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        cells = notebook_cells(path)
        out[f"gallery/{path.stem}"] = {"cells": [[f"<cell {i}>", c] for i, c in enumerate(cells, start=1)],
                                       "files": files}
    for name, source in run_programs(root):
        out[f"run_corpus/{name}"] = {"cells": [["case.flow", source]], "files": {}}
    for i, source in enumerate(embedded_sources(root)):
        out[f"embedded/{i:03d}"] = {"cells": [["t.flow", source]], "files": {}}
    lexer_edges = _literal_lists(root / "tests/lang/test_lexer_equivalence.py").get("EDGES", [])
    for i, source in enumerate(lexer_edges):
        out[f"lexer_edges/{i:02d}"] = {"cells": [["edge.flow", source]], "files": {}}
    for i, source in enumerate(fuzz):
        out[f"fuzz/{i:04d}"] = {"cells": [["fuzz.flow", source]], "files": {}}
        # every tenth also as a notebook cell, checked twice against one session (redefinitions)
        if i % 10 == 0:
            out[f"fuzz_cells/{i:04d}"] = {"cells": [["cell[1]", source], ["cell[2]", source]], "files": {}}
    out["bench/flow_program_5022"] = {"cells": [["bench.flow", bench_program]], "files": {}}
    return out


# Gallery notebooks whose Flow cells run with scripted agents alone: no %tools, %allow,
# %operator, %replay, MCP or eval (those need grants, servers or cassettes the kernel sets up).
RUNNABLE_NOTEBOOKS = ("01-hello-flow", "02-types-and-schemas", "03-agents-contracts-repair-retry",
                      "04-parallel-pipelines-stages", "05-teams-and-routing", "09-diagnostics-tour",
                      "11-budgets-limits-failures", "12-ask-a-panel", "16-functions-and-prompt-files")


def run_inputs(root: Path) -> dict[str, Input]:
    out: dict[str, Input] = {}
    for name, source in run_programs(root):
        out[f"run_corpus/{name}"] = {"cells": [["case.flow", source]]}
    for path in flow_files(root / "examples"):
        out[f"examples/{path.name}"] = {"cells": [[f"examples/{path.name}", path.read_text(encoding="utf-8")]]}
    for stem in RUNNABLE_NOTEBOOKS:
        cells = notebook_cells(root / "notebooks" / f"{stem}.ipynb")
        out[f"gallery/{stem}"] = {"cells": [[f"<cell {i}>", c] for i, c in enumerate(cells, start=1)]}
    return out

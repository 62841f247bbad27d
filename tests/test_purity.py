"""`flow_kernel.lang` and `flow_kernel.diagnostics` are pure (architecture.md): no I/O,
no asyncio, no IPython, nothing from the sandbox or the runtime. So they can run
anywhere, the kernel and the CLI included, without dragging either along."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PURE_PACKAGES = [ROOT / "flow_kernel" / "lang", ROOT / "flow_kernel" / "diagnostics"]

# Not to be imported, directly or indirectly, by importing or using the pure packages.
FORBIDDEN_AT_RUNTIME = [
    "IPython",
    "ipykernel",
    "ipywidgets",
    "asyncio",
    "flow_kernel.sandbox",
    "flow_kernel.runtime",
    "subprocess",
    "socket",
]
# Not to be imported in their source at all.
FORBIDDEN_IMPORTS = ["os", "io", "pathlib", "subprocess", "socket", "asyncio", "IPython"]
# The host side of the package: what pure code must not reach for (it would be a way
# round the rules above).
HOST_MODULES = [
    "flow_kernel.files",
    "flow_kernel.cli",
    "flow_kernel.sandbox",
    "flow_kernel.runtime",
    "flow_kernel.kernel",
    "flow_kernel.views",
]

PROBE = """
import json, sys
baseline = set(sys.modules)
import flow_kernel.lang, flow_kernel.diagnostics
after_import = set(sys.modules)
from flow_kernel.lang import check
from flow_kernel.source import SourceFile
result = check(SourceFile("triage.flow", sys.stdin.read()))
assert result.ok, [(d.code, d.message) for d in result.diagnostics]
after_check = set(sys.modules)
print(json.dumps({
    "baseline": sorted(baseline),
    "import": sorted(after_import - baseline),
    "check": sorted(after_check - baseline),
}))
"""


def _matches(module: str, names: list[str]) -> bool:
    return any(module == name or module.startswith(name + ".") for name in names)


@pytest.fixture(scope="module")
def probe() -> dict[str, list[str]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        input=(ROOT / "examples" / "triage.flow").read_text(encoding="utf-8"),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, list[str]] = json.loads(proc.stdout)
    return result


def test_the_probe_compares_against_a_bare_interpreter(probe: dict[str, list[str]]) -> None:
    assert "flow_kernel.lang" in probe["import"]
    assert not [m for m in probe["baseline"] if m.startswith("flow_kernel")]


def test_importing_pulls_in_nothing_impure(probe: dict[str, list[str]]) -> None:
    assert [m for m in probe["import"] if _matches(m, FORBIDDEN_AT_RUNTIME)] == []


def test_checking_a_program_pulls_in_nothing_impure(probe: dict[str, list[str]]) -> None:
    assert [m for m in probe["check"] if _matches(m, FORBIDDEN_AT_RUNTIME + HOST_MODULES)] == []


def _entry_point(node: ast.stmt) -> bool:
    """A module-level `def main` or `if __name__ == "__main__":` block: the code that
    `python -m` runs, which may hand file work to the host side."""
    if isinstance(node, ast.FunctionDef) and node.name == "main":
        return True
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    )


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[str] = []

    def visit(node: ast.AST, in_entry_point: bool) -> None:
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""] if node.level == 0 else []
        else:
            modules = []
        for module in modules:
            if _matches(module, FORBIDDEN_IMPORTS):
                found.append(f"{line}: imports {module}")
            elif _matches(module, HOST_MODULES) and not in_entry_point:
                found.append(f"{line}: imports the host module {module}")
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name in ("open", "__import__"):
                found.append(f"{line}: calls {name}(")
        for child in ast.iter_child_nodes(node):
            visit(child, in_entry_point)

    for stmt in tree.body:
        visit(stmt, _entry_point(stmt))
    return [f"{path.relative_to(ROOT)}:{v}" for v in found]


def _pure_sources() -> list[Path]:
    return sorted(p for package in PURE_PACKAGES for p in package.rglob("*.py"))


def test_there_are_pure_sources_to_scan() -> None:
    names = {p.name for p in _pure_sources()}
    assert {"check.py", "lexer.py", "registry.py", "render.py"} <= names


@pytest.mark.parametrize("path", _pure_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_source_does_no_io(path: Path) -> None:
    assert _violations(path) == []


def test_the_scan_catches_what_it_should(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import os.path\nfrom pathlib import Path\nimport asyncio as aio\n"
        "from flow_kernel.files import read_text\n"
        "def f():\n    return open('x')\n"
        "def main():\n    from flow_kernel.files import write_text\n",
        encoding="utf-8",
    )
    assert _violations(bad) == [
        "bad.py:1: imports os.path",
        "bad.py:2: imports pathlib",
        "bad.py:3: imports asyncio",
        "bad.py:4: imports the host module flow_kernel.files",
        "bad.py:6: calls open(",
    ]


def test_sandbox_knows_nothing_of_the_language() -> None:
    """`sandbox/` sees generated source and JSON only; its bootstrap imports nothing of ours."""
    root = Path(__file__).resolve().parents[1] / "flow_kernel" / "sandbox"
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        inside = "bootstrap" in path.parts
        for name in imported:
            assert not name.startswith(("flow_kernel.lang", "flow_kernel.runtime")), f"{path} imports {name}"
            if inside:
                assert not name.startswith("flow_kernel"), f"{path} (inside Pyodide) imports {name}"

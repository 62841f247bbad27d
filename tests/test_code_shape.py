"""The shape docs/architecture.md asks of the code ("Conventions"): no module of
`flow_kernel/` over 800 lines, and no function taking more than 10 parameters (outside the
sandbox's bootstrap, which runs inside Pyodide, and `bench/`) — a group of settings is an
object, as `RunContext` is. Read with `ast`; `self` and `cls` do not count, `*args` and
`**kwargs` count one each."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 800
MAX_PARAMETERS = 10


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "flow_kernel").rglob("*.py") if "node_modules" not in p.parts)


def long_modules(root: Path) -> list[str]:
    found = []
    for path in python_files(root):
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > MAX_LINES:
            found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


def parameter_counts(root: Path) -> list[str]:
    """Each function over the bound: `path:line name (n parameters)`."""
    found = []
    for path in python_files(root):
        relative = path.relative_to(root)
        if relative.parts[1] == "bench" or relative.parts[1:3] == ("sandbox", "bootstrap"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                args = node.args
                names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                count = len([n for n in names if n not in ("self", "cls")]) + bool(args.vararg) + bool(args.kwarg)
                if count > MAX_PARAMETERS:
                    name = getattr(node, "name", "<lambda>")
                    found.append(f"{relative}:{node.lineno} {name} ({count} parameters)")
    return found


def test_no_module_is_over_800_lines() -> None:
    found = long_modules(ROOT)
    assert found == [], "split these by construct:\n" + "\n".join(found)


def test_no_function_takes_more_than_10_parameters() -> None:
    found = parameter_counts(ROOT)
    assert found == [], "gather these parameters into an object:\n" + "\n".join(found)


def test_the_checks_count_as_they_say(tmp_path: Path) -> None:
    package = tmp_path / "flow_kernel"
    (package / "bench").mkdir(parents=True)
    (package / "wide.py").write_text(
        "def ten(self, a, b, c, d, e, f, g, h, *rest, **more): ...\n"  # 10: self does not count
        "async def eleven(a, b, c, d, e, f, g, h, i, j, *, k): ...\n"
        "x = lambda a, b, c, d, e, f, g, h, i, j, k: 0\n", encoding="utf-8")
    (package / "bench" / "wide.py").write_text("def many(a, b, c, d, e, f, g, h, i, j, k, l): ...\n", encoding="utf-8")
    (package / "long.py").write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    assert parameter_counts(tmp_path) == ["flow_kernel/wide.py:2 eleven (11 parameters)",
                                          "flow_kernel/wide.py:3 <lambda> (11 parameters)"]
    assert long_modules(tmp_path) == [f"flow_kernel/long.py: {MAX_LINES + 1} lines"]

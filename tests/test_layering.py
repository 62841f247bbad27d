"""The import graph of `flow_kernel/`: no cycles, and every import runs down the layers of
docs/architecture.md

    base (errors, source, markup, terminal_text, files, json_text) → diagnostics → lang → sandbox
        → runtime → views → frontend → front ends (kernel, cli, serve, bench, __main__)
        → the package's face

An arrow "A imports B" is allowed when B's layer is A's or below it. On top of that the
sandbox knows nothing of the language or the host: it imports `flow_kernel.errors` at
most, and the in-sandbox runtime `flowbox` (sandbox/bootstrap/flowbox, imported there as
`flowbox`) imports nothing of `flow_kernel` at all. The front ends share one layer but
not their code: the kernel and the servers import no other front end, and the command
line only the ones its commands start (`flow serve`, `flow bench`).

Privacy is per module, as Python's underscore means it: no module takes a `_private`
name from another (`from m import _x`), imports a `_private` module from outside the
package that holds it, or calls another object's private method (`other._x(...)`, where
`other` is not `self`, `cls` or `super()` and no `_x` is defined in the calling module).
Dunder and `_sunder_` names are protocols (`_repr_mimebundle_`), not private.

The graph is read from the source with `ast`, as the interpreter would run it: an import
inside a function counts (it is an import, only later), and so does
`importlib.import_module("literal")`; an import under `if TYPE_CHECKING:` does not (it
never runs). A package's `__init__.py` running before its modules is not an arrow: what
counts is what each module names.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "flow_kernel"
# The in-sandbox runtime is its own top-level package inside Pyodide.
IN_SANDBOX = ("sandbox", "bootstrap", "flowbox")

# Lowest first. A module belongs to the entry with the longest matching prefix.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("flow_kernel.errors", "flow_kernel.source", "flow_kernel.markup", "flow_kernel.terminal_text",
              "flow_kernel.short_text", "flow_kernel.files", "flow_kernel.version", "flow_kernel.json_text",
              "flow_kernel.compiled_front", "flow_kernel.native_marks")),
    ("diagnostics", ("flow_kernel.diagnostics",)),
    ("lang", ("flow_kernel.lang",)),
    ("sandbox", ("flow_kernel.sandbox", "flowbox")),
    ("runtime", ("flow_kernel.runtime",)),
    ("views", ("flow_kernel.views", "flow_kernel.highlight")),
    # The one cell runner and the magics, behind the port each front end implements.
    ("frontend", ("flow_kernel.frontend",)),
    ("front ends", ("flow_kernel.kernel", "flow_kernel.cli", "flow_kernel.serve", "flow_kernel.bench",
                    "flow_kernel.__main__")),
    # `flow_kernel/__init__.py` alone (a new module beside it is no part of it), the
    # library's public names: for its users, never for the package itself.
    ("the package's face", ("flow_kernel",)),
]
# What a layer may import beyond itself, when that is narrower than "anything below".
ONLY: dict[str, tuple[str, ...]] = {
    "flow_kernel.sandbox": ("flow_kernel.errors", "flow_kernel.json_text", "flow_kernel.sandbox", "flowbox"),
    "flowbox": ("flowbox",),
}
# What a module may not import although its layer allows it: front ends beside each other.
NOT: dict[str, tuple[str, ...]] = {
    "flow_kernel.kernel": ("flow_kernel.cli", "flow_kernel.serve", "flow_kernel.bench"),
    "flow_kernel.serve": ("flow_kernel.kernel", "flow_kernel.cli", "flow_kernel.bench"),
    "flow_kernel.cli": ("flow_kernel.kernel",),  # `flow serve` and `flow bench` start theirs
    "flow_kernel.bench": ("flow_kernel.cli", "flow_kernel.serve"),  # it times the kernel it starts
}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (ours only)
    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.source} -> {self.target}  ({self.path}:{self.line})"


Graph = dict[str, list[Import]]


def _matches(module: str, prefix: str) -> bool:
    return module == prefix or (prefix != PACKAGE and module.startswith(prefix + "."))


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    inside = tuple(parts[1:1 + len(IN_SANDBOX)])
    if parts[0] == PACKAGE and inside == IN_SANDBOX:
        parts = parts[len(IN_SANDBOX):]
    return ".".join(parts)


def modules(root: Path) -> dict[str, Path]:
    """Every Python module of the package under `root` (the checkout), by its import name."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        if "node_modules" in path.parts or "__pycache__" in path.parts:
            continue
        found[module_name(path, root)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node that runs, at import or later: all but the bodies of `if TYPE_CHECKING:`."""
    for child in ast.iter_child_nodes(node):
        yield child
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.orelse:
                yield stmt
                yield from _runtime_nodes(stmt)
            continue
        yield from _runtime_nodes(child)


def _named_modules(node: ast.AST, module: str, is_package: bool) -> Iterator[tuple[str, list[str]]]:
    """(module named, names taken from it) for each import the node makes."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, []
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[:len(package) - (node.level - 1)]
            base = ".".join([*package, base] if base else package)
        yield base, [alias.name for alias in node.names]
    elif isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name in ("import_module", "__import__") and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield first.value, []


def _resolve(named: str, taken: list[str], known: dict[str, Path]) -> set[str]:
    """The modules of ours an import runs: `from a.b import c` is `a.b.c` when that is a
    module, else `a.b`; `import a.b.c` of a name that is no module is its nearest package."""
    targets = {f"{named}.{name}" for name in taken if f"{named}.{name}" in known}
    if len(targets) < len(taken) or not taken:
        parts = named.split(".")
        while parts and ".".join(parts) not in known:
            parts.pop()
        if parts:
            targets.add(".".join(parts))
    return targets


def import_graph(root: Path) -> Graph:
    known = modules(root)
    graph: Graph = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: dict[str, Import] = {}
        for node in _runtime_nodes(tree):
            for named, taken in _named_modules(node, name, path.name == "__init__.py"):
                for target in sorted(_resolve(named, taken, known)):
                    if target != name and target not in edges:
                        edges[target] = Import(name, target, path.relative_to(root), getattr(node, "lineno", 0))
        graph[name] = list(edges.values())
    return graph


def cycles(graph: Graph) -> list[list[Import]]:
    """One loop of imports for each group of modules that import each other (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:  # recursion is fine: the package is ~150 modules deep at most
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for edge in graph.get(node, []):
            if edge.target not in index:
                visit(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in on_stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_loop_through(min(group), group, graph) for group in groups]


def _loop_through(start: str, group: set[str], graph: Graph) -> list[Import]:
    """The shortest loop from `start` back to itself inside one group (breadth first)."""
    came_by: dict[str, Import] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for edge in graph.get(node, []):
                if edge.target not in group or edge.target in came_by:
                    continue
                came_by[edge.target] = edge
                if edge.target == start:
                    loop = [edge]
                    while loop[0].source != start:
                        loop.insert(0, came_by[loop[0].source])
                    return loop
                following.append(edge.target)
        frontier = following
    raise AssertionError(f"{start} is in a group with no loop")


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if _matches(module, prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), rank)
    return best[1] if best is not None else None


def against_layers(graph: Graph) -> list[str]:
    """Each import that runs up the layers, or out of a layer's narrower allowance."""
    found = []
    for module in sorted(graph):
        for edge in graph[module]:
            source, target = layer_of(edge.source), layer_of(edge.target)
            if source is None or target is None:
                continue  # reported by test_every_module_has_a_layer
            if target > source:
                found.append(f"{edge}: {LAYERS[source][0]} imports {LAYERS[target][0]}")
                continue
            for confined, allowed in ONLY.items():
                if _matches(edge.source, confined) and not any(_matches(edge.target, a) for a in allowed):
                    found.append(f"{edge}: {confined} may import only {', '.join(allowed)}")
            for confined, barred in NOT.items():
                if _matches(edge.source, confined) and any(_matches(edge.target, b) for b in barred):
                    found.append(f"{edge}: {confined} may not import {', '.join(barred)}")
    return found


# Private names a module may reach for, each with its reason. An entry that is no longer
# needed fails too: remove it when its file no longer needs it.
PRIVATE_ALLOWED: frozenset[str] = frozenset({
    # flowbox's event loop is an asyncio loop: it drives asyncio's own handles
    "flowbox.loop calls asyncio._get_running_loop",
    "flowbox.loop calls asyncio._set_running_loop",
    "flowbox.loop calls handle._run",
})
# Documented APIs despite their underscore: namedtuple's methods, os._exit, sys._getframe.
PUBLIC_BY_DESIGN = ("_replace", "_asdict", "_make", "os._exit", "sys._getframe")


def _is_private(name: str) -> bool:
    """`_x`, but not a dunder (`__init__`) nor a sunder protocol name (`_repr_html_`)."""
    return name.startswith("_") and not name.endswith("_")


def _private_part(module: str) -> str | None:
    """The package whose `_private` module `module` is or lies in, if any."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if _is_private(part):
            return ".".join(parts[:i])
    return None


def _defined_here(tree: ast.AST) -> set[str]:
    """Every name the module defines: functions, classes, and names and attributes it assigns."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _own_receiver(receiver: ast.expr) -> bool:
    if isinstance(receiver, ast.Name):
        return receiver.id in ("self", "cls")
    return isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super"


def private_reaches(root: Path) -> list[str]:
    """Each place a module takes or calls another module's private name: `<module> imports
    _x from <module>`, `<module> imports <private module>`, `<module> calls <receiver>._x`."""
    known = modules(root)
    found: set[str] = set()
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        defined = _defined_here(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for named, taken in _named_modules(node, name, path.name == "__init__.py"):
                    if named not in known and not any(f"{named}.{t}" in known for t in taken):
                        continue  # not ours
                    for target in [named, *(f"{named}.{t}" for t in taken if f"{named}.{t}" in known)]:
                        package = _private_part(target)
                        if package is not None and not _matches(name, package):
                            found.add(f"{name} imports {target}")
                    for taken_name in taken:
                        if _is_private(taken_name) and f"{named}.{taken_name}" not in known:
                            found.add(f"{name} imports {taken_name} from {named}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                method, receiver = node.func.attr, node.func.value
                if not _is_private(method) or _own_receiver(receiver) or method in defined:
                    continue
                called = ast.unparse(node.func)
                if method not in PUBLIC_BY_DESIGN and called not in PUBLIC_BY_DESIGN:
                    found.add(f"{name} calls {called}")
    return sorted(found)


def _show(loop: list[Import]) -> str:
    chain = " -> ".join([loop[0].source, *(edge.target for edge in loop)])
    return chain + "\n" + "\n".join(f"    {edge}" for edge in loop)


@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph(ROOT)


def test_the_graph_is_read_as_the_interpreter_runs_it(graph: Graph) -> None:
    def targets(module: str) -> set[str]:
        return {edge.target for edge in graph[module]}

    assert len(graph) > 100
    assert "flow_kernel.lang.parser" in targets("flow_kernel.lang.check")  # a module-level import
    # `from flowbox import …` inside the sandbox's own package, written relatively.
    assert "flowbox.errors" in targets("flowbox.runtime")
    # importlib.import_module("flowbox.runtime"), inside a function.
    assert "flowbox.runtime" in targets("flow_kernel.sandbox.inprocess")
    # The checker's mixins name `Checker` under `if TYPE_CHECKING:` only: no arrow.
    assert "flow_kernel.lang.checker" not in targets("flow_kernel.lang.check_calls")
    # A new module beside the face is placed on purpose, not taken for the face.
    assert layer_of("flow_kernel.something_new") is None


def test_every_module_has_a_layer(graph: Graph) -> None:
    unplaced = sorted(module for module in graph if layer_of(module) is None)
    assert unplaced == [], f"place these modules in LAYERS: {unplaced}"


def test_no_import_cycles(graph: Graph) -> None:
    found = cycles(graph)
    report = "\n".join(_show(loop) for loop in found)
    print(report)
    assert found == [], f"{len(found)} import cycle(s):\n{report}"


def test_imports_run_down_the_layers(graph: Graph) -> None:
    found = against_layers(graph)
    print("\n".join(found))
    assert found == [], "imports against the layering:\n" + "\n".join(found)


def test_no_module_reaches_for_another_modules_private_names() -> None:
    found = set(private_reaches(ROOT))
    new, stale = sorted(found - PRIVATE_ALLOWED), sorted(PRIVATE_ALLOWED - found)
    assert new == [], "private names used across modules (make them public, or add a port):\n" + "\n".join(new)
    assert stale == [], "no longer needed in PRIVATE_ALLOWED, remove:\n" + "\n".join(stale)


def test_the_checks_catch_a_cycle_and_an_import_against_the_layers(tmp_path: Path) -> None:
    """The same checks over a small made-up package: a cycle through a function-local
    import, an import from the base up into lang, a sandbox that reaches for the
    runtime and a `flowbox` that reaches for flow_kernel; and what must not count."""
    files = {
        "flow_kernel/__init__.py": "",
        "flow_kernel/source.py": "from flow_kernel.lang.check import check\n",  # against the layers
        "flow_kernel/lang/__init__.py": "",
        "flow_kernel/lang/check.py": "from flow_kernel.lang import checker\n",
        "flow_kernel/lang/checker.py": "def late():\n    from flow_kernel.lang.check import check\n",  # the cycle
        "flow_kernel/lang/mixin.py": (  # no arrow: TYPE_CHECKING only
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from flow_kernel.runtime import session\n"),
        "flow_kernel/runtime/__init__.py": "",
        "flow_kernel/runtime/session.py": "import flow_kernel.lang.check\n",
        "flow_kernel/sandbox/__init__.py": "from flow_kernel.errors import FlowError\nimport flow_kernel.runtime.session\n",
        "flow_kernel/sandbox/bootstrap/flowbox/__init__.py": "from . import values\nimport flow_kernel.errors\n",
        "flow_kernel/sandbox/bootstrap/flowbox/values.py": "",
        "flow_kernel/errors.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    made_up = import_graph(tmp_path)

    loops = cycles(made_up)
    assert [[(e.source, e.target) for e in loop] for loop in loops] == [[
        ("flow_kernel.lang.check", "flow_kernel.lang.checker"),
        ("flow_kernel.lang.checker", "flow_kernel.lang.check"),
    ]]
    assert loops[0][1].line == 2  # the import inside `late`

    found = against_layers(made_up)
    assert [line.split("  (")[0] for line in found] == [
        "flow_kernel.sandbox -> flow_kernel.runtime.session",
        "flow_kernel.source -> flow_kernel.lang.check",
        "flowbox -> flow_kernel.errors",
    ]
    assert "base imports lang" in found[1]
    assert "sandbox imports runtime" in found[0]
    assert "flowbox may import only flowbox" in found[2]
    assert made_up["flow_kernel.lang.mixin"] == []


def test_the_check_catches_private_names_across_modules(tmp_path: Path) -> None:
    """Over a made-up package: what reaches for another module's private names is found,
    and what keeps to its own module, its own package or a protocol is not."""
    files = {
        "flow_kernel/__init__.py": "",
        "flow_kernel/runtime/__init__.py": "",
        "flow_kernel/runtime/host.py": (
            "from flow_kernel.runtime.pool import _spare, Pool\n"  # a private name: found
            "from flow_kernel.runtime import _wire\n"  # its own package's private module: fine
            "class Host:\n"
            "    def _poke(self): ...\n"
            "    def run(self, pool, other, widget):\n"
            "        self._poke()\n"  # its own: fine
            "        other._poke()\n"  # `_poke` is defined in this module: fine
            "        super()._start()\n"  # fine
            "        widget._repr_mimebundle_()\n"  # a protocol: fine
            "        pool.spares._replace(n=1)\n"  # namedtuple's API: fine
            "        return pool._take(), Pool._make_one()\n"  # two calls of another module's privates
        ),
        "flow_kernel/runtime/_wire.py": "",
        "flow_kernel/runtime/pool.py": "_spare = 1\nclass Pool:\n    def _take(self): ...\n",
        "flow_kernel/kernel/__init__.py": "",
        "flow_kernel/kernel/kernel.py": (
            "import flow_kernel.runtime._wire\n"  # a private module from outside its package
            "from flow_kernel.runtime import host\n"
            "def late():\n"
            "    from flow_kernel.runtime.host import Host, _helper\n"  # inside a function: found
        ),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert private_reaches(tmp_path) == [
        "flow_kernel.kernel.kernel imports _helper from flow_kernel.runtime.host",
        "flow_kernel.kernel.kernel imports flow_kernel.runtime._wire",
        "flow_kernel.runtime.host calls Pool._make_one",
        "flow_kernel.runtime.host calls pool._take",
        "flow_kernel.runtime.host imports _spare from flow_kernel.runtime.pool",
    ]


def test_front_ends_do_not_import_each_other(tmp_path: Path) -> None:
    files = {
        "flow_kernel/__init__.py": "",
        "flow_kernel/kernel/__init__.py": "from flow_kernel.cli import main\n",  # found
        "flow_kernel/cli/__init__.py": "def main():\n    from flow_kernel.serve import door\n",  # `flow serve`: fine
        "flow_kernel/serve/__init__.py": "",
        "flow_kernel/serve/door.py": "from flow_kernel.frontend import cell\n",  # down a layer: fine
        "flow_kernel/frontend/__init__.py": "",
        "flow_kernel/frontend/cell.py": "from flow_kernel.kernel import x\n",  # up a layer: found
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    found = [line.split("  (")[0] + ": " + line.split(": ", 1)[1] for line in against_layers(import_graph(tmp_path))]
    assert found == [
        "flow_kernel.frontend.cell -> flow_kernel.kernel: frontend imports front ends",
        "flow_kernel.kernel -> flow_kernel.cli: flow_kernel.kernel may not import flow_kernel.cli, "
        "flow_kernel.serve, flow_kernel.bench",
    ]

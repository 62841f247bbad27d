"""The compiled front end: which modules mypyc compiles (scripts/build-front), and the
finder that imports them instead of their pure-Python sources, all or none.

mypyc compiles the lexer, parser and checker (`MODULES`) as one group: one shared library
(`GROUP`) holds their native code and calls across modules directly, so a compiled module
beside a pure neighbour of the same group would disagree with it about its classes. The
build (scripts/build-front, run by scripts/setup; a compiled wheel's hatch_build.py)
writes the extensions outside the package, into `build/flow-front/` beside a checkout's
package or `flow_kernel_front/` beside an installed one, with a manifest of each source's
sha256, size and modification time. `install()`, called by `flow_kernel/__init__.py`
before any of them is imported, serves the compiled modules only when every source listed
is the one compiled (size and time first; the sha256 when they differ), the manifest
lists exactly `MODULES` and the interpreter's extension suffix is the build's. Otherwise,
or with `FLOW_PURE_PYTHON=1`, the pure modules load as always. `front_end()` says which
(`flow doctor`'s row).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

# The group, as mypyc compiles it: the parser's and the checker's modules, and what they
# build on (tokens and spans, the tree, types, scopes). The code generator and the writer
# stay pure (they change most often; codegen's share of a compile is small).
MODULES: tuple[str, ...] = (
    "flow_kernel.source",
    "flow_kernel.lang.tokens",
    "flow_kernel.lang.lexer",
    "flow_kernel.lang.parser_base",
    "flow_kernel.lang.parse_expr",
    "flow_kernel.lang.parser",
    "flow_kernel.lang.ast",
    "flow_kernel.lang.types",
    "flow_kernel.lang.env",
    "flow_kernel.native_marks",
    "flow_kernel.lang.check_common",
    "flow_kernel.lang.check_decls",
    "flow_kernel.lang.check_exprs",
    "flow_kernel.lang.check_calls",
    "flow_kernel.lang.check_stmts",
    "flow_kernel.lang.check_prompts",
    "flow_kernel.lang.check_panels",
    "flow_kernel.lang.checker",
    "flow_kernel.lang.static_budget",
    "flow_kernel.lang.fn_effects",
    "flow_kernel.lang.graphs",
)
GROUP = "flow_front"  # mypyc's shared library is the top-level module `flow_front__mypyc`
MANIFEST = "manifest.json"
PURE_VARIABLE = "FLOW_PURE_PYTHON"
# Beside the package's folder: a checkout's build (gitignored), then an installed wheel's.
BUILD_FOLDERS = (Path("build") / "flow-front", Path("flow_kernel_front"))


@dataclass(frozen=True)
class Choice:
    """Which front end a process uses: `folder` holds the compiled one (None: pure), and
    `why` says why, for `flow doctor`."""

    folder: Path | None
    why: str
    extensions: Mapping[str, Path]  # module name -> its extension file, the shared library included


@dataclass(frozen=True)
class _Entry:
    """One compiled module in a manifest: its source as compiled, and its extension file."""

    sha256: str
    size: int
    mtime_ns: int
    extension: str  # relative to the build's folder


def source_path(root: Path, module: str) -> Path:
    """The pure source of `module` under `root`, the folder that holds `flow_kernel/`."""
    return root.joinpath(*module.split(".")).with_suffix(".py")


def sha256_of(path: Path) -> str:
    import hashlib  # only when a source's size or time is not the build's

    return hashlib.sha256(path.read_bytes()).hexdigest()


def choose(root: Path, environ: Mapping[str, str] = os.environ,
           modules: Sequence[str] = MODULES) -> Choice:
    """The front end for the package under `root`: compiled only when a build beside it
    lists exactly `modules`, was made for this interpreter and every source is the one it
    compiled; pure otherwise. Reads one manifest and stats each source; hashes a source
    only when its size or modification time is not the recorded one."""
    if environ.get(PURE_VARIABLE, "") not in ("", "0"):
        return Choice(None, f"pure Python ({PURE_VARIABLE}={environ[PURE_VARIABLE]})", {})
    folder = next((root / f for f in BUILD_FOLDERS if (root / f / MANIFEST).is_file()), None)
    if folder is None:
        return Choice(None, "pure Python (no compiled build: scripts/build-front)", {})
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        suffix, shared = str(manifest["suffix"]), str(manifest["shared"])
        listed = {name: _Entry(str(e["sha256"]), int(e["size"]), int(e["mtime_ns"]), str(e["extension"]))
                  for name, e in manifest["modules"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return Choice(None, f"pure Python ({folder / MANIFEST} unreadable)", {})
    if suffix != importlib.machinery.EXTENSION_SUFFIXES[0]:
        return Choice(None, f"pure Python (the build is for {suffix}, not this interpreter)", {})
    if sorted(listed) != sorted(modules):
        return Choice(None, "pure Python (the build compiled another set of modules: rebuild)", {})
    for module in modules:
        entry, path = listed[module], source_path(root, module)
        try:
            stat = path.stat()
            same = stat.st_size == entry.size and stat.st_mtime_ns == entry.mtime_ns
            if not same and sha256_of(path) != entry.sha256:
                return Choice(None, f"pure Python ({path.relative_to(root)} changed since the build: rebuild)", {})
        except OSError:
            return Choice(None, f"pure Python ({path.relative_to(root)} is missing)", {})
    extensions = {m: folder / listed[m].extension for m in modules}
    extensions[shared.removesuffix(suffix).replace("/", ".")] = folder / shared
    if not all(p.is_file() for p in extensions.values()):
        return Choice(None, f"pure Python ({folder} is incomplete: rebuild)", {})
    return Choice(folder, f"compiled ({len(modules)} modules, {folder})", extensions)


class CompiledFinder(MetaPathFinder):
    """Finds the modules of one compiled build, each as its extension file."""

    def __init__(self, extensions: Mapping[str, Path]) -> None:
        self.extensions = dict(extensions)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        found = self.extensions.get(fullname)
        if found is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(found))
        return importlib.util.spec_from_file_location(fullname, found, loader=loader)


_chosen: Choice | None = None


def install() -> Choice:
    """Chooses the front end once a process (the first call) and, when it is the compiled
    one, puts its finder first on `sys.meta_path`. Call before any of `MODULES` is imported."""
    global _chosen
    if _chosen is None:
        _chosen = choose(Path(__file__).resolve().parents[1])
        if _chosen.folder is not None and not any(m in sys.modules for m in MODULES):
            sys.meta_path.insert(0, CompiledFinder(_chosen.extensions))
        elif _chosen.folder is not None:
            _chosen = Choice(None, "pure Python (imported before the compiled build was chosen)", {})
    return _chosen


def front_end() -> str:
    """Which front end this process uses, and why: e.g. "compiled (21 modules, …)"."""
    return install().why


__all__ = ["BUILD_FOLDERS", "GROUP", "MANIFEST", "MODULES", "PURE_VARIABLE", "Choice", "CompiledFinder",
           "choose", "front_end", "install", "source_path"]

"""The compiled front end's loader (flow_kernel/compiled_front.py): compiled only while
every compiled source is the one in the manifest, all or none; `FLOW_PURE_PYTHON=1`
forces pure. The choice is tested on small made-up builds (no compiler needed); where
scripts/build-front has built the real one, a copy of the package (never the checkout)
loads it, and loads the pure modules once one source in the copy changes.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flow_kernel.compiled_front import (
    BUILD_FOLDERS,
    MANIFEST,
    MODULES,
    choose,
    sha256_of,
    source_path,
)

ROOT = Path(__file__).resolve().parents[1]
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
TOY = ("pkg.alpha", "pkg.beta")


def toy_build(root: Path, modules: tuple[str, ...] = TOY, *, suffix: str = SUFFIX) -> Path:
    """Sources and a build of them as scripts/build-front lays it out (the extension files
    empty: nothing here imports them)."""
    folder = root / BUILD_FOLDERS[0]
    listed = {}
    for module in modules:
        path = source_path(root, module)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"NAME = {module!r}\n")
        extension = module.replace(".", "/") + suffix
        (folder / extension).parent.mkdir(parents=True, exist_ok=True)
        (folder / extension).write_bytes(b"")
        stat = path.stat()
        listed[module] = {"source": str(path.relative_to(root)), "sha256": sha256_of(path), "size": stat.st_size,
                          "mtime_ns": stat.st_mtime_ns, "extension": extension}
    (folder / f"toy__mypyc{suffix}").write_bytes(b"")
    (folder / MANIFEST).write_text(json.dumps({"suffix": suffix, "shared": f"toy__mypyc{suffix}", "modules": listed}))
    return folder


def test_a_build_of_exactly_these_sources_is_chosen(tmp_path: Path) -> None:
    folder = toy_build(tmp_path)
    chosen = choose(tmp_path, environ={}, modules=TOY)
    assert chosen.folder == folder
    assert chosen.extensions == {"pkg.alpha": folder / f"pkg/alpha{SUFFIX}", "pkg.beta": folder / f"pkg/beta{SUFFIX}",
                                 "toy__mypyc": folder / f"toy__mypyc{SUFFIX}"}
    assert chosen.why.startswith("compiled (2 modules")


def test_one_changed_source_makes_all_of_it_pure(tmp_path: Path) -> None:
    toy_build(tmp_path)
    source_path(tmp_path, "pkg.beta").write_text("NAME = 'edited'\n")
    chosen = choose(tmp_path, environ={}, modules=TOY)
    assert (chosen.folder, chosen.extensions) == (None, {})
    assert chosen.why == f"pure Python ({Path('pkg/beta.py')} changed since the build: rebuild)"


def test_a_touched_but_unchanged_source_is_hashed_and_still_compiled(tmp_path: Path) -> None:
    folder = toy_build(tmp_path)
    path = source_path(tmp_path, "pkg.alpha")
    os.utime(path, ns=(1, 1))
    assert choose(tmp_path, environ={}, modules=TOY).folder == folder
    # Other bytes of the same size, written now: the hash tells.
    path.write_text(path.read_text().replace("alpha", "ALPHA"))
    assert choose(tmp_path, environ={}, modules=TOY).folder is None


def test_flow_pure_python_forces_pure(tmp_path: Path) -> None:
    toy_build(tmp_path)
    assert choose(tmp_path, environ={"FLOW_PURE_PYTHON": "1"}, modules=TOY).why == "pure Python (FLOW_PURE_PYTHON=1)"
    assert choose(tmp_path, environ={"FLOW_PURE_PYTHON": "0"}, modules=TOY).folder is not None


def test_another_set_another_interpreter_or_a_missing_file_is_pure(tmp_path: Path) -> None:
    toy_build(tmp_path)
    assert "another set of modules" in choose(tmp_path, environ={}, modules=(*TOY, "pkg.gamma")).why
    assert "another set of modules" in choose(tmp_path, environ={}, modules=TOY[:1]).why
    source_path(tmp_path, "pkg.alpha").unlink()
    assert choose(tmp_path, environ={}, modules=TOY).why == f"pure Python ({Path('pkg/alpha.py')} is missing)"

    other = tmp_path / "other"
    toy_build(other, suffix=".cpython-399-x86_64-linux-gnu.so")
    assert "not this interpreter" in choose(other, environ={}, modules=TOY).why

    empty = tmp_path / "empty"
    folder = toy_build(empty)
    (folder / f"toy__mypyc{SUFFIX}").unlink()
    assert "incomplete" in choose(empty, environ={}, modules=TOY).why
    manifest = json.loads((folder / MANIFEST).read_text())
    del manifest["modules"]["pkg.beta"]["size"]
    (folder / MANIFEST).write_text(json.dumps(manifest))
    assert "unreadable" in choose(empty, environ={}, modules=TOY).why
    (folder / MANIFEST).write_text("{")
    assert "unreadable" in choose(empty, environ={}, modules=TOY).why
    shutil.rmtree(folder)
    assert "no compiled build" in choose(empty, environ={}, modules=TOY).why


def test_the_group_is_the_front_ends_modules() -> None:
    for module in MODULES:
        assert source_path(ROOT, module).is_file(), module
    assert not [m for m in MODULES if m.startswith(("flow_kernel.lang.codegen", "flow_kernel.lang.pywriter"))]


def test_flow_doctor_names_the_front_end_in_use() -> None:
    from flow_kernel.cli.doctor import front_end_row
    from flow_kernel.compiled_front import install

    chosen = install()  # pure in the suite (tests/conftest.py), unless the shell said otherwise
    ok = True if chosen.folder is not None else None  # pure is "--", never a failure
    assert front_end_row() == ("front end", ok, chosen.why)
    assert chosen.why.startswith("compiled (" if ok else "pure Python (")


# -- the real build, where scripts/build-front made one -------------------------------------

BUILT = choose(ROOT, environ={})
needs_build = pytest.mark.skipif(BUILT.folder is None, reason=f"no current compiled build: {BUILT.why}")

# Which lexer loaded, the choice, and a compiled program (every kind of declaration: the
# bench's) that survives a pickle round trip, as a Ray worker gets it.
PROBE = """
import copy, pickle
import flow_kernel.lang.lexer as lexer
from flow_kernel.bench.frontend import flow_program
from flow_kernel.cli.doctor import front_end_row
from flow_kernel.compiled_front import front_end
from flow_kernel.lang.compiler import compile_source
from flow_kernel.source import SourceFile
program = compile_source(SourceFile("b.flow", flow_program(200)))
again = pickle.loads(pickle.dumps(program))
same = (again.python == program.python and again.check.ok and again.source_map.entries == program.source_map.entries
        and copy.deepcopy(program.check).module.span == program.check.module.span)
assert front_end_row()[2] == front_end()
print(lexer.__file__, front_end(), same, sep="\\n")
"""


def probe(root: Path, **env: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if k != "FLOW_PURE_PYTHON"}
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=root, capture_output=True, text=True, timeout=120,
                          env={**environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1", **env})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


@needs_build
def test_a_copy_loads_the_compiled_modules_until_a_source_changes(tmp_path: Path) -> None:
    assert BUILT.folder is not None
    shutil.copytree(ROOT / "flow_kernel", tmp_path / "flow_kernel", ignore=shutil.ignore_patterns(
        "__pycache__", "node_modules", "labextension"))
    shutil.copytree(BUILT.folder, tmp_path / BUILD_FOLDERS[0])
    folder = tmp_path / BUILD_FOLDERS[0]

    lexer, why, ok = probe(tmp_path)
    assert lexer == str(folder / f"flow_kernel/lang/lexer{SUFFIX}")
    assert why == f"compiled ({len(MODULES)} modules, {folder})"
    assert ok == "True"

    lexer, why, ok = probe(tmp_path, FLOW_PURE_PYTHON="1")
    assert (lexer, why, ok) == (str(tmp_path / "flow_kernel/lang/lexer.py"), "pure Python (FLOW_PURE_PYTHON=1)", "True")

    with (tmp_path / "flow_kernel/lang/graphs.py").open("a") as handle:
        handle.write("# edited after the build\n")
    lexer, why, ok = probe(tmp_path)
    assert lexer == str(tmp_path / "flow_kernel/lang/lexer.py")
    assert why == f"pure Python ({Path('flow_kernel/lang/graphs.py')} changed since the build: rebuild)"
    assert ok == "True"


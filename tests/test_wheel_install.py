"""`pip install flow-kernel` is the whole install (issue 15, item 8): the wheel is built
from this tree, installed into a fresh virtual environment with no package index and no
npm within reach, and then runs a Flow file (`flow run`, the real sandbox) and a kernel
cell (jupyter_client, the kernel spec the wheel installed) — with no npm call and nothing
written into the installed package.

The runtime dependencies come from this machine, offline: each installed distribution
the wheel needs is packed back into a wheel from its RECORD (a local wheelhouse), and
pip installs with `--no-index --find-links` only.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.metadata
import io
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.tags import sys_tags

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parents[1]
JS = "flow_kernel/sandbox/js"
MANIFEST = json.loads((ROOT / JS / "pyodide-files.json").read_text())


def pip_env(**extra: str) -> dict[str, str]:
    """pip with no configuration (no extra index, no find-links), no index and npm told to stay offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV", "PYTHON"))}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "npm_config_offline": "true", **extra}


def build_wheel(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", str(source),
                           "-w", str(out)], capture_output=True, text=True, timeout=300, env=pip_env())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    proc = build_wheel(ROOT, out)
    assert proc.returncode == 0, proc.stderr
    (built,) = out.glob("flow_kernel-*.whl")
    return built


# -- a wheelhouse from the installed distributions -------------------------------------------

def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(metadata: importlib.metadata.PackageMetadata | Any) -> list[Requirement]:
    return [Requirement(r) for r in (metadata.get_all("Requires-Dist") or [])]


def dependency_closure(wheel: Path) -> list[importlib.metadata.Distribution]:
    """The installed distributions the wheel needs without extras, and theirs."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        from email.parser import Parser

        metadata = Parser().parsestr(archive.read(name).decode())
    todo, seen = _requirements(metadata), {}
    while todo:
        requirement = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        key = _normal(requirement.name)
        if key in seen:
            continue
        try:
            dist = importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            pytest.fail(f"{requirement} (a runtime dependency) is not installed here: pip install -r requirements-dev.txt")
        seen[key] = dist
        todo += _requirements(dist.metadata)
    return list(seen.values())


def repack(dist: importlib.metadata.Distribution, into: Path) -> Path:
    """The installed distribution as a wheel again, from its RECORD: files of the package
    tree as they are, data files (e.g. a kernel spec under share/) as .data/data; console
    scripts are left to pip, which writes them from entry_points.txt."""
    info = Path(str(dist._path))  # type: ignore[attr-defined]
    site = info.parent
    prefix = Path(sys.prefix)
    tags = [line.split(":", 1)[1].strip() for line in (info / "WHEEL").read_text().splitlines() if line.startswith("Tag:")]
    supported = {str(tag) for tag in sys_tags()}
    stem = f"{info.name.removesuffix('.dist-info')}"
    target = into / f"{stem}-{next(tag for tag in tags if tag in supported)}.whl"
    records: list[tuple[str, str, str]] = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as archive:
        for file in dist.files or []:
            path = Path(os.path.normpath(site / file))
            if path.suffix == ".pyc" or path.name in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json") \
                    or not path.is_file():
                continue
            if path.is_relative_to(site):
                name = path.relative_to(site).as_posix()
            elif path.is_relative_to(prefix / "bin"):
                continue
            elif path.is_relative_to(prefix):
                name = f"{stem}.data/data/{path.relative_to(prefix).as_posix()}"
            else:
                continue
            data = path.read_bytes()
            archive.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append((name, f"sha256={digest}", str(len(data))))
        record = io.StringIO()
        csv.writer(record, lineterminator="\n").writerows([*records, (f"{info.name}/RECORD", "", "")])
        archive.writestr(f"{info.name}/RECORD", record.getvalue())
    return target


# -- the tests ---------------------------------------------------------------------------------

def test_the_wheel_carries_exactly_the_checked_runtime_files(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        carried = {n.removeprefix(f"{JS}/node_modules/"): archive.read(n) for n in archive.namelist()
                   if n.startswith(f"{JS}/node_modules/")}
        names = archive.namelist()
    assert set(carried) == set(MANIFEST["files"])
    for relative, data in carried.items():
        assert hashlib.sha256(data).hexdigest() == MANIFEST["files"][relative]["sha256"], relative
    assert f"{JS}/pyodide-files.json" in names
    assert not [n for n in names if n.endswith((".d.ts", ".map", ".html"))]
    size = sum(len(d) for d in carried.values())
    print(f"runtime files in the wheel: {len(carried)}, {size / 1e6:.1f} MB; wheel {wheel.stat().st_size / 1e6:.1f} MB")


def test_the_default_wheel_is_pure_python(wheel: Path) -> None:
    # The compiled front end goes into a wheel only when asked (FLOW_COMPILED_WHEEL=1,
    # hatch_build.py; docs/testing.md gives the command): the default fits every platform.
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        assert not [n for n in archive.namelist() if n.startswith("flow_kernel_front/") or n.endswith(".so")]


def test_a_wheel_built_from_the_sdist_carries_them_too(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-c", f"from hatchling.build import build_sdist; build_sdist({str(tmp_path)!r})"],
                   cwd=ROOT, check=True, capture_output=True, timeout=300)
    (sdist,) = tmp_path.glob("flow_kernel-*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path / "src", filter="data")
    (source,) = (tmp_path / "src").iterdir()
    proc = build_wheel(source, tmp_path / "dist")
    assert proc.returncode == 0, proc.stderr
    (built,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(built) as archive:
        carried = {n.removeprefix(f"{JS}/node_modules/") for n in archive.namelist() if n.startswith(f"{JS}/node_modules/")}
    assert carried == set(MANIFEST["files"])


def test_the_build_refuses_a_changed_or_missing_runtime_file(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "hatch_build.py", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "flow_kernel", source / "flow_kernel", ignore=shutil.ignore_patterns("__pycache__"))
    modules = source / JS / "node_modules"
    with (modules / "pyodide" / "pyodide.mjs").open("a") as handle:
        handle.write("\nprocess.stderr.write('changed');\n")
    (modules / "pyodide" / "python_stdlib.zip").unlink()
    proc = build_wheel(source, tmp_path / "out")
    assert proc.returncode != 0
    assert f"{modules / 'pyodide' / 'pyodide.mjs'}: sha256" in proc.stderr
    assert f"{modules / 'pyodide' / 'python_stdlib.zip'}: No such file" in proc.stderr
    assert not list((tmp_path / "out").glob("*.whl")) if (tmp_path / "out").exists() else True
    # The same tree with the published files builds: the refusal is the hook's doing.
    shutil.copy2(ROOT / JS / "node_modules" / "pyodide" / "pyodide.mjs", modules / "pyodide" / "pyodide.mjs")
    shutil.copy2(ROOT / JS / "node_modules" / "pyodide" / "python_stdlib.zip", modules / "pyodide" / "python_stdlib.zip")
    assert build_wheel(source, tmp_path / "out").returncode == 0


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


FAKE_NPM = """#!/bin/sh
echo "npm $*" >> "{log}"
echo "npm must not run at run time" >&2
exit 1
"""

CELL = (ROOT / "examples" / "hello.flow").read_text()

KERNEL_DRIVER = """
import json, sys
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import start_new_kernel
spec = KernelSpecManager().get_kernel_spec("flow")
km, kc = start_new_kernel(kernel_name="flow", startup_timeout=90, cwd=sys.argv[1])
try:
    msg_id = kc.execute(sys.argv[2])
    reply = kc.get_shell_msg(timeout=90)
    out, results, errors = [], [], []
    while True:
        msg = kc.get_iopub_msg(timeout=90)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "status" and content["execution_state"] == "idle":
            break
        if kind == "stream":
            out.append(content["text"])
        elif kind == "execute_result":
            results.append(content["data"]["text/plain"])
        elif kind == "error":
            errors.append(content)
    print(json.dumps({"status": reply["content"]["status"], "stdout": "".join(out), "results": results,
                      "errors": errors, "spec": spec.resource_dir, "argv": spec.argv}))
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
"""


def test_a_fresh_venv_runs_a_flow_file_and_a_kernel_cell_with_nothing_installed_at_run_time(
        wheel: Path, tmp_path: Path) -> None:
    started = time.perf_counter()
    house = tmp_path / "wheelhouse"
    house.mkdir()
    for dist in dependency_closure(wheel):
        repack(dist, house)
    # No npm within reach: a fake one that records any call, first on PATH; node and
    # unshare (the sandbox's network namespace) beside it, and nothing else of the machine's.
    tools = tmp_path / "tools"
    tools.mkdir()
    npm_log = tmp_path / "npm-calls.log"
    (tools / "npm").write_text(FAKE_NPM.format(log=npm_log))
    (tools / "npm").chmod(0o755)
    for name in ("node", "unshare"):
        found = shutil.which(name)
        if found:
            (tools / name).symlink_to(found)
    base = sysconfig.get_config_var("BINDIR") or os.path.dirname(os.path.realpath(sys.executable))
    venv = tmp_path / "fresh"
    subprocess.run([os.path.join(base, "python3"), "-m", "venv", str(venv)], check=True, timeout=120,
                   env=pip_env(PATH=str(tools)))
    bindir = venv / "bin"
    env = pip_env(PATH=f"{tools}{os.pathsep}{bindir}", HOME=str(tmp_path / "home"),
                  FLOW_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("FLOW_NODE", None)
    install = subprocess.run([str(bindir / "python"), "-m", "pip", "install", "--no-index", "--find-links", str(house),
                              str(wheel)], capture_output=True, text=True, timeout=300, env=env)
    assert install.returncode == 0, install.stdout + install.stderr
    installed = Path(subprocess.run([str(bindir / "python"), "-c", "import flow_kernel, os; print(os.path.dirname("
                                     "flow_kernel.__file__))"], capture_output=True, text=True, env=env,
                                    cwd=tmp_path, check=True).stdout.strip())
    assert installed.is_relative_to(venv), installed
    before = _tree(installed)
    print(f"wheelhouse and install: {time.perf_counter() - started:.1f} s")

    work = tmp_path / "work"
    work.mkdir()
    (work / "hello.flow").write_text(CELL)
    run = subprocess.run([str(bindir / "flow"), "run", "hello.flow"], capture_output=True, text=True, timeout=180,
                         env=env, cwd=work)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "Greeting 2 people\nHello, Ada!\n"

    doctor = subprocess.run([str(bindir / "flow"), "doctor"], capture_output=True, text=True, timeout=60, env=env, cwd=work)
    pyodide_row = next(line for line in doctor.stdout.splitlines() if " pyodide " in line)
    assert pyodide_row.startswith("ok") and str(installed) in pyodide_row, doctor.stdout

    kernel = subprocess.run([str(bindir / "python"), "-c", KERNEL_DRIVER, str(work), CELL], capture_output=True,
                            text=True, timeout=240, env=env, cwd=work)
    assert kernel.returncode == 0, kernel.stderr
    cell = json.loads(kernel.stdout.strip().splitlines()[-1])
    assert Path(cell["spec"]).is_relative_to(venv), cell["spec"]
    assert cell["status"] == "ok" and not cell["errors"], cell
    assert cell["stdout"] == "Greeting 2 people\n"
    assert cell["results"] and "Hello, Ada!" in cell["results"][0]

    assert not npm_log.exists(), npm_log.read_text()
    assert _tree(installed) == before, "something was written into the installed package"
    # The fake npm is what any npm call would have run (so the check above can fail).
    subprocess.run([str(bindir / "python"), "-c", "import shutil, subprocess; subprocess.run([shutil.which('npm'), 'ci'])"],
                   env=env, cwd=work, capture_output=True, timeout=60)
    assert npm_log.read_text() == "npm ci\n"
    print(f"fresh venv: flow run and a kernel cell in {time.perf_counter() - started:.1f} s in all")

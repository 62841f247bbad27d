"""The sandbox's files: the pinned Pyodide (installed by npm from package-lock.json on
first use) and the memory snapshot (built on demand, keyed by everything it bakes in)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from flow_kernel.sandbox.node import NodeInfo

JS_DIR = Path(__file__).parent / "js"
BOOTSTRAP_DIR = Path(__file__).parent / "bootstrap"
RUNNER = JS_DIR / "runner.mjs"
PYODIDE_DIR = JS_DIR / "node_modules" / "pyodide"


class SandboxInstallError(RuntimeError):
    pass


def pinned_version() -> str:
    return str(json.loads((JS_DIR / "package.json").read_text())["dependencies"]["pyodide"])


def installed_version() -> str | None:
    try:
        return str(json.loads((PYODIDE_DIR / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def ensure_pyodide() -> Path:
    """The Pyodide directory, running `npm ci` first when it is missing or not the pinned version."""
    if installed_version() == pinned_version() and (PYODIDE_DIR / "pyodide.asm.wasm").exists():
        return PYODIDE_DIR
    npm = shutil.which("npm")
    if npm is None:
        raise SandboxInstallError(f"Pyodide {pinned_version()} is not installed and npm was not found to install it")
    # `npm ci` installs exactly what package-lock.json pins; `npm install` is the fallback
    # for an npm too old for the lock file's format (it still honours the exact pin).
    errors = []
    for command in ([npm, "ci", "--no-audit", "--no-fund"], [npm, "install", "--no-audit", "--no-fund"]):
        try:
            proc = subprocess.run(command, cwd=JS_DIR, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as exc:
            errors.append(f"npm {command[1]}: {exc}")
            continue
        if proc.returncode == 0 and installed_version() == pinned_version():
            return PYODIDE_DIR
        errors.append(f"npm {command[1]} (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    raise SandboxInstallError("installing Pyodide with npm failed:\n" + "\n".join(errors))


def cache_dir() -> Path:
    base = os.environ.get("FLOW_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "flow-kernel")
    return Path(base)


def snapshot_key(node: NodeInfo) -> str:
    digest = hashlib.sha256()
    digest.update(f"pyodide {installed_version()} node {'.'.join(map(str, node.version))}\n".encode())
    for path in sorted((BOOTSTRAP_DIR / "flowbox").glob("*.py")) + [RUNNER]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def snapshot_path(node: NodeInfo) -> Path:
    return cache_dir() / f"pyodide-{installed_version()}-{snapshot_key(node)}.snapshot"


# Why building a snapshot failed, per snapshot file, for this process's lifetime: a
# failed build is not retried on every sandbox start (each try costs a Pyodide load),
# and `flow doctor` can say why sandboxes start cold.
snapshot_failures: dict[Path, str] = {}


def ensure_snapshot(node: NodeInfo) -> Path | None:
    """The snapshot file, built by a trusted builder process if missing; None if that
    fails (sandboxes then start cold; the reason is kept in `snapshot_failures`)."""
    path = snapshot_path(node)
    if path.exists():
        return path
    if path in snapshot_failures:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # The builder runs only trusted code, but it gets an empty environment all the
        # same, like every sandbox: nothing of the host's reaches the baked-in heap.
        proc = subprocess.run([node.path, str(RUNNER), "--pyodide", str(ensure_pyodide()), "--bootstrap",
                               str(BOOTSTRAP_DIR), "--make-snapshot", str(path)],
                              capture_output=True, text=True, timeout=300, env={})
    except (OSError, subprocess.SubprocessError, SandboxInstallError) as exc:
        snapshot_failures[path] = f"{type(exc).__name__}: {exc}"
        return None
    if proc.returncode != 0 or not path.exists():
        snapshot_failures[path] = f"the builder exited with {proc.returncode}: {proc.stderr.strip()[-2000:]}"
        return None
    return path

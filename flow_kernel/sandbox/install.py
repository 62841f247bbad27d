"""The sandbox's files: the pinned Pyodide runtime and the memory snapshot.

Nothing is installed at run time. The Pyodide runtime files come with the package (the
wheel carries them; a checkout gets them from `npm ci` in `bash scripts/setup`) and are
accepted only when every file has the sha256 that `js/pyodide-files.json` records (made
by scripts/pyodide-manifest from the npm tarballs whose integrity package-lock.json
pins). A missing or changed file is a `SandboxInstallError` that names it, never a
download. The memory snapshot is built on demand into the user's cache, keyed by
everything it bakes in, and is used only while its sha256 matches the record written
beside it when this version built it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from io import BufferedReader
from pathlib import Path
from typing import Any

from flow_kernel.sandbox.node import NodeInfo

JS_DIR = Path(__file__).parent / "js"
BOOTSTRAP_DIR = Path(__file__).parent / "bootstrap"
RUNNER = JS_DIR / "runner.mjs"
NODE_MODULES = JS_DIR / "node_modules"
PYODIDE_DIR = NODE_MODULES / "pyodide"
MANIFEST = JS_DIR / "pyodide-files.json"

REPAIR = ("reinstall flow-kernel (pip install --force-reinstall --no-deps flow-kernel); "
          "in a checkout of its source, run `bash scripts/setup`")


class SandboxInstallError(RuntimeError):
    pass


def pinned_version() -> str:
    return str(json.loads((JS_DIR / "package.json").read_text())["dependencies"]["pyodide"])


def installed_version() -> str | None:
    try:
        return str(json.loads((PYODIDE_DIR / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def runtime_paths() -> list[Path]:
    """Every runtime file the sandbox loads: the only Pyodide files a sandbox may read."""
    return [NODE_MODULES / relative for relative in runtime_files()]


def runtime_files() -> dict[str, dict[str, Any]]:
    """{path relative to node_modules: {"size", "sha256"}} for every runtime file the sandbox loads."""
    try:
        files = json.loads(MANIFEST.read_text())["files"]
    except (OSError, ValueError, KeyError) as exc:
        raise SandboxInstallError(f"the list of Pyodide runtime hashes {MANIFEST} cannot be read ({exc}): {REPAIR}") from None
    return dict(files)


# A file's identity when it was hashed: inode, size, mtime and ctime. ctime cannot be set
# back by the file's owner, so a file written after its check (even with its size and
# mtime restored) is hashed again.
Signature = tuple[int, int, int, int]
_verified: dict[Path, Signature] = {}


def _signature(stat: os.stat_result) -> Signature:
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def _sha256(handle: BufferedReader) -> str:
    return hashlib.file_digest(handle, "sha256").hexdigest()


def _check_file(path: Path, size: int, sha256: str) -> str | None:
    """None if the file has this size and sha256 (hashed once while it stays the same
    file), else what is wrong with it."""
    try:
        with path.open("rb") as handle:
            signature = _signature(os.fstat(handle.fileno()))
            if _verified.get(path) == signature:
                return None
            if signature[1] != size:
                return f"is {signature[1]} bytes, expected {size}"
            actual = _sha256(handle)
    except FileNotFoundError:
        return "is missing"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if actual != sha256:
        return f"has sha256 {actual}, expected {sha256}"
    _verified[path] = signature
    return None


def verify_runtime() -> None:
    """Raises `SandboxInstallError` naming the first runtime file that is missing or does
    not have its published hash. Hashes each file once per process (about 40 ms for the
    13.5 MB); later calls only stat them."""
    for relative, want in runtime_files().items():
        path = NODE_MODULES / relative
        problem = _check_file(path, int(want["size"]), str(want["sha256"]))
        if problem is not None:
            raise SandboxInstallError(f"the Pyodide runtime file {path} {problem}; the sandbox does not start from "
                                      f"files that are not the published Pyodide {pinned_version()}. To repair: {REPAIR}")


def ensure_pyodide() -> Path:
    """The Pyodide directory, once every runtime file in it matches its published hash."""
    verify_runtime()
    return PYODIDE_DIR


def cache_dir() -> Path:
    base = os.environ.get("FLOW_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "flow-kernel")
    return Path(base)


def snapshot_key(node: NodeInfo) -> str:
    """What a snapshot bakes in: the Node version, the runtime files' hashes, the bootstrap and the runner."""
    digest = hashlib.sha256()
    digest.update(f"pyodide {pinned_version()} node {'.'.join(map(str, node.version))}\n".encode())
    digest.update(json.dumps(runtime_files(), sort_keys=True).encode())
    for path in sorted((BOOTSTRAP_DIR / "flowbox").glob("*.py")) + [RUNNER]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def snapshot_path(node: NodeInfo) -> Path:
    return cache_dir() / f"pyodide-{pinned_version()}-{snapshot_key(node)}.snapshot"


def snapshot_record_path(snapshot: Path) -> Path:
    """The record written beside a snapshot when it is built: its sha256, size and key."""
    return snapshot.with_name(snapshot.name + ".json")


# Why building a snapshot failed, per snapshot file, for this process's lifetime: a
# failed build is not retried on every sandbox start (each try costs a Pyodide load),
# and `flow doctor` can say why sandboxes start cold.
snapshot_failures: dict[Path, str] = {}
# Snapshots found not to match their record (deleted and rebuilt, or skipped): for `flow doctor`.
snapshot_rejections: dict[Path, str] = {}


def snapshot_problem(snapshot: Path, node: NodeInfo | None = None) -> str | None:
    """None if the snapshot is the file this version built (its record's key is the key
    its name says, and its size and sha256 are the record's) — by `node`'s version of
    Node, when given — else what is wrong."""
    try:
        record = json.loads(snapshot_record_path(snapshot).read_text())
        key, size, sha256 = str(record["key"]), int(record["size"]), str(record["sha256"])
        built_by = str(record["node"])
    except FileNotFoundError:
        return "it has no record of what was built"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"its record cannot be read ({exc})"
    if not snapshot.name.endswith(f"-{key}.snapshot"):
        return f"its record is for key {key}"
    # The heap a snapshot restores holds what start-up found about the Node that built it:
    # Pyodide's wasm call trampoline is a function-table index where WebAssembly GC is on
    # (Node 24), 0 where it is not (Node 20). Node 20 restoring Node 24's snapshot fails
    # ("table index is out of bounds"); Node 24 restoring Node 20's runs without the
    # trampoline, ~1.35x slower on C calls (docs/performance.md, "Node 24 (session three)").
    if node is not None and built_by != ".".join(map(str, node.version)):
        return f"it was built by Node {built_by}, not by this Node {'.'.join(map(str, node.version))}"
    return _check_file(snapshot, size, sha256)


def usable_snapshot(snapshot: Path, node: NodeInfo | None = None) -> bool:
    """Whether a sandbox may load this snapshot now (a stat when nothing changed since it was
    checked), into `node` when given."""
    problem = snapshot_problem(snapshot, node)
    if problem is not None:
        snapshot_rejections[snapshot] = problem
    return problem is None


def ensure_snapshot(node: NodeInfo) -> Path | None:
    """The snapshot file, checked against its record, or built by a trusted builder process
    when it is missing or does not match (a mismatching file is deleted, never loaded);
    None if that fails (sandboxes then start cold; the reason is kept in `snapshot_failures`)."""
    try:
        # The runtime files are hashed here, in the pool's worker thread, rather than on
        # the event loop when the first sandbox command is made (which then only stats them).
        ensure_pyodide()
        path = snapshot_path(node)
    except (OSError, SandboxInstallError):
        return None  # the sandbox's own start then says what is missing
    if path in snapshot_failures:
        return None
    if path.exists() or snapshot_record_path(path).exists():
        if usable_snapshot(path, node):
            return path
        for stale in (path, snapshot_record_path(path)):
            stale.unlink(missing_ok=True)
    return _build_snapshot(node, path)


def _build_snapshot(node: NodeInfo, path: Path) -> Path | None:
    building = path.with_name(f"{path.name}.{os.getpid()}.building")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # The builder runs only trusted code, but it gets an empty environment all the
        # same, like every sandbox: nothing of the host's reaches the baked-in heap.
        proc = subprocess.run([node.path, str(RUNNER), "--pyodide", str(ensure_pyodide()), "--bootstrap",
                               str(BOOTSTRAP_DIR), "--make-snapshot", str(building)],
                              capture_output=True, text=True, timeout=300, env={})
        if proc.returncode != 0 or not building.exists():
            snapshot_failures[path] = f"the builder exited with {proc.returncode}: {proc.stderr.strip()[-2000:]}"
            return None
        # Hash what the builder wrote before it takes the snapshot's name, then write the
        # record (atomically) and move the snapshot into place.
        with building.open("rb") as handle:
            size, sha256 = os.fstat(handle.fileno()).st_size, _sha256(handle)
        record = {"key": snapshot_key(node), "size": size, "sha256": sha256, "pyodide": pinned_version(),
                  "node": ".".join(map(str, node.version)), "runtime_files": hashlib.sha256(MANIFEST.read_bytes()).hexdigest()}
        record_path = snapshot_record_path(path)
        pending = record_path.with_name(f"{record_path.name}.{os.getpid()}.tmp")
        pending.write_text(json.dumps(record, indent=1) + "\n")
        os.replace(pending, record_path)
        os.replace(building, path)
    except (OSError, subprocess.SubprocessError, SandboxInstallError) as exc:
        snapshot_failures[path] = f"{type(exc).__name__}: {exc}"
        return None
    finally:
        building.unlink(missing_ok=True)
    return path if usable_snapshot(path) else None

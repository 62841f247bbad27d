"""Nothing is installed at run time, and nothing changed is run (issue 15, item 8).

The Pyodide runtime files are checked against the sha256 recorded in
flow_kernel/sandbox/js/pyodide-files.json before any sandbox starts: a changed file (here,
pyodide.mjs with a line of the attacker's JavaScript appended) or a missing one is a clear
error naming the file and how to repair it — no npm, no download, no sandbox. The memory
snapshot in the user's cache is loaded only while its sha256 matches the record written
when it was built; a changed one is rebuilt, never loaded. Each door is also reopened (the
old check put back) to show the attack then gets through.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from flow_kernel.errors import FlowIsolateError
from flow_kernel.runtime.doctor import doctor_report
from flow_kernel.sandbox import install
from flow_kernel.sandbox.install import SandboxInstallError
from flow_kernel.sandbox.node import find_node
from flow_kernel.sandbox.process import SandboxProcess, sandbox_command

CANARY = "flow-canary: the attacker's pyodide.mjs ran"


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the runtime files the sandbox uses instead of the real ones, no check
    remembered from earlier, and a fake npm first on PATH that records any call."""
    modules = tmp_path / "node_modules"
    for relative in install.runtime_files():
        (modules / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(install.NODE_MODULES / relative, modules / relative)
    monkeypatch.setattr(install, "NODE_MODULES", modules)
    monkeypatch.setattr(install, "PYODIDE_DIR", modules / "pyodide")
    monkeypatch.setattr(install, "_verified", {})
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "npm").write_text(f"#!/bin/sh\necho \"$*\" >> {tmp_path / 'npm.log'}\nexit 1\n")
    (tools / "npm").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    yield modules
    assert not (tmp_path / "npm.log").exists(), "npm was called"


def start_sandbox() -> list[str]:
    """Starts a sandbox (cold) and kills it again; the lines it wrote on stderr."""
    async def start() -> list[str]:
        process = await SandboxProcess.start(snapshot=None)
        await process.kill()
        return process.stderr_tail
    return asyncio.run(start())


def test_a_changed_runtime_file_never_starts_a_sandbox(runtime: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = runtime / "pyodide" / "pyodide.mjs"
    with module.open("a") as handle:
        handle.write(f"\nprocess.stderr.write({CANARY!r} + '\\n');\n")
    with pytest.raises(SandboxInstallError) as caught:
        install.ensure_pyodide()
    message = str(caught.value)
    assert str(module) in message and "expected" in message and "scripts/setup" in message
    # What a run sees: an `isolate` error naming the file, before any Node process exists.
    with pytest.raises(FlowIsolateError, match=r"pyodide\.mjs"):
        start_sandbox()

    # The door reopened (the old check: the version in package.json and a wasm file): the
    # attacker's code runs in every sandbox.
    def old_check() -> None:
        if install.installed_version() != install.pinned_version() or not (install.PYODIDE_DIR / "pyodide.asm.wasm").exists():
            raise SandboxInstallError("not installed")

    monkeypatch.setattr(install, "verify_runtime", old_check)
    stderr = start_sandbox()
    assert any(CANARY in line for line in stderr), stderr


def test_a_missing_runtime_file_is_a_clear_error_never_a_download(runtime: Path) -> None:
    (runtime / "pyodide" / "python_stdlib.zip").unlink()
    with pytest.raises(SandboxInstallError, match=r"python_stdlib\.zip is missing.*reinstall flow-kernel.*scripts/setup"):
        install.ensure_pyodide()
    # `flow doctor` says the same.
    (row,) = [r for r in doctor_report() if r[0] == "pyodide"]
    assert row[1] is False and "python_stdlib.zip is missing" in row[2]


def test_a_same_size_change_after_a_good_check_is_caught(runtime: Path) -> None:
    assert install.ensure_pyodide() == runtime / "pyodide"  # checked, and remembered
    stdlib = runtime / "pyodide" / "python_stdlib.zip"
    before = stdlib.stat()
    data = bytearray(stdlib.read_bytes())
    data[len(data) // 2] ^= 0xFF
    stdlib.write_bytes(bytes(data))
    os.utime(stdlib, ns=(before.st_atime_ns, before.st_mtime_ns))  # size and mtime as they were
    with pytest.raises(SandboxInstallError, match=r"python_stdlib\.zip has sha256 [0-9a-f]{64}, expected"):
        install.ensure_pyodide()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tamper(path: Path) -> str:
    """Flips one byte in the middle, keeping size and mtime; returns the new sha256."""
    before = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    return _sha256(path)


def test_a_changed_snapshot_is_rebuilt_never_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOW_CACHE_DIR", str(tmp_path))
    for table in ("snapshot_failures", "snapshot_rejections", "_verified"):
        monkeypatch.setattr(install, table, {})
    node = find_node()
    snapshot = install.ensure_snapshot(node)
    assert snapshot is not None and snapshot.parent == tmp_path
    record = install.snapshot_record_path(snapshot)
    assert f'"sha256": "{_sha256(snapshot)}"' in record.read_text()

    tampered = _tamper(snapshot)
    # A sandbox about to start with it starts cold instead: the file is not handed to Node.
    command = sandbox_command(node, snapshot=snapshot, memory_mb=512)
    assert "--snapshot" not in command and str(snapshot) not in " ".join(command)
    assert "sha256" in install.snapshot_rejections[snapshot]
    # The next pool start rebuilds it (a build is not byte-for-byte repeatable): the file on
    # disk is again one this version built, and its record says so.
    assert install.ensure_snapshot(node) == snapshot
    rebuilt = _sha256(snapshot)
    assert rebuilt != tampered and f'"sha256": "{rebuilt}"' in record.read_text()
    assert install.usable_snapshot(snapshot)

    # A planted snapshot with no record of its build is not used either.
    record.unlink()
    assert not install.usable_snapshot(snapshot)
    assert "--snapshot" not in sandbox_command(node, snapshot=snapshot, memory_mb=512)


def test_the_snapshot_door_reopened_loads_the_changed_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOW_CACHE_DIR", str(tmp_path))
    for table in ("snapshot_failures", "snapshot_rejections", "_verified"):
        monkeypatch.setattr(install, table, {})
    node = find_node()
    snapshot = install.snapshot_path(node)
    snapshot.write_bytes(b"\0" * 4096)  # planted: no record, not what any build wrote
    monkeypatch.setattr(install, "snapshot_problem", lambda path, node=None: None)  # the old rule: it exists, use it
    assert install.ensure_snapshot(node) == snapshot
    assert snapshot.read_bytes() == b"\0" * 4096
    command = sandbox_command(node, snapshot=snapshot, memory_mb=512)
    assert command[command.index("--snapshot") + 1] == str(snapshot)

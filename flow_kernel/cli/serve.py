"""`flow serve FILE --mcp [--http HOST:PORT]` and `flow serve FILE --a2a HOST:PORT`: the file's
workflows served to other agents (docs/protocols.md) — as MCP tools (stdio by default, or
streamable HTTP) or as an A2A agent whose skills they are.

The flags are the person's grants, as for `flow run`. Serving listens on loopback unless the
person names another host, and then clients must send the bearer token held in the variable
`--token-env` names (docs/security.md, "Serving workflows"). Exit 2 on a usage error or a
file with compile errors; the server runs until interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Any

from flow_kernel.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    display_name,
    load_file,
    print_error,
    wants_color,
)


def add_command(commands: Any) -> None:
    serve = commands.add_parser(
        "serve", help="serve a file's workflows as MCP tools or as an A2A agent",
        description="Serve FILE's workflows to other agents: --mcp (stdio, or streamable HTTP with --http) or "
        "--a2a HOST:PORT. Loopback only unless a host is named, which then needs --token-env.")
    serve.add_argument("file", metavar="FILE")
    mode = serve.add_mutually_exclusive_group(required=True)
    mode.add_argument("--mcp", action="store_true", help="an MCP server whose tools are the workflows")
    mode.add_argument("--a2a", metavar="HOST:PORT", help="an A2A agent whose skills are the workflows")
    serve.add_argument("--http", metavar="HOST:PORT", help="with --mcp: streamable HTTP instead of stdio")
    serve.add_argument("--token-env", metavar="VAR",
                       help="clients must send `Authorization: Bearer $VAR` (required off loopback)")
    serve.add_argument("--operator", metavar="POLICY",
                       help="who answers approve/ask when the client cannot: auto-approve, auto-deny, answers:PATH "
                       "(default: fail closed with operator-unavailable)")
    serve.add_argument("--allow-run", metavar="EXE", action="append", default=[], help="allow `run` of EXE")
    serve.add_argument("--allow-path", metavar="PATH", action="append", default=[],
                       help="let FILE `use` PATH outside its folder")
    serve.add_argument("--config", metavar="FLOW_TOML", help="apply this flow.toml instead of the one found")
    serve.set_defaults(handler=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from flow_kernel.cli.serve_common import ExposureError, parse_address, required_token

    try:
        if args.http and not args.mcp:
            raise UsageError("--http goes with --mcp (an A2A agent is always served over HTTP: --a2a HOST:PORT)")
        address = args.http or args.a2a
        host, port = parse_address(address, "--http" if args.http else "--a2a") if address else ("", 0)
        token = required_token(host, args.token_env) if address else None
        workflow_host = _workflow_host(args)
    except (UsageError, ExposureError, ValueError) as exc:
        print_error(str(exc), command="serve")
        return EXIT_USAGE
    if workflow_host is None:
        return EXIT_USAGE
    name = Path(args.file).stem
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args, workflow_host, name, host, port, token))
    return EXIT_OK


async def _serve(args: argparse.Namespace, workflow_host: Any, name: str, host: str, port: int,
                 token: str | None) -> None:
    def ready(server: Any) -> None:
        url = f"http://{host}:{port}" + ("/mcp" if args.mcp else "")
        sys.stderr.write(f"flow serve: {', '.join(workflow_host.workflows) or 'no workflows'} on {url}\n")
        sys.stderr.flush()

    try:
        if args.mcp and not args.http:
            from flow_kernel.cli.serve_mcp import serve_stdio

            await serve_stdio(workflow_host, name)
        elif args.mcp:
            from flow_kernel.cli.serve_mcp import serve_streamable_http

            await serve_streamable_http(workflow_host, name, host, port, token, ready)
        else:
            from flow_kernel.cli.serve_a2a import serve_a2a

            await serve_a2a(workflow_host, name, host, port, token, ready)
    finally:
        await workflow_host.aclose()


def _workflow_host(args: argparse.Namespace) -> Any:
    """The checked file and a Session to run its workflows, or None (compile errors printed)."""
    from flow_kernel.cli.serve_common import WorkflowHost, file_folder
    from flow_kernel.diagnostics.render import render_text
    from flow_kernel.files import FileSystemLoader
    from flow_kernel.lang.compiler import compile_checked
    from flow_kernel.runtime.config import config_folder, find_config, load_config
    from flow_kernel.runtime.operator import Operator
    from flow_kernel.runtime.session import Session
    from flow_kernel.runtime.trust import Capability, Trust, operator_capability

    try:
        import mcp  # noqa: F401
        if args.a2a:
            import a2a  # noqa: F401
    except ImportError:
        raise UsageError("flow serve needs the protocol SDKs: pip install 'flow-kernel[protocols]'") from None
    here = Path.cwd()
    grants = [Capability.of("run", exe, here) for exe in args.allow_run]
    grants += [Capability.of("path", raw, here) for raw in args.allow_path]
    if args.operator and (cap := operator_capability(args.operator, here)) is not None:
        grants.append(cap)
    if args.config:
        grants.append(Capability("config", str(Path(args.config).resolve().parent)))
    trust = Trust(config_folder(args.file), grants=grants, document=Path(args.file), asker="This file")
    config = load_config(args.config) if args.config else find_config(config_folder(args.file), trust=trust)
    result = load_file(FileSystemLoader(guard=trust.use_guard()), args.file, models=config.models,
                       mcp_servers=config.mcp)
    if not result.ok:
        sys.stderr.write(render_text(result.diagnostics, color=wants_color(sys.stderr), display_name=display_name) + "\n")
        return None
    if config.ignored is not None:
        print_error(f"warning: {config.ignored_warning()}", command="serve")
    policy = args.operator or config.operator
    fallback = Operator.parse(policy) if policy and policy not in ("interactive", "none") else None
    session = Session(directory=file_folder(args.file), config=config, allow_run=args.allow_run, trust=trust)
    return WorkflowHost(session, compile_checked(result), fallback)


__all__ = ["add_command", "cmd_serve"]

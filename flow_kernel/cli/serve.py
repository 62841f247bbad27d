"""`flow serve FILE --mcp [--http HOST:PORT]` and `flow serve FILE --a2a HOST:PORT`: the file's
workflows served to other agents (docs/protocols.md) — as MCP tools (stdio by default, or
streamable HTTP) or as an A2A agent whose skills they are.

The flags are the person's grants, as for `flow run`. Over HTTP clients send a bearer token:
one generated and printed at start (or the value of `--token-env VAR`), or one of those
`--issue-token NAME` prints, each caller seeing only its own A2A tasks; `--no-auth` (loopback
only) opts out with a warning. Browsers' requests from other origins are refused unless
`--allow-origin` names them (docs/security.md, "Serving workflows"). Exit 2 on a usage
error or a file with compile errors; the server runs until interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from flow_kernel.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    display_name,
    flag_config,
    flag_trust,
    load_file,
    print_error,
    print_warning,
    wants_color,
    warn_unpinned,
)
from flow_kernel.serve.limits import DEFAULT_QUESTION_TIMEOUT, MIB

# Tasks an A2A server keeps in memory for each caller (the journals in .flow/runs keep every run).
DEFAULT_KEPT_TASKS = 100
DEFAULT_KEPT_SECONDS = 3600.0


def add_command(commands: Any) -> None:
    serve = commands.add_parser(
        "serve", help="serve a file's workflows as MCP tools or as an A2A agent",
        description="Serve FILE's workflows to other agents: --mcp (stdio, or streamable HTTP with --http) or "
        "--a2a HOST:PORT. Over HTTP clients send `Authorization: Bearer TOKEN`: the token printed at start "
        "(or --token-env's), or one --issue-token prints.")
    serve.add_argument("file", metavar="FILE")
    mode = serve.add_mutually_exclusive_group(required=True)
    mode.add_argument("--mcp", action="store_true", help="an MCP server: the workflows as tools, prompts/*.md as prompts, its runs as resources")
    mode.add_argument("--a2a", metavar="HOST:PORT", help="an A2A agent whose skills are the workflows")
    serve.add_argument("--http", metavar="HOST:PORT", help="with --mcp: streamable HTTP instead of stdio")
    serve.add_argument("--token-env", metavar="VAR",
                       help="the main token is $VAR (at least 16 characters) instead of a generated one")
    serve.add_argument("--issue-token", metavar="NAME", action="append", default=[],
                       help="one more client with a token of its own, printed at start; it sees only its own A2A "
                       "tasks (repeatable)")
    serve.add_argument("--no-auth", action="store_true",
                       help="no token at all (loopback only; any local program may then call, and all callers "
                       "share their tasks)")
    serve.add_argument("--allow-origin", metavar="ORIGIN", action="append", default=[],
                       help="let web pages of ORIGIN (e.g. http://localhost:3000) call the server (repeatable)")
    serve.add_argument("--keep-tasks", metavar="N", type=int, default=DEFAULT_KEPT_TASKS,
                       help=f"A2A: finished tasks kept per caller, least recently used dropped first "
                       f"(default {DEFAULT_KEPT_TASKS})")
    serve.add_argument("--keep-finished", metavar="SECONDS", type=float, default=DEFAULT_KEPT_SECONDS,
                       help=f"A2A: how long a finished task stays readable (default {DEFAULT_KEPT_SECONDS:.0f}); "
                       "its journal in .flow/runs stays")
    serve.add_argument("--max-body", metavar="BYTES", type=int, default=MIB,
                       help=f"HTTP: the largest request body, and the largest run input as JSON (default {MIB})")
    serve.add_argument("--question-timeout", metavar="SECONDS", type=float, default=DEFAULT_QUESTION_TIMEOUT,
                       help="how long approve/ask wait for the caller; then --operator answers, else the "
                       "question's own default, else the run fails operator-unavailable "
                       f"(default {DEFAULT_QUESTION_TIMEOUT:.0f})")
    serve.add_argument("--operator", metavar="POLICY",
                       help="who answers approve/ask when the client cannot: auto-approve, auto-deny, answers:PATH "
                       "(default: fail closed with operator-unavailable)")
    serve.add_argument("--allow-run", metavar="EXE", action="append", default=[], help="allow `run` of EXE")
    serve.add_argument("--allow-path", metavar="PATH", action="append", default=[],
                       help="let FILE `use` PATH outside its folder")
    serve.add_argument("--config", metavar="FLOW_TOML", help="apply this flow.toml instead of the one found")
    serve.set_defaults(handler=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from flow_kernel.serve.door import NO_AUTH_WARNING, ExposureError, open_door, parse_address

    try:
        if args.http and not args.mcp:
            raise UsageError("--http goes with --mcp (an A2A agent is always served over HTTP: --a2a HOST:PORT)")
        if args.keep_tasks < 1 or args.keep_finished <= 0:
            raise UsageError("--keep-tasks and --keep-finished must be positive")
        address = args.http or args.a2a
        if not address and (args.no_auth or args.issue_token or args.allow_origin):
            raise UsageError("--issue-token, --no-auth and --allow-origin go with HTTP (--http or --a2a)")
        host, port = parse_address(address, "--http" if args.http else "--a2a") if address else ("", 0)
        door = open_door(host, port, token_env=args.token_env, no_auth=args.no_auth, issue=args.issue_token,
                         allow_origins=args.allow_origin) if address else None
        if door is not None and not door.auth:
            print_warning(NO_AUTH_WARNING, command="serve")
        workflow_host = _workflow_host(args)
    except (UsageError, ExposureError, ValueError) as exc:
        print_error(str(exc), command="serve")
        return EXIT_USAGE
    if workflow_host is None:
        return EXIT_USAGE
    name = Path(args.file).stem
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args, workflow_host, name, door))
    return EXIT_OK


async def _serve(args: argparse.Namespace, workflow_host: Any, name: str, door: Any) -> None:
    _stop_on_signals(workflow_host)

    def ready(server: Any) -> None:
        url = f"http://{door.host}:{door.port}" + ("/mcp" if args.mcp else "/")
        lines = [f"{', '.join(workflow_host.workflows) or 'no workflows'} on {url}", *door.banner()]
        sys.stderr.write("".join(f"flow serve: {line}\n" for line in lines))
        sys.stderr.flush()

    try:
        if args.mcp and not args.http:
            from flow_kernel.serve.mcp import serve_stdio

            await serve_stdio(workflow_host, name)
        elif args.mcp:
            from flow_kernel.serve.mcp import serve_streamable_http

            await serve_streamable_http(workflow_host, name, door, ready)
        else:
            from flow_kernel.serve.a2a import serve_a2a
            from flow_kernel.serve.a2a_tasks import KeptLimits

            await serve_a2a(workflow_host, name, door, KeptLimits(args.keep_tasks, args.keep_finished), ready)
    finally:
        await workflow_host.aclose()


def _stop_on_signals(workflow_host: Any) -> None:
    """SIGTERM and SIGINT stop the server at once (`_stop_now`)."""
    if threading.current_thread() is threading.main_thread():
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, _stop_now, workflow_host, sig)


def _stop_now(workflow_host: Any, sig: int) -> None:
    """Stop serving the way a kill stops a run, on purpose: the sandboxes are killed and the
    process exits before any run sees it, so the journal of every run still going (one waiting
    on a question among them) has no end and reads `interrupted`, and `flow resume RUN` goes
    on from it (docs/durability.md). Letting the runs end instead would journal them failed."""
    from flow_kernel.runtime.durable.journal import wait_for_syncs

    runs = workflow_host.stop_now()
    said = f"flow serve: stopped by {signal.Signals(sig).name}"
    if runs:
        said += f"; interrupted {len(runs)} run(s), each resumable with `flow resume RUN`: {', '.join(runs)}"
    sys.stderr.write(said + "\n")
    sys.stderr.flush()
    wait_for_syncs()  # the journals of runs that had ended, on the disk
    os._exit(EXIT_OK)


def _workflow_host(args: argparse.Namespace) -> Any:
    """The checked file and a Session to run its workflows, or None (compile errors printed)."""
    from flow_kernel.diagnostics.render import render_text
    from flow_kernel.files import FileSystemLoader
    from flow_kernel.lang.compiler import compile_checked
    from flow_kernel.runtime.config import config_folder
    from flow_kernel.runtime.policy.operator import Operator
    from flow_kernel.runtime.session import Session
    from flow_kernel.serve.common import WorkflowHost, file_folder
    from flow_kernel.serve.limits import Bounds

    if args.max_body < 1 or not 0 < args.question_timeout < math.inf:
        raise UsageError("--max-body and --question-timeout must be positive (a number of bytes, of seconds)")
    try:
        import mcp  # noqa: F401
        if args.a2a:
            import a2a  # noqa: F401
    except ImportError:
        raise UsageError("flow serve needs the protocol SDKs: pip install 'flow-kernel[protocols]'") from None
    trust = flag_trust(args, config_folder(args.file), document=Path(args.file))
    config = flag_config(args, config_folder(args.file), trust)
    result = load_file(FileSystemLoader(guard=trust.use_guard()), args.file, models=config.models,
                       mcp_servers=config.mcp)
    if not result.ok:
        sys.stderr.write(render_text(result.diagnostics, color=wants_color(sys.stderr), display_name=display_name) + "\n")
        return None
    if (ignored := config.ignored_warning()) is not None:
        print_warning(ignored, command="serve")
    policy = args.operator or config.operator
    fallback = Operator.parse(policy) if policy and policy not in ("interactive", "none") else None
    session = Session(directory=file_folder(args.file), config=config, allow_run=args.allow_run, allow=trust)
    warn_unpinned(session.allow_run, command="serve")
    return WorkflowHost(session, compile_checked(result), fallback,
                        Bounds(max_body=args.max_body, question_timeout=args.question_timeout))


__all__ = ["add_command", "cmd_serve"]

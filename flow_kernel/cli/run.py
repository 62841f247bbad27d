"""`flow run` (runtime.md §8).

`flow run FILE [WORKFLOW]`: the CLI's front end over `Session` (runtime/session.py: the
one path a cell or a file takes), which runs the checked file. Exit 0 success, 1 runtime
error, 2 compile errors or a usage error, 3 waiting (`--operator defer`). Human output: `print` on stdout, live progress on stderr when it is a
terminal, the result on stdout. `--format json`: one object on stdout, `print` on
stderr.

The flags are the person's grants (runtime/policy/trust.py), with `FLOW_ALLOW` and folders
trusted by `flow trust`; FILE's content grants itself nothing. A flow.toml found beside or
above FILE in an untrusted folder is not applied (a warning on stderr says so). What the
file asks for and nothing granted is refused with how to grant it: `use` of a file outside
FILE's folder is F2011 (exit 2, nothing runs); `run` of an executable not allowed is a
`capability-violation` (exit 1).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from flow_kernel.cli.common import (
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

EXIT_COMPILE = 2


def add_command(commands: Any) -> None:
    run = commands.add_parser(
        "run", help="compile and run a Flow file in the sandbox",
        description="Run FILE's top-level statements, or WORKFLOW with --input. Exit 0 on success, "
        "1 on a runtime error, 2 on compile errors.")
    run.add_argument("file", metavar="FILE")
    run.add_argument("workflow", metavar="WORKFLOW", nargs="?")
    run.add_argument("--input", metavar="JSON|@FILE", help="the workflow's input object")
    run.add_argument("--operator", metavar="POLICY",
                     help="interactive, auto-approve, auto-deny, answers:PATH, none, or defer (stop `waiting` at an "
                     "approval or question, exit 3; `flow answer` then `flow resume`)")
    run.add_argument("--allow-run", metavar="EXE", action="append", default=[],
                     help="allow `run` of EXE; 'EXE PATTERN…' pins its arguments, e.g. 'git status', 'git log *' "
                     "(repeatable)")
    run.add_argument("--replay", metavar="CASSETTE", help="answer agent calls from a cassette (JSON lines)")
    run.add_argument("--record", metavar="CASSETTE", help="record every agent answer to a cassette")
    run.add_argument("--allow-path", metavar="PATH", action="append", default=[],
                     help="let FILE `use` (or answers: read) PATH outside its folder; a folder grants what is below it")
    run.add_argument("--config", metavar="FLOW_TOML",
                     help="apply this flow.toml (or pyproject.toml's [tool.flow]) instead of the one found")
    run.add_argument("--format", choices=("text", "json"), default="text")
    run.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="live progress on stderr (default: when stderr is a terminal)")
    run.set_defaults(handler=cmd_run)


def _parse_input(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--input: cannot read {text[1:]}: {exc.strerror}") from None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--input is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError("--input must be a JSON object (the workflow's named parameters)")
    return value


def cmd_run(args: argparse.Namespace) -> int:
    from flow_kernel.cli.outcome import report, run_in_terminal
    from flow_kernel.cli.prefetch import prefetch_clients, program_models
    from flow_kernel.diagnostics.render import render_text
    from flow_kernel.files import FileSystemLoader
    from flow_kernel.lang.compiler import compile_checked
    from flow_kernel.runtime.config import ConfigError, config_folder
    from flow_kernel.runtime.context import RunContext
    from flow_kernel.runtime.policy.operator import Operator
    from flow_kernel.runtime.policy.trust import CapabilityDenied
    from flow_kernel.runtime.session import Session

    try:
        from flow_kernel.runtime.policy.ceilings import Ceilings
        from flow_kernel.runtime.policy.processes import RunPolicy

        RunPolicy(args.allow_run)  # a malformed entry is a usage error, before anything runs
        Ceilings.from_env()  # so is a bad FLOW_MAX_* value
        trust = flag_trust(args, config_folder(args.file), document=Path(args.file))
        config = flag_config(args, config_folder(args.file), trust)
        result = load_file(FileSystemLoader(guard=trust.use_guard()), args.file, models=config.models,
                           mcp_servers=config.mcp)
        data = _parse_input(args.input)
        if (ignored := config.ignored_warning()) is not None:
            print_warning(ignored, command="run")
        policy = args.operator or config.operator
        operator = Operator.parse(policy) if policy else Operator.default()
        if args.replay and args.record:
            raise UsageError("--replay and --record cannot be combined")
        if args.replay:
            from flow_kernel.runtime.durable.cassette import CassettePlayer

            CassettePlayer(args.replay)  # a missing or malformed cassette is a usage error, before anything runs
        if args.record:
            from flow_kernel.runtime.durable.cassette import check_recordable

            check_recordable(args.record)  # a link there, or a file that is not a cassette: refused, untouched
    except (UsageError, ValueError, ConfigError) as exc:  # CapabilityDenied is not reached: flags grant
        print_error(str(exc), command="run")
        return EXIT_USAGE
    if not result.ok:
        text = render_text(result.diagnostics, color=wants_color(sys.stderr), display_name=display_name)
        sys.stderr.write(text + "\n")
        return EXIT_COMPILE
    warnings = [d for d in result.diagnostics if not d.is_error]
    if warnings and args.format == "text":
        sys.stderr.write(render_text(warnings, color=wants_color(sys.stderr), display_name=display_name) + "\n")
    if args.workflow is not None:
        entry = result.decls.get(args.workflow)
        if entry is None or entry.kind != "workflow":
            known = sorted(n for n, e in result.decls.items() if e.kind == "workflow")
            print_error(f"`{args.workflow}` is not a workflow in {args.file}"
                        + (f"; it has {', '.join(known)}" if known else ""), command="run")
            return EXIT_USAGE
    json_mode = args.format == "json"
    live = args.progress if args.progress is not None else (sys.stderr.isatty() and not json_mode)
    sinks: list[Any] = []
    if live:
        from flow_kernel.runtime.events.terminal import TerminalProgress

        sinks.append(TerminalProgress(sys.stderr, color=wants_color(sys.stderr)))
    elif args.progress is None:  # no terminal: a log still says why calls wait on their providers
        from flow_kernel.runtime.events.terminal import NOTICES, TerminalProgress

        sinks.append(TerminalProgress(sys.stderr, only=NOTICES))
    if not args.replay:  # a cassette answers every call: no client is needed
        prefetch_clients(program_models(result.decls, config))
    try:
        session = Session(directory=Path.cwd(), config=config, operator=operator, allow_run=args.allow_run,
                          record=args.record, replay=args.replay, allow=trust, sandbox="one",
                          context=RunContext(sinks=sinks))
    except (ValueError, CapabilityDenied) as exc:  # not expected: the checks above ran, the flags granted
        print_error(str(exc), command="run")
        return EXIT_USAGE
    warn_unpinned(session.allow_run, command="run")
    outcome = asyncio.run(run_in_terminal(session, compile_checked(result), json_mode, workflow=args.workflow,
                                          input=data if args.workflow else None))
    return report(outcome, json_mode)


__all__ = ["add_command", "cmd_run"]

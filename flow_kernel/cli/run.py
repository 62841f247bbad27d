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
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    display_name,
    load_file,
    print_error,
    print_warning,
    wants_color,
    warn_unpinned,
)
from flow_kernel.terminal_text import json_for_terminal, terminal_safe

EXIT_COMPILE = 2
EXIT_WAITING = 3  # `--operator defer`: the run waits for an answer (`flow answer`, then `flow resume`)
# Everything written to the terminal goes through terminal_text (issue 15): `print` output,
# results, error messages and JSON carry model and program text, never terminal commands.


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
    from flow_kernel.diagnostics.render import render_text
    from flow_kernel.files import FileSystemLoader
    from flow_kernel.lang.compiler import compile_checked
    from flow_kernel.runtime.config import ConfigError, config_folder, find_config, load_config
    from flow_kernel.runtime.policy.operator import Operator
    from flow_kernel.runtime.policy.trust import CapabilityDenied
    from flow_kernel.runtime.session import Session

    try:
        from flow_kernel.runtime.policy.ceilings import Ceilings
        from flow_kernel.runtime.policy.processes import RunPolicy

        RunPolicy(args.allow_run)  # a malformed entry is a usage error, before anything runs
        Ceilings.from_env()  # so is a bad FLOW_MAX_* value
        trust = _trust(args)
        config = load_config(args.config) if args.config else find_config(config_folder(args.file), trust=trust)
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
    sinks: list[Any] = [_PrintSink(json_mode)]
    if live:
        from flow_kernel.runtime.events.terminal import TerminalProgress

        sinks.append(TerminalProgress(sys.stderr, color=wants_color(sys.stderr)))
    try:
        session = Session(directory=Path.cwd(), config=config, operator=operator, allow_run=args.allow_run,
                          sinks=sinks, record=args.record, replay=args.replay, trust=trust, spare_sandbox=False)
    except (ValueError, CapabilityDenied) as exc:  # not expected: the checks above ran, the flags granted
        print_error(str(exc), command="run")
        return EXIT_USAGE
    warn_unpinned(session.allow_run, command="run")
    outcome = asyncio.run(_run(session, compile_checked(result), args.workflow, data))
    return report(outcome, json_mode)


def report(outcome: Any, json_mode: bool) -> int:
    """The outcome of a run (or a resumed one) on stdout/stderr, and its exit code: 0 completed,
    1 failed, 3 waiting for an operator's answer (`--operator defer`: `report_waiting`)."""
    if outcome.pending:
        return report_waiting(outcome, json_mode)
    if outcome.error is not None and outcome.error.span:
        file = str(outcome.error.span["file"])
        outcome.show_file_as(file, display_name(file))
    if json_mode:
        sys.stdout.write(json_for_terminal(json.dumps(outcome.to_json(), ensure_ascii=False)) + "\n")
    elif outcome.error is None:
        if outcome.result is not None:
            from flow_kernel.runtime.value_text import render_value

            sys.stdout.write(terminal_safe(render_value(outcome.result)) + "\n")
    else:
        from flow_kernel.runtime.events.failure_report import describe_error

        described = describe_error(outcome.error, outcome.source_line, outcome.events)
        sys.stderr.write(terminal_safe("\n".join(described)) + "\n")
    if not json_mode and getattr(outcome, "cost", None) is not None:  # priced calls: what they cost
        usage = outcome.usage
        sys.stderr.write(f"cost {outcome.cost:.6f} ({usage.get('input_tokens', 0):,} input + "
                         f"{usage.get('output_tokens', 0):,} output tokens)\n")
    return EXIT_OK if outcome.error is None else EXIT_FAILED


def report_waiting(outcome: Any, json_mode: bool) -> int:
    """A run that stopped `waiting`: its pending requests, and how to answer them."""
    if json_mode:
        sys.stdout.write(json_for_terminal(json.dumps(outcome.to_json(), ensure_ascii=False)) + "\n")
        return EXIT_WAITING
    lines = [f"run {outcome.run_id} is waiting for an answer:"]
    for pending in outcome.pending:
        lines.append(f"  {pending['id']}  {pending['kind']}: {pending['question']}"
                     + (f"  (choices: {', '.join(map(str, pending['choices']))})" if pending.get("choices") else ""))
    first = outcome.pending[0]
    value = "true" if first["kind"] in ("approve", "tool") else '"…"'
    lines.append(f"answer with `flow answer {outcome.run_id} {first['id']} {value}`, then `flow resume {outcome.run_id}`")
    sys.stderr.write(terminal_safe("\n".join(lines)) + "\n")
    return EXIT_WAITING


def _trust(args: argparse.Namespace) -> Any:
    """The grants of this run: the flags (paths as typed, relative to the working
    directory), `FLOW_ALLOW`, and `flow trust`; FILE's folder needs none."""
    from flow_kernel.runtime.config import config_folder
    from flow_kernel.runtime.policy.trust import Capability, Trust, operator_capability

    here = Path.cwd()
    grants = [Capability.of("run", exe, here) for exe in args.allow_run]
    grants += [Capability.of("path", raw, here) for raw in [*args.allow_path, args.record, args.replay] if raw]
    if args.operator and (cap := operator_capability(args.operator, here)) is not None:
        grants.append(cap)
    if args.config:
        grants.append(Capability("config", str(Path(args.config).resolve().parent)))
    return Trust(config_folder(args.file), grants=grants, document=Path(args.file), asker="This file")


async def _run(session: Any, compiled: Any, workflow: str | None, data: dict[str, Any]) -> Any:
    async with session:  # one run: its sandbox stops with it
        return await session.run_async(compiled, workflow=workflow, input=data if workflow else None)


class _PrintSink:
    """`print` to stdout (stderr in JSON mode, where stdout is the one result object)."""

    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode

    def __call__(self, event: dict[str, Any]) -> None:
        if event["type"] == "print":
            stream = sys.stderr if self.json_mode else sys.stdout
            stream.write(terminal_safe(str(event["data"].get("text"))) + "\n")
            stream.flush()


__all__ = ["add_command", "cmd_run"]

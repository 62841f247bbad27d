"""The `flow` command line (runtime.md §8): `main` and the argument wiring. Each command
is a module of this package — `check`, `explain`, `schema`, `run`, `durable` (resume, answer, runs), `doctor`, `trust` —
with its `add_command(commands)` and handler; `flow bench` lives in `bench/suite.py`.
What they share (exit codes, `UsageError`, the error printer, the file loader) is in
`common.py`. A new command: a module here with `add_command`, and one line in
`build_parser`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from flow_kernel.cli import check, doctor, durable, explain, schema, trust
from flow_kernel.cli import eval as eval_command
from flow_kernel.cli import run as run_command
from flow_kernel.cli import serve as serve_command
from flow_kernel.cli.common import EXIT_FAILED, EXIT_USAGE
from flow_kernel.version import VERSION


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flow",
        description="Flow: a small typed language for orchestrating LLM agents.",
    )
    parser.add_argument("--version", action="version", version=f"flow {VERSION}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in (check, explain, schema, run_command, durable, doctor, trust, eval_command):
        command.add_command(commands)
    serve_command.add_command(commands)  # flow serve: workflows as MCP tools or an A2A agent

    bench = commands.add_parser(
        "bench",
        help="run the benchmarks and show the performance targets",
        description="Measure every figure of docs/performance.md in one process: medians "
        "(min–max) after a warm-up, each against its yardstick in the same run.",
    )
    from flow_kernel.bench.suite import add_arguments

    add_arguments(bench)
    bench.set_defaults(handler=cmd_bench)
    return parser


def cmd_bench(args: argparse.Namespace) -> int:
    from flow_kernel.bench.suite import command

    return command(args)


def main(argv: Sequence[str] | None = None) -> int:
    from flow_kernel.sandbox.lifetime import make_undumpable

    make_undumpable()  # `run` children cannot read this process's environ (API keys)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse has printed usage (or --help)
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        code: int = args.handler(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `flow check … | head`
        return _reader_went_away()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return _reader_went_away()
    return code


def _reader_went_away() -> int:
    # Point stdout at devnull so that the interpreter's own flush at exit stays quiet.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_FAILED


__all__ = ["build_parser", "main"]

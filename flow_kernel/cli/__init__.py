"""The `flow` command line (runtime.md §8): `main` and the argument wiring. Each command
is a module of this package — `check`, `explain`, `schema`, `run`, `durable` (resume,
answer, runs), `eval` (eval, batch), `serve`, `doctor`, `trust` — with its
`add_command(commands)` and handler; `flow bench` lives in `bench/suite.py`, the servers
`flow serve` starts in `serve/`.
What they share (exit codes, `UsageError`, the error printer, the file loader) is in
`common.py`. A new command: a module here with `add_command`, and one line in
`build_parser`.

`flow run` and `flow resume` run one sandbox with the pool's default command: `main` starts
it before the commands' imports (sandbox/process.py `start_early`), and the run's pool takes
it over; a command that ends without taking it kills it (`early.cancel`). The command
modules are imported in `build_parser`, after that start; each imports what its handler
needs inside the handler, so that building the parser (every command, `--version` too)
does not import the language, the runtime or the bench. `flow run` and `flow resume` start
importing the provider clients their program names while the sandbox starts (prefetch.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

# The commands that run exactly one sandbox, the one `start_early()` starts.
EARLY_SANDBOX = frozenset({"run", "resume"})


def build_parser() -> argparse.ArgumentParser:
    from flow_kernel.cli import cancel, check, doctor, durable, explain, schema, trust
    from flow_kernel.cli import eval as eval_command
    from flow_kernel.cli import run as run_command
    from flow_kernel.cli import serve as serve_command

    parser = argparse.ArgumentParser(
        prog="flow",
        description="Flow: a small typed language for orchestrating LLM agents.",
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in (check, explain, schema, run_command, durable, cancel, doctor, trust, eval_command):
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


class _Version(argparse.Action):
    """`--version`, which reads the installed metadata (importlib.metadata: ~25 ms of imports)
    only when asked, not on every command."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0,
                         help="show program's version number and exit")  # argparse's own words

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from flow_kernel.version import VERSION

        sys.stdout.write(f"flow {VERSION}\n")  # on stdout, as argparse's own version action
        parser.exit()


def cmd_bench(args: argparse.Namespace) -> int:
    from flow_kernel.bench.suite import command

    return command(args)


def main(argv: Sequence[str] | None = None) -> int:
    from flow_kernel.sandbox import early
    from flow_kernel.sandbox.lifetime import make_undumpable
    from flow_kernel.sandbox.process import start_early

    make_undumpable()  # `run` children cannot read this process's environ (API keys); before any child starts
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] and argv[0] in EARLY_SANDBOX and not {"-h", "--help"} & set(argv):
        start_early()  # restores its snapshot while the command imports and checks the file
    try:
        return _main(argv)
    finally:
        early.cancel()  # not taken (a refused or failed run, a usage error): it ends with the command


def _main(argv: list[str]) -> int:
    from flow_kernel.cli.common import EXIT_USAGE

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
    from flow_kernel.cli.common import EXIT_FAILED

    # Point stdout at devnull so that the interpreter's own flush at exit stays quiet.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_FAILED


__all__ = ["build_parser", "main"]

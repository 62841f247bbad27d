"""The `flow` command line: `flow check`, `flow explain`, `flow schema` (runtime.md §8);
`flow run` and `flow doctor` live in `cli_run.py`, `flow bench` in `bench/suite.py`.

Exit codes: 0 success (warnings and infos allowed), 1 the source has errors or the
thing asked for does not exist, 2 a usage error (bad arguments, a missing or
unreadable file). Problems with the user's input are messages, never tracebacks.

The language is imported inside the commands, so `flow explain` works without it.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from flow_kernel.terminal_text import json_for_terminal, terminal_safe

if TYPE_CHECKING:
    from flow_kernel.diagnostics.model import Diagnostic
    from flow_kernel.files import FileSystemLoader
    from flow_kernel.lang import CheckResult

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad input to the CLI itself: printed as `flow: error: …`, exit 2."""


def _error(message: str, *, command: str | None = None) -> None:
    prog = f"flow {command}" if command else "flow"
    print(terminal_safe(f"{prog}: error: {message}"), file=sys.stderr)  # names and messages hold anything


def _wants_color(stream: TextIO) -> bool:
    if "NO_COLOR" in os.environ:
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def display_name(name: str) -> str:
    """A file name as the user would write it: relative to the working directory when
    the file is under it, absolute otherwise."""
    if not os.path.isabs(name):
        return name
    try:
        relative = os.path.relpath(name)
    except ValueError:  # another drive on Windows
        return name
    return name if relative.startswith(os.pardir) else relative


def _load(loader: FileSystemLoader, path: str) -> CheckResult:
    """Check one file named on the command line; `UsageError` if it cannot be read."""
    from flow_kernel.files import SourceReadError
    from flow_kernel.lang import check

    if os.path.isdir(path):
        raise UsageError(f"{path}: is a directory, not a Flow file")
    try:
        source = loader(path, None)
        if source is None:
            raise UsageError(f"{path}: no such file")
        return check(source, loader=loader)
    except SourceReadError as e:  # the file itself, or a file it `use`s
        raise UsageError(f"{display_name(e.path)}: {e.reason}") from None


def guarded_loader(path: str, allow_paths: Sequence[str] = ()) -> FileSystemLoader:
    """A loader for FILE's `use`s: files outside FILE's folder need a grant (runtime/trust.py:
    `--allow-path`, `FLOW_ALLOW`, `flow trust`), else F2011 says how to grant them."""
    from pathlib import Path

    from flow_kernel.files import FileSystemLoader
    from flow_kernel.runtime.config import config_folder
    from flow_kernel.runtime.trust import Capability, Trust

    grants = [Capability.of("path", raw, Path.cwd()) for raw in allow_paths]
    trust = Trust(config_folder(path), grants=grants, asker="This file")
    return FileSystemLoader(guard=trust.use_guard())


def _summary(diagnostics: Sequence[Diagnostic], files: int) -> str:
    counts: dict[str, int] = {}
    for d in diagnostics:
        counts[d.severity.value] = counts.get(d.severity.value, 0) + 1
    checked = f"{files} file" + ("" if files == 1 else "s")
    if not counts:
        return f"Checked {checked}: no problems found."
    parts = []
    for severity in ("error", "warning", "info"):
        n = counts.get(severity, 0)
        if n:
            parts.append(f"{n} {severity}" + ("" if n == 1 or severity == "info" else "s"))
    return f"Checked {checked}: " + ", ".join(parts) + "."


def cmd_check(args: argparse.Namespace) -> int:
    from flow_kernel.diagnostics.render import render_json, render_text

    diagnostics: list[Diagnostic] = []
    seen: set[tuple[str, int, int, str, str]] = set()
    usage_errors = 0
    checked = 0
    for path in args.files:
        try:
            result = _load(guarded_loader(path, args.allow_path), path)
        except UsageError as e:
            _error(str(e), command="check")
            usage_errors += 1
            continue
        checked += 1
        for d in result.diagnostics:
            # Two files that `use` the same library report its problems once.
            key = (d.file, d.span.start, d.span.end, d.code, d.message)
            if key not in seen:
                seen.add(key)
                diagnostics.append(d)

    if args.format == "json":
        doc = render_json(diagnostics, display_name=display_name)
        sys.stdout.write(json_for_terminal(json.dumps(doc, indent=2, ensure_ascii=False)) + "\n")
    else:
        text = render_text(diagnostics, color=_wants_color(sys.stdout), display_name=display_name)
        if text:
            sys.stdout.write(text + "\n")
        if checked:
            sys.stdout.write(_summary(diagnostics, checked) + "\n")
    if usage_errors:
        return EXIT_USAGE
    return EXIT_FAILED if any(d.is_error for d in diagnostics) else EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    from flow_kernel.diagnostics.explain import explain
    from flow_kernel.diagnostics.registry import REGISTRY

    text = explain(args.code)
    if text is None:
        message = f"unknown diagnostic code `{args.code}`"
        wanted = args.code.strip().upper()
        close = [c for c in sorted(REGISTRY) if c.startswith(wanted)][:3] if wanted else []
        close = close or difflib.get_close_matches(wanted, list(REGISTRY), n=3, cutoff=0.6)
        if close:
            quoted = [f"`{c}`" for c in close]
            listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
            message += f"; did you mean {listed}?"
        else:
            message += " (codes look like F2001; `docs/diagnostics.md` lists them all)"
        _error(message, command="explain")
        return EXIT_FAILED
    sys.stdout.write(text + "\n")
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    from flow_kernel.diagnostics.render import render_text

    try:
        result = _load(guarded_loader(args.file, args.allow_path), args.file)
    except UsageError as e:
        _error(str(e), command="schema")
        return EXIT_USAGE
    if not result.ok:
        errors = [d for d in result.diagnostics if d.is_error]
        sys.stderr.write(
            render_text(errors, color=_wants_color(sys.stderr), display_name=display_name) + "\n"
        )
        _error(f"{args.file} has errors; fix them to get a schema", command="schema")
        return EXIT_FAILED
    schema: dict[str, Any] | None = result.schema_for(args.name)
    if schema is None:
        known = sorted(n for n in getattr(result, "decls", {}) if result.schema_for(n) is not None)
        message = f"`{args.name}` is not a type or workflow declared in {args.file}"
        close = difflib.get_close_matches(args.name, known, n=1)
        if close:
            message += f"; did you mean `{close[0]}`?"
        elif known:
            message += "; it declares " + ", ".join(f"`{n}`" for n in known)
        _error(message, command="schema")
        return EXIT_FAILED
    sys.stdout.write(json_for_terminal(json.dumps(schema, indent=2, ensure_ascii=False)) + "\n")
    return EXIT_OK


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("flow-kernel")
    except PackageNotFoundError:  # running from a checkout that was never installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flow",
        description="Flow: a small typed language for orchestrating LLM agents.",
    )
    parser.add_argument("--version", action="version", version=f"flow {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser(
        "check",
        help="check Flow files and print their diagnostics",
        description="Check Flow files. Exit 0 when there are no errors (warnings are "
        "fine), 1 when there are errors, 2 when a file cannot be read.",
    )
    check.add_argument("files", nargs="+", metavar="FILE", help="a .flow file")
    check.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (default) or the JSON form of the diagnostics",
    )
    check.add_argument("--allow-path", metavar="PATH", action="append", default=[],
                       help="let a file `use` PATH outside its folder (a folder grants what is below it)")
    check.set_defaults(handler=cmd_check)

    explain = commands.add_parser(
        "explain", help="explain a diagnostic code", description="Explain a diagnostic code."
    )
    explain.add_argument("code", metavar="CODE", help="a code such as F2001")
    explain.set_defaults(handler=cmd_explain)

    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of a type or a workflow",
        description='Print the JSON Schema of a type alias, or {"input": …, "output": …} '
        "for a workflow.",
    )
    schema.add_argument("file", metavar="FILE", help="a .flow file")
    schema.add_argument("name", metavar="NAME", help="a type alias or workflow in FILE")
    schema.add_argument("--allow-path", metavar="PATH", action="append", default=[],
                        help="let FILE `use` PATH outside its folder")
    schema.set_defaults(handler=cmd_schema)

    from flow_kernel.cli_run import add_commands
    from flow_kernel.cli_trust import add_commands as add_trust_commands

    add_commands(commands)
    add_trust_commands(commands)

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


if __name__ == "__main__":
    sys.exit(main())

"""`flow check FILE…`: the diagnostics of Flow files, as text or JSON (runtime.md §8).
Exit 0 when there are no errors (warnings are fine), 1 when there are errors, 2 when a
file cannot be read."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from flow_kernel.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    display_name,
    guarded_loader,
    load_file,
    print_error,
    wants_color,
)
from flow_kernel.terminal_text import json_for_terminal

if TYPE_CHECKING:
    from flow_kernel.diagnostics.model import Diagnostic


def add_command(commands: Any) -> None:
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


def cmd_check(args: argparse.Namespace) -> int:
    from flow_kernel.diagnostics.render import render_json, render_text

    diagnostics: list[Diagnostic] = []
    seen: set[tuple[str, int, int, str, str]] = set()
    usage_errors = 0
    checked = 0
    for path in args.files:
        try:
            result = load_file(guarded_loader(path, args.allow_path), path)
        except UsageError as e:
            print_error(str(e), command="check")
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
        text = render_text(diagnostics, color=wants_color(sys.stdout), display_name=display_name)
        if text:
            sys.stdout.write(text + "\n")
        if checked:
            sys.stdout.write(_summary(diagnostics, checked) + "\n")
    if usage_errors:
        return EXIT_USAGE
    return EXIT_FAILED if any(d.is_error for d in diagnostics) else EXIT_OK


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


__all__ = ["add_command", "cmd_check"]

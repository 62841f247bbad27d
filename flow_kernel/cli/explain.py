"""`flow explain CODE`: what a diagnostic code means (works without the language).
Exit 0, or 1 for an unknown code (with the closest known codes)."""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any

from flow_kernel.cli.common import EXIT_FAILED, EXIT_OK, print_error


def add_command(commands: Any) -> None:
    explain = commands.add_parser(
        "explain", help="explain a diagnostic code", description="Explain a diagnostic code."
    )
    explain.add_argument("code", metavar="CODE", help="a code such as F2001")
    explain.set_defaults(handler=cmd_explain)


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
        print_error(message, command="explain")
        return EXIT_FAILED
    sys.stdout.write(text + "\n")
    return EXIT_OK


__all__ = ["add_command", "cmd_explain"]

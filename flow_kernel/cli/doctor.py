"""`flow doctor`: what the sandbox will use on this machine, one row a line (the rows
come from `doctor_report`). Exit 0, or 1 when a row is not ok."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from flow_kernel.cli.common import EXIT_FAILED, EXIT_OK
from flow_kernel.terminal_text import terminal_safe


def add_command(commands: Any) -> None:
    doctor = commands.add_parser("doctor", help="report Node.js, Pyodide, the sandbox's walls and providers",
                                 description="Report what the sandbox will use on this machine.")
    doctor.set_defaults(handler=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    from flow_kernel.runtime.doctor import doctor_report

    report = [*doctor_report(), front_end_row()]
    width = max(len(k) for k, _, _ in report)
    bad = False
    for name, ok, detail in report:
        mark = "ok " if ok else ("-- " if ok is None else "!! ")
        bad = bad or ok is False
        sys.stdout.write(terminal_safe(f"{mark}{name.ljust(width)}  {detail}") + "\n")
    return EXIT_FAILED if bad else EXIT_OK


def front_end_row() -> tuple[str, bool | None, str]:
    """The front end this process uses: compiled (ok) or pure Python (--, never a
    failure), and why (flow_kernel/compiled_front.py)."""
    from flow_kernel.compiled_front import install

    chosen = install()
    return "front end", True if chosen.folder is not None else None, chosen.why


__all__ = ["add_command", "cmd_doctor", "front_end_row"]

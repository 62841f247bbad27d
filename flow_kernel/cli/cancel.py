"""`flow cancel RUN` (docs/durability.md): cancel a run journaled here, from any terminal.

A run no process is writing (waiting for an answer, or interrupted) is cancelled in its
journal at once. A run a process is running gets a cancel request beside its journal; that
process stops it within a second, at its next effect boundary at the latest, and journals it
`cancelled`: the command waits for that (`--wait SECONDS`, default 10) and says how the run
ended. Refusals (`unknown-run` for an unknown run or a bad id, `run-ended` for a run with
nothing left to cancel) are `flow cancel: error[CODE]: …`, exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from flow_kernel.cli.common import EXIT_OK
from flow_kernel.cli.durable import JOURNALS, print_refusal
from flow_kernel.terminal_text import terminal_safe


def add_command(commands: Any) -> None:
    cancel = commands.add_parser(
        "cancel", help="cancel a running or waiting run",
        description="Cancel RUN (journaled in .flow/runs here): a waiting or interrupted run at once, in its "
        "journal; a running one by a request its process sees within a second. Its journal ends `cancelled`; "
        "it cannot be resumed.")
    cancel.add_argument("run", metavar="RUN")
    cancel.add_argument("--wait", metavar="SECONDS", type=float, default=10.0,
                        help="how long to wait for a running run to stop (default 10; 0: do not wait)")
    cancel.add_argument("--format", choices=("text", "json"), default="text")
    cancel.set_defaults(handler=cmd_cancel)


def cmd_cancel(args: argparse.Namespace) -> int:
    from flow_kernel.runtime.durable.cancel import cancel_run, settle
    from flow_kernel.runtime.durable.resume import ResumeRefused

    json_mode = args.format == "json"
    journals = Path.cwd() / JOURNALS
    try:
        done = cancel_run(journals, args.run, "flow cancel")
        status = done.status if done.status == "cancelled" else asyncio.run(
            settle(journals, args.run, "flow cancel", max(0.0, args.wait)))
    except ResumeRefused as exc:
        return print_refusal("cancel", exc, json_mode)
    if json_mode:
        sys.stdout.write(json.dumps({"ok": True, "run": args.run, "status": status}) + "\n")
    else:
        sys.stdout.write(terminal_safe(CANCEL_SAID.get(status, "run {run}: {status}").format(run=args.run, status=status))
                         + "\n")
    return EXIT_OK


CANCEL_SAID = {
    "cancelled": "cancelled run {run}",
    "requested": "asked the process running {run} to cancel it (it stops at its next effect; `flow runs` shows when)",
}

__all__ = ["add_command", "cmd_cancel"]

"""A run in a terminal: `TerminalPort`, the cell runner's port for `flow run` and `flow
resume` (`print` on stdout, or on stderr with `--format json`, where stdout is the one
result object), and `report`, which writes how the run ended and gives the exit code.
Everything written goes through terminal_text: program and model text, never terminal
commands."""

from __future__ import annotations

import json
import sys
from typing import Any

from flow_kernel.cli.common import EXIT_FAILED, EXIT_OK, display_name
from flow_kernel.frontend.cell import CellRunner
from flow_kernel.frontend.outputs import waiting_text
from flow_kernel.frontend.port import HeadlessPort
from flow_kernel.lang.compiler import Compiled
from flow_kernel.runtime.run import RunOutcome
from flow_kernel.runtime.session import Resumption, Session
from flow_kernel.terminal_text import json_for_terminal, terminal_safe

EXIT_WAITING = 3  # `--operator defer`: the run waits for an answer (`flow answer`, then `flow resume`)
TERMINAL_ANSWER = "answer with `flow answer {run} {id} {value}`, then `flow resume {run}`"


class TerminalPort(HeadlessPort):
    """A terminal: nobody answers a prompt mid-run (an operator policy does), no widgets, no
    summary (live progress is a session sink: runtime/events/terminal.py)."""

    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode

    def show(self, bundle: dict[str, Any]) -> None:
        sys.stdout.write(terminal_safe(str(bundle.get("text/plain", ""))) + "\n")

    def warn(self, text: str) -> None:
        sys.stderr.write(terminal_safe(text))

    def on_event(self, event: dict[str, Any]) -> None:
        if event["type"] == "print":
            stream = sys.stderr if self.json_mode else sys.stdout
            stream.write(terminal_safe(str(event["data"].get("text"))) + "\n")
            stream.flush()


async def run_in_terminal(session: Session, compiled: Compiled, json_mode: bool, *, workflow: str | None = None,
                          input: dict[str, Any] | None = None, resuming: Resumption | None = None) -> RunOutcome:
    """One run (a file's, or one resumed) through the cell runner; the session's sandbox stops with it."""
    async with session:
        end = await CellRunner(session).run_program(compiled, TerminalPort(json_mode), workflow=workflow, input=input,
                                                   resuming=resuming)
    assert end.outcome is not None
    return end.outcome


def report(outcome: Any, json_mode: bool) -> int:
    """The outcome of a run (or a resumed one) on stdout/stderr, and its exit code: 0 completed,
    1 failed, 3 waiting for an operator's answer (`--operator defer`)."""
    if outcome.error is not None and outcome.error.span:
        file = str(outcome.error.span["file"])
        outcome.show_file_as(file, display_name(file))
    if json_mode:
        sys.stdout.write(json_for_terminal(json.dumps(outcome.to_json(), ensure_ascii=False)) + "\n")
    elif outcome.pending:
        sys.stderr.write(terminal_safe(waiting_text(outcome, TERMINAL_ANSWER, '"…"')) + "\n")
    elif outcome.error is None:
        if outcome.result is not None:
            from flow_kernel.runtime.value_text import render_value

            sys.stdout.write(terminal_safe(render_value(outcome.result)) + "\n")
    else:
        from flow_kernel.runtime.events.failure_report import describe_error

        described = describe_error(outcome.error, outcome.source_line, outcome.events)
        sys.stderr.write(terminal_safe("\n".join(described)) + "\n")
    if outcome.pending:
        return EXIT_WAITING
    if not json_mode and getattr(outcome, "cost", None) is not None:  # priced calls: what they cost
        usage = outcome.usage
        sys.stderr.write(f"cost {outcome.cost:.6f} ({usage.get('input_tokens', 0):,} input + "
                         f"{usage.get('output_tokens', 0):,} output tokens)\n")
    return EXIT_OK if outcome.error is None else EXIT_FAILED


__all__ = ["EXIT_WAITING", "TerminalPort", "report", "run_in_terminal"]

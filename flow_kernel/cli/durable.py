"""`flow resume`, `flow answer` and `flow runs` (docs/durability.md); how a run that waits
(`--operator defer`: exit 3) is reported is `flow run`'s (`cli/outcome.py` `report`).

- `flow resume RUN`: go on with a waiting or interrupted run from its journal (run from the
  folder `flow run` ran in: the journal is `.flow/runs/RUN.jsonl` there). The program is
  read again and must be unchanged; every completed effect is answered from the journal.
  The flags are the person's grants, as for `flow run`: the journal grants nothing.
- `flow answer RUN PENDING_ID VALUE`: answer a waiting run's request (`true`/`false` for an
  approval, a string — JSON or as typed — for a question); recorded with who answered.
- `flow runs [--waiting]`: every run journaled here with its status.

Refusals (an unknown or ended run, a changed source, a second answer, …) are
`flow COMMAND: error[CODE]: message`, exit 1 (`{"ok": false, "error": {code, message,
details}}` with `--format json`).
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
    flag_config,
    flag_trust,
    print_error,
    warn_unpinned,
)
from flow_kernel.terminal_text import json_for_terminal, terminal_safe

JOURNALS = Path(".flow") / "runs"


def add_command(commands: Any) -> None:
    resume = commands.add_parser(
        "resume", help="go on with a waiting or interrupted run from its journal",
        description="Re-execute RUN's program from the start, answering every completed effect from its journal "
        "(no provider, tool, process or person is asked again), live from the first one it does not hold. "
        "Refused when the program, its input or a declaration it used changed. Exit as `flow run`.")
    resume.add_argument("run", metavar="RUN")
    resume.add_argument("--operator", metavar="POLICY",
                        help="who answers what comes next (default: defer when the run was deferred, else as `flow run`)")
    resume.add_argument("--allow-run", metavar="EXE", action="append", default=[], help="as for `flow run`")
    resume.add_argument("--allow-path", metavar="PATH", action="append", default=[], help="as for `flow run`")
    resume.add_argument("--config", metavar="FLOW_TOML", help="as for `flow run`")
    resume.add_argument("--format", choices=("text", "json"), default="text")
    resume.set_defaults(handler=cmd_resume)

    answer = commands.add_parser(
        "answer", help="answer a waiting run's pending approval or question",
        description="Record VALUE as the answer to PENDING_ID of RUN (true/false for an approval, a string for a "
        "question), with who answered; `flow resume RUN` then goes on.")
    answer.add_argument("run", metavar="RUN")
    answer.add_argument("pending", metavar="PENDING_ID")
    answer.add_argument("value", metavar="VALUE", help="JSON (true, false, \"text\") or plain text for a question")
    answer.add_argument("--format", choices=("text", "json"), default="text")
    answer.set_defaults(handler=cmd_answer)

    runs = commands.add_parser("runs", help="the runs journaled here, with their status",
                               description="Every run in .flow/runs: completed, failed, cancelled, waiting, interrupted or running.")
    runs.add_argument("--waiting", action="store_true", help="only the runs waiting for an answer, with their requests")
    runs.add_argument("--format", choices=("text", "json"), default="text")
    runs.set_defaults(handler=cmd_runs)


def print_refusal(command: str, exc: Any, json_mode: bool) -> int:
    """A `ResumeRefused` as `flow COMMAND: error[CODE]: …` on stderr (JSON on stdout); exit 1."""
    if json_mode:
        sys.stdout.write(json_for_terminal(json.dumps({"ok": False, "error": exc.to_json()}, ensure_ascii=False)) + "\n")
    else:
        sys.stderr.write(terminal_safe(f"flow {command}: error[{exc.code}]: {exc.message}") + "\n")
    return EXIT_FAILED


def cmd_resume(args: argparse.Namespace) -> int:
    from flow_kernel.cli.outcome import report, run_in_terminal
    from flow_kernel.cli.prefetch import prefetch_clients, program_models
    from flow_kernel.runtime.config import ConfigError, config_folder
    from flow_kernel.runtime.durable.resume import ResumeRefused, load_checkpoint
    from flow_kernel.runtime.policy.operator import Operator
    from flow_kernel.runtime.policy.processes import RunPolicy
    from flow_kernel.runtime.session import Session

    json_mode = args.format == "json"
    here = Path.cwd()
    try:
        header = load_checkpoint(here / JOURNALS, args.run).header or {}
    except ResumeRefused as exc:
        return print_refusal("resume", exc, json_mode)
    program = header.get("program") or {}
    # The program's folder, as for `flow run FILE`; a cell's run (a notebook's) has none: here.
    folder = config_folder(str(program["path"])) if program.get("kind") == "file" else here
    try:
        RunPolicy(args.allow_run)
        trust = flag_trust(args, folder, asker="This run")
        config = flag_config(args, folder, trust)
        policy = args.operator or ("defer" if header.get("operator") == "defer" else config.operator)
        operator = Operator.parse(policy) if policy else Operator.default()
    except (UsageError, ValueError, ConfigError) as exc:
        print_error(str(exc), command="resume")
        return EXIT_USAGE
    session = Session(directory=here, config=config, operator=operator, allow_run=args.allow_run, allow=trust,
                      sandbox="one")
    warn_unpinned(session.allow_run, command="resume")
    try:
        ready = session.prepare_resume(args.run)
        prefetch_clients(program_models(ready.compiled.check.decls, config))
        outcome = asyncio.run(run_in_terminal(session, ready.compiled, json_mode, resuming=ready))
    except ResumeRefused as exc:
        return print_refusal("resume", exc, json_mode)
    return report(outcome, json_mode)


def parse_answer(text: str) -> Any:
    """`true`, `false`, `"text"` as JSON; anything else that is not JSON is the text as typed."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def cmd_answer(args: argparse.Namespace) -> int:
    from flow_kernel.runtime.durable.resume import ResumeRefused, record_answer

    json_mode = args.format == "json"
    try:
        record = record_answer(Path.cwd() / JOURNALS, args.run, args.pending, parse_answer(args.value), "flow answer")
    except ResumeRefused as exc:
        return print_refusal("answer", exc, json_mode)
    if json_mode:
        sys.stdout.write(json.dumps({"ok": True, "run": args.run, "pending": args.pending, "value": record["value"],
                                     "by": record["by"], "user": record["user"]}, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(terminal_safe(f"answered {args.pending} of run {args.run}: {json.dumps(record['value'])}; "
                                       f"`flow resume {args.run}` goes on") + "\n")
    return EXIT_OK


def cmd_runs(args: argparse.Namespace) -> int:
    from flow_kernel.runtime.durable.resume import list_runs, runs_table

    infos = list_runs(Path.cwd() / JOURNALS, waiting=args.waiting)
    if args.format == "json":
        sys.stdout.write(json_for_terminal(json.dumps([i.to_json() for i in infos], ensure_ascii=False)) + "\n")
        return EXIT_OK
    if not infos:
        sys.stdout.write("no waiting runs\n" if args.waiting else "no runs here (.flow/runs)\n")
        return EXIT_OK
    sys.stdout.write(terminal_safe(runs_table(infos)) + "\n")
    return EXIT_OK


__all__ = ["JOURNALS", "add_command", "cmd_answer", "cmd_resume", "cmd_runs", "print_refusal"]

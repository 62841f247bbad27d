"""`flow eval` and `flow batch` (docs/eval.md).

`flow eval FILE WORKFLOW --data cases.jsonl [--scorer SPEC]… [--epochs N] [--concurrency N]
[--executor local|ray] [--ray-address ADDR] [--workers N] [--out results.jsonl] [--resume]
[--format json]` runs WORKFLOW on every case and scores it (with no --scorer: `exact` against
the data's `expected`, a usage error when no case has one); `flow batch` is the same with no
scorers. Exit 0 when every scorer meets its threshold (a batch: every item ran), 1 when
not, 2 on a usage error or compile errors. Bad data lines are reported on stderr with their
line numbers and skipped.

The flags are the person's grants, as for `flow run` (runtime/policy/trust.py): `--operator`,
`--allow-run`, `--allow-path`, `--record`/`--replay`, `--config`; a flow.toml in an
untrusted folder is not applied. `--concurrency N` is the person's too: it lets the eval
keep N sandboxes (above FLOW_MAX_SANDBOXES when N is larger).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
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
    flag_config,
    flag_trust,
    load_file,
    print_error,
    warn_unpinned,
)
from flow_kernel.terminal_text import json_for_terminal, terminal_safe


def add_command(commands: Any) -> None:
    for name in ("eval", "batch"):
        scoring = name == "eval"
        parser = commands.add_parser(
            name, help="score a workflow over a dataset" if scoring else "run a workflow over every case of a dataset",
            description=("Run WORKFLOW on every case of --data and score the outputs. Exit 0 when every scorer "
                         "meets its threshold, 1 when not, 2 on a usage error." if scoring else
                         "Run WORKFLOW on every case of --data. Exit 0 when every item ran, 1 when some failed, "
                         "2 on a usage error."))
        parser.add_argument("file", metavar="FILE")
        parser.add_argument("workflow", metavar="WORKFLOW")
        parser.add_argument("--data", metavar="CASES", required=True, help="the cases: .jsonl or .csv")
        if scoring:
            parser.add_argument("--scorer", metavar="SPEC", action="append", default=[],
                                help="exact, field:PATH, schema:FILE, contains[:TEXT], numeric[:TOL], workflow:NAME, "
                                "judge:AGENT; options ,pass=X (an item's score to pass) ,min=Y (the pass rate needed); "
                                "none named: exact, against the data's `expected`")
            parser.add_argument("--epochs", metavar="N", type=int, default=1, help="run every case N times")
        parser.add_argument("--concurrency", metavar="N", type=int, default=4, help="items at once (default 4)")
        parser.add_argument("--executor", choices=("local", "ray"), default="local")
        parser.add_argument("--ray-address", metavar="ADDR", help="an existing Ray cluster (default: start one here)")
        parser.add_argument("--workers", metavar="N", type=int, help="Ray actors (default: the cluster's CPUs)")
        parser.add_argument("--out", metavar="RESULTS", help="write each item's record here as it ends (JSON lines)")
        parser.add_argument("--resume", action="store_true", help="continue --out: run only missing or failed items")
        parser.add_argument("--operator", metavar="POLICY", help="auto-approve, auto-deny, answers:PATH or none")
        parser.add_argument("--allow-run", metavar="EXE", action="append", default=[], help="allow `run` of EXE")
        parser.add_argument("--allow-path", metavar="PATH", action="append", default=[],
                            help="let FILE `use` PATH outside its folder")
        parser.add_argument("--replay", metavar="CASSETTE", help="answer agent calls from a cassette")
        parser.add_argument("--record", metavar="CASSETTE", help="record every agent answer to a cassette")
        parser.add_argument("--config", metavar="FLOW_TOML", help="apply this flow.toml instead of the one found")
        parser.add_argument("--format", choices=("text", "json"), default="text")
        parser.set_defaults(handler=cmd_eval, command_name=name)


def cmd_eval(args: argparse.Namespace) -> int:
    from flow_kernel.diagnostics.render import render_text
    from flow_kernel.files import FileSystemLoader
    from flow_kernel.lang.compiler import compile_checked
    from flow_kernel.runtime.config import ConfigError, config_folder
    from flow_kernel.runtime.context import RunContext
    from flow_kernel.runtime.eval.runner import EvalUsageError
    from flow_kernel.runtime.eval.scorers import ScorerError
    from flow_kernel.runtime.policy.ceilings import Ceilings
    from flow_kernel.runtime.policy.operator import Operator
    from flow_kernel.runtime.policy.processes import RunPolicy
    from flow_kernel.runtime.policy.trust import CapabilityDenied
    from flow_kernel.runtime.session import Session

    command = args.command_name
    scorers = getattr(args, "scorer", [])
    try:
        if args.concurrency < 1 or (args.workers is not None and args.workers < 1):
            raise UsageError("--concurrency and --workers must be at least 1")
        if args.resume and not args.out:
            raise UsageError("--resume needs --out (the results file to continue)")
        if args.ray_address and args.executor != "ray":
            raise UsageError("--ray-address needs --executor ray")
        if args.replay and args.record:
            raise UsageError("--replay and --record cannot be combined")
        RunPolicy(args.allow_run)
        ceilings = Ceilings.from_env()
        if args.concurrency > ceilings.sandboxes:  # the person's flag: as many sandboxes as items at once
            ceilings = dataclasses.replace(ceilings, sandboxes=args.concurrency)
        trust = flag_trust(args, config_folder(args.file), document=Path(args.file))
        result = load_file(FileSystemLoader(guard=trust.use_guard()), args.file)
        config = flag_config(args, config_folder(args.file), trust)
        if config.ignored is not None:
            print(terminal_safe(f"flow {command}: warning: {config.ignored_warning()}"), file=sys.stderr)
        policy = args.operator or config.operator
        operator = Operator.parse(policy) if policy else Operator("none")
        if operator.policy == "interactive":
            raise UsageError("an eval answers no questions interactively: use --operator auto-approve, auto-deny, "
                             "answers:PATH or none")
        if args.record:
            from flow_kernel.runtime.durable.cassette import check_recordable

            check_recordable(args.record)
    except (UsageError, ValueError, ConfigError) as exc:
        print_error(str(exc), command=command)
        return EXIT_USAGE
    if not result.ok:
        sys.stderr.write(render_text(result.diagnostics, color=False, display_name=display_name) + "\n")
        return EXIT_USAGE
    progress = _Progress(sys.stderr) if sys.stderr.isatty() and args.format == "text" else None
    try:
        session = Session(directory=Path.cwd(), config=config, operator=operator, allow_run=args.allow_run,
                          record=args.record, replay=args.replay, allow=trust, sandbox="one",
                          context=RunContext(ceilings=ceilings))
        warn_unpinned(session.allow_run, command=command)
        report = asyncio.run(session.eval_async(
            args.workflow, args.data, scorers=scorers, program=compile_checked(result),
            epochs=getattr(args, "epochs", 1), concurrency=args.concurrency, executor=args.executor,
            ray_address=args.ray_address, workers=args.workers, out=args.out, resume=args.resume,
            on_result=progress, default_scorer="exact" if command == "eval" else None))
    except (EvalUsageError, ScorerError, ValueError, CapabilityDenied) as exc:
        print_error(str(exc), command=command)
        return EXIT_USAGE
    except ImportError as exc:  # --executor ray without the extra
        print_error(str(exc), command=command)
        return EXIT_USAGE
    if progress is not None:
        progress.end()
    for problem in report.plan.problems:
        print(terminal_safe(f"flow {command}: warning: {display_name(args.data)} line {problem.line}: "
                            f"{problem.message} (skipped)"), file=sys.stderr)
    if args.format == "json":
        sys.stdout.write(json_for_terminal(json.dumps(report.to_json(), ensure_ascii=False, default=str)) + "\n")
    else:
        from flow_kernel.runtime.eval.report_text import report_text

        sys.stdout.write(terminal_safe(report_text(report)) + "\n")
    return EXIT_OK if report.passed else EXIT_FAILED


class _Progress:
    """`12/200 items, 1 failed` on one terminal line as items end."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.done = 0
        self.failed = 0

    def __call__(self, result: Any) -> None:
        self.done += 1
        self.failed += 0 if result.passed else 1
        self.stream.write(f"\r{self.done} items, {self.failed} not passed")
        self.stream.flush()

    def end(self) -> None:
        self.stream.write("\n")


__all__ = ["add_command", "cmd_eval"]

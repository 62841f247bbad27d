"""`%eval` (docs/eval.md; its handler is in frontend/run_magics.py): an eval of a workflow the notebook
declared, shown as the results table; `--compare OLD.jsonl` shows it beside an earlier one.

    %eval classify --data cases.jsonl --scorer field:parity --scorer judge:grader,pass=0.7 --out run2.jsonl
    %eval classify --data cases.jsonl --scorer field:parity --compare run1.jsonl

What a notebook asks for is only asked (docs/security.md): a data, results, schema or
compare file outside the notebook's folder asks for a `path` capability, like `%record`.
A notebook cannot name a Ray cluster to send its program, providers and configuration to
(`--ray-address` is the command line's and `Session.eval`'s, the person's): `--executor ray`
here starts a local one. Its sandboxes are capped by the person's ceiling (FLOW_MAX_SANDBOXES).
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass, field
from typing import Any

from flow_kernel.frontend.magics import MagicError, path_needs
from flow_kernel.runtime.policy.trust import Capability
from flow_kernel.runtime.session import Session

USAGE = ("%eval WORKFLOW --data CASES [--scorer SPEC]… [--epochs N] [--concurrency N] [--executor local|ray] "
         "[--out RESULTS] [--resume] [--compare OLD_RESULTS]")


@dataclass
class EvalArgs:
    workflow: str
    data: str
    scorers: list[str] = field(default_factory=list)
    epochs: int = 1
    concurrency: int = 4
    executor: str = "local"
    out: str | None = None
    resume: bool = False
    compare: str | None = None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # a MagicError, never SystemExit in a kernel
        raise MagicError(f"%eval: {message}; usage: {USAGE}")


def parse_eval(args: str) -> EvalArgs:
    try:
        words = shlex.split(args)
    except ValueError as exc:
        raise MagicError(f"%eval: {exc}") from None
    parser = _Parser(prog="%eval", add_help=False)
    parser.add_argument("workflow")
    parser.add_argument("--data", required=True)
    parser.add_argument("--scorer", action="append", default=[])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--executor", choices=("local", "ray"), default="local")
    parser.add_argument("--out")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--compare")
    ns = parser.parse_args(words)
    return EvalArgs(ns.workflow, ns.data, ns.scorer, ns.epochs, ns.concurrency, ns.executor, ns.out, ns.resume,
                    ns.compare)


def eval_needs(session: Session, args: str) -> list[Capability]:
    """The paths `%eval` would read or write outside the notebook's folder."""
    parsed = parse_eval(args)
    paths = [parsed.data, parsed.out, parsed.compare,
             *(spec.split(",")[0].partition(":")[2] for spec in parsed.scorers if spec.startswith("schema:"))]
    needs: list[Capability] = []
    for raw in paths:
        if raw:
            needs.extend(c for c in path_needs(session, raw) if c not in needs)
    return needs


async def run_eval_magic(session: Session, args: str) -> tuple[list[dict[str, Any]], Any]:
    """Run the eval (its grants checked by the caller, and again here) and give the bundles
    to show (its results, then the comparison) and the report. With no `--scorer` it scores
    like `flow eval`: `exact` against the data's `expected`, a MagicError when no case has one."""
    from flow_kernel.runtime.eval.report_html import compare_bundle, report_bundle
    from flow_kernel.runtime.eval.runner import EvalUsageError, NothingToScore, reread_report
    from flow_kernel.runtime.eval.scorers import ScorerError

    parsed = parse_eval(args)
    for capability in eval_needs(session, args):
        session.trust.require(capability)
    try:
        report = await session.eval_async(parsed.workflow, parsed.data, scorers=parsed.scorers, epochs=parsed.epochs,
                                          concurrency=parsed.concurrency, executor=parsed.executor, out=parsed.out,
                                          resume=parsed.resume, default_scorer="exact")
        bundles = [report_bundle(report)]
        if parsed.compare:
            before = reread_report(session.directory / parsed.compare, report.plan)
            bundles.append(compare_bundle(before, report))
    except NothingToScore as exc:
        raise MagicError(f"%eval: {exc.saying('`flow batch` in a terminal')}") from None
    except (EvalUsageError, ScorerError, ImportError) as exc:
        raise MagicError(f"%eval: {exc}") from None
    return bundles, report


__all__ = ["USAGE", "EvalArgs", "eval_needs", "parse_eval", "run_eval_magic"]

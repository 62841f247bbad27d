"""An eval's report as plain text: the summary per scorer, failures by code, and the items
that did not pass (the first few). What `flow eval` prints and a notebook's text/plain."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flow_kernel.short_text import shorten

if TYPE_CHECKING:
    from flow_kernel.runtime.eval.runner import EvalReport

SHOWN_FAILURES = 10


def report_text(report: EvalReport, *, timings: bool = True) -> str:
    """`timings=False` leaves out latency and wall time: a saved notebook keeps only what is
    the same on every run (as its run summaries do), the results file keeps them all."""
    s = report.summary
    plan = report.plan
    kind = "eval" if plan.scorers else "batch"
    lines = [f"{kind} of {plan.workflow} on {plan.data_name}: {s.items} items"
             + (f" ({len(plan.cases)} cases x {plan.epochs} epochs)" if plan.epochs > 1 else "")
             + f", {s.completed} ran, {s.items - s.completed} failed"
             + (f", {report.resumed} from the results file" if report.resumed else "")]
    if s.scorers:
        width = max(len(name) for name in s.scorers)
        lines.append(f"  {'scorer':<{width}}  {'mean':>6}  {'stderr':>6}  {'pass':>6}  {'needs':>6}")
        for name, sc in s.scorers.items():
            mark = "ok" if sc.ok else "FAIL"
            lines.append(f"  {name:<{width}}  {sc.mean:6.3f}  {sc.stderr:6.3f}  {sc.pass_rate:6.1%}  "
                         f"{sc.min_rate:6.0%}  {mark}")
    if s.failures:
        lines.append("failures: " + ", ".join(f"{code} x{n}" for code, n in sorted(s.failures.items())))
    lines.append(f"cost {s.cost:.4f}, {s.tokens} tokens" + (f", latency mean {s.latency_ms_mean:.0f} ms "
                                                            f"(p95 {s.latency_ms_p95:.0f} ms), {s.wall_s:.1f} s"
                                                            if timings else ""))
    for problem in plan.problems:
        lines.append(f"skipped line {problem.line} of {plan.data_name}: {problem.message}")
    bad = [r for r in report.results if not r.passed]
    for r in bad[:SHOWN_FAILURES]:
        why = (f"{r.error.get('code')}: {shorten(str(r.error.get('message')), 80)}" if r.error is not None else
               ", ".join(f"{n} {sc.score:g}" + (f" ({sc.error})" if sc.error else "")
                         for n, sc in r.scores.items() if not sc.passed))
        lines.append(f"  not passed: {r.id}" + (f" epoch {r.epoch}" if plan.epochs > 1 else "") + f" (line {r.line}) {why}")
    if len(bad) > SHOWN_FAILURES:
        lines.append(f"  … {len(bad) - SHOWN_FAILURES} more not passed")
    lines.append("PASSED" if report.passed else "NOT PASSED")
    if report.out is not None:
        lines.append(f"results: {report.out if timings else report.out.name}")
    return "\n".join(lines)


__all__ = ["report_text"]

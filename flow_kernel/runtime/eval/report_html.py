"""An eval's results as static HTML for the notebook (and for a saved notebook, where no
kernel runs): the summary per scorer, failures by code, and a table of the items (input,
expected, output, scores, error, run) — the items not passed first. Two evals side by side
(`compare_bundle`): each scorer's mean and pass rate before and after, and the items whose
outcome changed. Every value from the data, a model or a program goes through `escape`
(flow_kernel/markup.py, docs/security.md): no markup from data, no script.

Sorting and filtering: `EvalTable` (views/eval_table.py) is the live form with
ipywidgets; this static form is what a saved notebook shows.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from flow_kernel.markup import escape
from flow_kernel.runtime.eval.report_text import report_text
from flow_kernel.short_text import shorten

if TYPE_CHECKING:
    from flow_kernel.runtime.eval.results import ItemResult
    from flow_kernel.runtime.eval.runner import EvalReport

MAX_ROWS = 500  # a static table of more items is cut (the results file has them all)
CELL = 160  # characters of a value shown in a cell

# Inline styles only: a saved notebook opened untrusted is sanitised, which drops <style> and classes' rules
OK = "style='background:#e8f6e8'"
FAIL = "style='background:#fde8e8'"
TABLE = "<table style='border-collapse:collapse;font-size:12px' border='1' cellpadding='3'>"


def _value(value: Any) -> str:
    return escape(shorten(json.dumps(value, ensure_ascii=False, default=str), CELL))


def summary_html(report: EvalReport, *, timings: bool = True) -> str:
    s = report.summary
    plan = report.plan
    head = (f"<b>{'eval' if plan.scorers else 'batch'} of {escape(plan.workflow)}</b> on {escape(plan.data_name)}: "
            f"{s.items} items, {s.completed} ran, {s.items - s.completed} failed; "
            f"<b {OK if report.passed else FAIL}>{'PASSED' if report.passed else 'NOT PASSED'}</b>")
    rows = "".join(
        f"<tr {OK if sc.ok else FAIL}><td>{escape(name)}</td><td>{sc.mean:.3f}</td><td>{sc.stderr:.3f}</td>"
        f"<td>{sc.pass_rate:.1%}</td><td>{sc.min_rate:.0%}</td><td>{sc.errors}</td></tr>" for name, sc in s.scorers.items())
    table = (f"{TABLE}<tr><th>scorer</th><th>mean</th><th>stderr</th><th>pass rate</th><th>needs</th><th>errors</th></tr>"
             f"{rows}</table>") if rows else ""
    failures = ("<p>failures: " + ", ".join(f"{escape(c)} &times;{n}" for c, n in sorted(s.failures.items())) + "</p>"
                if s.failures else "")
    cost = (f"<p>cost {s.cost:.4f}, {s.tokens} tokens"
            + (f", latency mean {s.latency_ms_mean:.0f} ms (p95 {s.latency_ms_p95:.0f} ms), {s.wall_s:.1f} s"
               if timings else "")
            + "</p>" + "".join(f"<p>skipped line {p.line} of {escape(plan.data_name)}: {escape(p.message)}</p>"
                               for p in plan.problems))
    return f"<p>{head}</p>{table}{failures}{cost}"


def items_html(results: list[ItemResult], scorer_names: list[str], *, keep_order: bool = False,
               runs: bool = True) -> str:
    """The items table (not passed first, unless `keep_order`: the widget sorted them);
    `runs=False` leaves out the run ids (a saved notebook: they change on every run)."""
    ordered = (results if keep_order else sorted(results, key=lambda r: (r.passed, r.line, r.epoch)))[:MAX_ROWS]
    head = "".join(f"<th>{escape(n)}</th>" for n in scorer_names)
    rows = []
    for r in ordered:
        scores = "".join(
            f"<td {OK if r.scores[n].passed else FAIL}>{r.scores[n].score:g}"
            + (f" ({escape(r.scores[n].error)})" if r.scores[n].error else "") + "</td>"
            if n in r.scores else "<td></td>" for n in scorer_names)
        error = f"{escape(r.error.get('code'))}: {escape(shorten(str(r.error.get('message')), CELL))}" if r.error else ""
        rows.append(f"<tr {OK if r.passed else FAIL}><td>{escape(r.id)}</td><td>{r.epoch}</td>"
                    f"<td>{_value(r.input)}</td><td>{_value(r.expected)}</td><td>{_value(r.output)}</td>{scores}"
                    f"<td>{error}</td>" + (f"<td>{escape(r.run or '')}</td>" if runs else "") + "</tr>")
    more = f"<p>… {len(results) - MAX_ROWS} more items in the results file</p>" if len(results) > MAX_ROWS else ""
    return (f"{TABLE}<tr><th>id</th><th>epoch</th><th>input</th><th>expected</th><th>output</th>"
            f"{head}<th>error</th>" + ("<th>run</th>" if runs else "") + f"</tr>{''.join(rows)}</table>{more}")


def report_html(report: EvalReport, *, timings: bool = False) -> str:
    """The static form: by default only what is the same on every run of the eval (no
    latency, no run ids), as a saved notebook keeps it; the results file has the rest."""
    names = [s.name for s in report.plan.scorers]
    return (f"<div class='flow-eval'>{summary_html(report, timings=timings)}"
            f"<details><summary>{len(report.results)} items (not passed first)</summary>"
            f"{items_html(report.results, names, runs=timings)}</details></div>")


def report_bundle(report: EvalReport) -> dict[str, Any]:
    return {"text/plain": report_text(report, timings=False), "text/html": report_html(report)}


def compare_bundle(before: EvalReport, after: EvalReport) -> dict[str, Any]:
    """Two evals of the same cases side by side: per scorer, and the items that changed."""
    names = list(dict.fromkeys([*before.summary.scorers, *after.summary.scorers]))
    rows, text = [], [f"{'scorer':<24} {'before':>16} {'after':>16}"]
    for name in names:
        a, b = before.summary.scorers.get(name), after.summary.scorers.get(name)
        cell = [f"{x.mean:.3f} / {x.pass_rate:.0%}" if x is not None else "-" for x in (a, b)]
        rows.append(f"<tr><td>{escape(name)}</td><td>{cell[0]}</td><td>{cell[1]}</td></tr>")
        text.append(f"{name:<24} {cell[0]:>16} {cell[1]:>16}")
    shared = [n for n in names if n in before.summary.scorers and n in after.summary.scorers]

    def passed(r: ItemResult) -> bool:  # on the scorers both evals have (all of them when none is shared)
        return r.passed if not shared else r.error is None and all(n in r.scores and r.scores[n].passed for n in shared)

    was = {r.key: r for r in before.results}
    changed = [(was[r.key], r) for r in after.results if r.key in was and passed(was[r.key]) != passed(r)]
    change_rows = "".join(
        f"<tr {OK if passed(new) else FAIL}><td>{escape(new.id)}</td><td>{_value(new.input)}</td>"
        f"<td>{_value(old.output)}</td><td>{_value(new.output)}</td>"
        f"<td>{'fixed' if passed(new) else 'broken'}</td></tr>" for old, new in changed)
    fixed = sum(1 for _, new in changed if passed(new))
    verdict = f"{fixed} item{'' if fixed == 1 else 's'} fixed, {len(changed) - fixed} broken"
    text.append(verdict)
    html = (f"<div class='flow-eval'>{TABLE}<tr><th>scorer (mean / pass rate)</th><th>before</th><th>after</th>"
            f"</tr>{''.join(rows)}</table><p>{verdict}</p>"
            + (f"{TABLE}<tr><th>id</th><th>input</th><th>output before</th><th>output after</th><th></th></tr>"
               f"{change_rows}</table>" if changed else "") + "</div>")
    return {"text/plain": "\n".join(text), "text/html": html}


__all__ = ["compare_bundle", "items_html", "report_bundle", "report_html", "summary_html"]

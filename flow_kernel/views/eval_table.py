"""The results of an eval as a live widget (ipywidgets): the summary, then the items table
— sorted by a column (not passed first, id, latency, cost, or a scorer's score), filtered by
status (all, not passed, errors) and by text (in the id, input, output or error) — and a
run picker that opens an item's run (the run view's static summary, from its journal).
Every cell is built by `report_html` (escaped through flow_kernel/markup.py); a saved
notebook keeps the static form beside the widget (`mimebundle`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from flow_kernel.markup import escape
from flow_kernel.runtime.eval.report_html import items_html, report_bundle, summary_html
from flow_kernel.runtime.eval.results import ItemResult
from flow_kernel.runtime.eval.runner import EvalReport

STATUSES = ("all", "not passed", "errors")


def sort_keys(report: EvalReport) -> dict[str, Any]:
    keys: dict[str, Any] = {"not passed first": lambda r: (r.passed, r.line, r.epoch),
                            "id": lambda r: (r.id, r.epoch),
                            "latency (slowest first)": lambda r: -r.latency_ms,
                            "cost (highest first)": lambda r: -r.cost}
    for scorer in report.plan.scorers:
        keys[f"{scorer.name} (lowest first)"] = lambda r, n=scorer.name: r.scores[n].score if n in r.scores else -1.0
    return keys


def select(report: EvalReport, sort: str, status: str, text: str) -> list[ItemResult]:
    """The items the table shows: filtered, then sorted."""
    rows = report.results
    if status == "not passed":
        rows = [r for r in rows if not r.passed]
    elif status == "errors":
        rows = [r for r in rows if r.error_code() is not None]
    if text:
        needle = text.lower()
        rows = [r for r in rows if needle in json.dumps([r.id, r.input, r.output, r.error], default=str).lower()]
    return sorted(rows, key=sort_keys(report)[sort])


class EvalTable:
    def __init__(self, report: EvalReport, journal_dir: Path | None = None) -> None:
        self.report = report
        self.journal_dir = journal_dir
        self.sort = widgets.Dropdown(options=list(sort_keys(report)), description="sort")
        self.status = widgets.ToggleButtons(options=list(STATUSES), value="all")
        self.text = widgets.Text(placeholder="filter: id, input, output, error", continuous_update=False)
        self.table = widgets.HTML()
        runs = [r.run for r in report.results if r.run]
        self.run = widgets.Dropdown(options=["(open a run)", *runs], description="run")
        self.run_view = widgets.HTML()
        for control in (self.sort, self.status, self.text):
            control.observe(lambda _change: self.refresh(), names="value")
        self.run.observe(lambda change: self.open_run(change["new"]), names="value")
        self.widget = widgets.VBox([widgets.HTML(summary_html(report, timings=True)), widgets.HBox([self.sort, self.status]),
                                    self.text, self.table, self.run, self.run_view])
        self.refresh()

    def refresh(self) -> None:
        rows = select(self.report, str(self.sort.value), str(self.status.value), str(self.text.value or ""))
        names = [s.name for s in self.report.plan.scorers]
        self.table.value = f"<p>{len(rows)} of {len(self.report.results)} items</p>" + items_html(rows, names, keep_order=True)

    def open_run(self, run_id: str) -> None:
        from flow_kernel.runtime.durable.journal import read_journal
        from flow_kernel.views.run_html import summary_bundle
        from flow_kernel.views.run_model import RunModel

        if self.journal_dir is None or not run_id.startswith("r"):
            self.run_view.value = ""
            return
        try:
            events = read_journal(self.journal_dir / f"{run_id}.jsonl")
        except OSError as exc:
            self.run_view.value = f"<p>run {escape(run_id)}: no journal ({escape(exc.strerror or exc)})</p>"
            return
        self.run_view.value = str(summary_bundle(RunModel.from_events(events)).get("text/html", ""))

    def mimebundle(self) -> dict[str, Any]:
        """The widget, with the static form a saved notebook shows."""
        bundle: dict[str, Any] = dict(self.widget._repr_mimebundle_() or {})
        return {**report_bundle(self.report), **bundle}


__all__ = ["EvalTable", "select", "sort_keys"]

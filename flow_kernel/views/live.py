"""A run's view, its whole life: opened at the run's first event worth showing (an agent
call, a stage, an approval, a log…), fed every event, and at the end finished from the
run's outcome into the static summary the cell keeps — or, when the run was interrupted,
into a summary that says so. A cell that only computes or declares shows just its result;
the same events make the same decision, so a notebook's outputs are the same on every run.

The Flow kernel and `%%flow` both use it; each says how to open a view where it lives
(`open_view`: a `RunView` shown in the cell, or None where no person watches — nbclient,
nbval, a terminal: then the cell still gets the summary at the end, and nothing else)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flow_kernel.runtime.events import KINDS

if TYPE_CHECKING:
    from flow_kernel.runtime.run import RunOutcome

# Worth showing: every kind of the vocabulary but the workflow's own (a cell that only
# computes has one; a nested workflow's start counts, below) and `print` (the cell's
# stdout), so a new kind opens a view without a change here.
SHOWN = frozenset(kind for kind in KINDS if not kind.startswith("workflow.") and kind != "print")


class LiveView:
    """An event sink that opens the view with `open_view` (None: no view here) on the first
    event worth showing, feeds it what came before, then every event; `finish` or `drop`
    ends it."""

    def __init__(self, open_view: Callable[[], Any], title: str | None = None) -> None:
        self.open_view = open_view
        self.title = title  # the summary's, when there is no view to give it
        self.view: Any = None
        self.early: list[dict[str, Any]] = []
        self.off = False
        self.shown = False  # the run had an event worth a view (with or without a live widget)

    def sink(self, event: dict[str, Any]) -> None:
        if self.view is not None:
            self.view.sink(event)
            return
        if self.off:
            return
        self.early.append(event)
        kind = str(event.get("type"))
        nested_workflow = kind == "workflow.started" and bool((event.get("span") or {}).get("parent"))
        if kind in SHOWN or nested_workflow:
            self.shown = True
            self.view = self.open_view()
            if self.view is None:
                self.off = True
                return
            for earlier in self.early:
                self.view.sink(earlier)
            self.early.clear()

    def finish(self, outcome: RunOutcome) -> dict[str, Any] | None:
        """The run's final state (result or error, steps, its events in
        canonical order); the widget closes. Returns the static bundle the cell keeps in
        its place, or None when the run had no view."""
        shown, self.shown = self.shown, False
        view = self._end()
        if view is None:
            return self._summary(outcome) if shown else None
        view.finish(outcome.result, outcome.error_json(), outcome.steps, outcome.events,
                    waiting=bool(outcome.pending))
        bundle: dict[str, Any] = view.static_bundle()
        view.close()
        return bundle

    def interrupt(self) -> dict[str, Any] | None:
        """The run was cancelled (an interrupt): the summary of what happened until then, its
        running calls shown cancelled; the widget closes. None when the run had no view."""
        view = self._end()
        if view is None:
            return None
        view.interrupt()
        bundle: dict[str, Any] = view.static_bundle()
        view.close()
        return bundle

    def _summary(self, outcome: RunOutcome) -> dict[str, Any]:
        from flow_kernel.views.run_html import summary_bundle
        from flow_kernel.views.run_model import RunModel

        model = RunModel.from_events(outcome.events, self.title)
        model.finish(outcome.result, outcome.error_json(), outcome.steps, waiting=bool(outcome.pending))
        return summary_bundle(model)

    def drop(self) -> None:
        """The run ended without an outcome (cancelled, or the front end failed): close the
        widget, keep nothing."""
        view = self._end()
        if view is not None:
            view.close()

    def _end(self) -> Any:
        view, self.view = self.view, None
        self.off = True  # a straggling event opens nothing
        self.early.clear()
        return view

"""When a run gets a live view: at its first event worth showing (an agent call, a stage,
an approval, a log…). A cell that only computes or declares shows just its result; the
same events make the same decision, so a notebook's outputs are the same on every run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SHOWN = ("pipeline.", "stage.", "agent.", "approval.", "verify.", "require.", "progress", "log", "artifact.")


class LiveView:
    """An event sink that makes the view with `make_view` (None: no view here) on the first
    event worth showing, feeds it what came before, then every event."""

    def __init__(self, make_view: Callable[[], Any]) -> None:
        self.make_view = make_view
        self.view: Any = None
        self.early: list[dict[str, Any]] = []
        self.off = False

    def sink(self, event: dict[str, Any]) -> None:
        if self.view is not None:
            self.view.sink(event)
            return
        if self.off:
            return
        self.early.append(event)
        kind = str(event.get("type"))
        nested_workflow = kind == "workflow.started" and bool((event.get("span") or {}).get("parent"))
        if kind.startswith(SHOWN) or nested_workflow:
            self.view = self.make_view()
            if self.view is None:
                self.off = True
                return
            for earlier in self.early:
                self.view.sink(earlier)
            self.early.clear()

"""`CellPort`: what a front end does for the cell runner (frontend/cell.py) — where a cell's
outputs go, how a person is asked, how a live run view is shown. The Flow kernel, `%%flow`,
the terminal and a served caller each implement it once; `HeadlessPort` holds the
defaults of a port where no person is."""

from __future__ import annotations

from typing import Any, Protocol

Bundle = dict[str, Any]  # a MIME bundle: {"text/plain": ..., "text/html": ...}


class CellPort(Protocol):
    """What a front end does for the runner. `person_present`: a person can answer a prompt
    now; `widgets`: outputs can be live widgets; `summaries`: a run that had something worth
    watching ends with its summary (`close_view`) — a notebook keeps it, a terminal or a
    served caller has its own progress."""

    person_present: bool
    widgets: bool
    summaries: bool

    def show(self, bundle: Bundle) -> None:
        """Show a display (a MIME bundle) under the cell."""

    def warn(self, text: str) -> None:
        """Write `text` (whole lines, each ending in a newline) where warnings go."""

    def on_event(self, event: dict[str, Any]) -> None:
        """A run's event as it happens (`print` output, a published artifact, progress)."""

    def open_view(self, title: str | None, run_id: str, agents: dict[str, dict[str, Any]]) -> Any:
        """Show a live run view and give it (a `RunView`), or None where no person watches."""

    def close_view(self, run_id: str, bundle: Bundle | None) -> None:
        """A run ended: its summary (None: nothing to show) replaces its live view, if any."""

    async def prompt(self, request: dict[str, Any]) -> Any:
        """Ask a person with a widget prompt (only called when `widgets`)."""

    async def read_line(self, prompt: str) -> str:
        """Ask a person for a typed line (only called when `person_present` and not `widgets`)."""


class HeadlessPort:
    """A `CellPort` where no person is: nothing is asked (an operator policy answers), no view,
    no summary, displays and warnings dropped. A front end overrides what it shows."""

    person_present = False
    widgets = False
    summaries = False

    def show(self, bundle: Bundle) -> None:
        return None

    def warn(self, text: str) -> None:
        return None

    def on_event(self, event: dict[str, Any]) -> None:
        return None

    def open_view(self, title: str | None, run_id: str, agents: dict[str, dict[str, Any]]) -> Any:
        return None

    def close_view(self, run_id: str, bundle: Bundle | None) -> None:
        return None

    async def prompt(self, request: dict[str, Any]) -> Any:
        raise RuntimeError("no person is here to ask")

    async def read_line(self, prompt: str) -> str:
        raise RuntimeError("no person is here to ask")


__all__ = ["Bundle", "CellPort", "HeadlessPort"]

"""The live run view: an ipywidgets box with the run's HTML (re-rendered as events come,
at most every `RENDER_EVERY` seconds) and the operator's prompts (Approve / Deny, the
choices of an `ask`, or a text box), answered while the cell still runs.

When the run ends, the widget is closed and the cell keeps the static summary
(`static_bundle`): deterministic `text/plain` for nbval, the full HTML for people. The
widget's own output carries a constant `text/plain`, so a re-executed notebook compares
equal however the run went.
"""

from __future__ import annotations

import asyncio
from typing import Any

from flow_kernel.views.prompts import Prompts
from flow_kernel.views.run_html import render_html
from flow_kernel.views.run_model import RunModel

RENDER_EVERY = 0.1
LIVE_TEXT = "Flow run (live view)"


class RunView:
    def __init__(self, title: str | None = None, run_id: str | None = None) -> None:
        import ipywidgets as w

        self.w = w
        self.model = RunModel(run_id, title)
        self.loop = asyncio.get_running_loop()
        self.body = w.HTML(render_html(self.model))
        # re-rendered after an answer: the model shows who decided
        self.prompts = Prompts(on_closed=lambda: self.sink({"type": "_prompt.closed"}))
        self.box = w.VBox([self.body, self.prompts.box])
        self._render_due: asyncio.TimerHandle | None = None

    # -- display ---------------------------------------------------------------------------------
    def mimebundle(self) -> dict[str, Any]:
        bundle: dict[str, Any] = dict(self.box._repr_mimebundle_())
        bundle["text/plain"] = LIVE_TEXT
        return bundle

    def static_bundle(self) -> dict[str, Any]:
        return {"text/plain": self.model.text(), "text/html": render_html(self.model, live=False)}

    def sink(self, event: dict[str, Any]) -> None:
        self.model.apply(event)
        if self._render_due is None:
            self._render_due = self.loop.call_later(RENDER_EVERY, self.render)

    def render(self) -> None:
        self._render_due = None
        self.body.value = render_html(self.model)

    def finish(self, result: Any = None, error: dict[str, Any] | None = None, steps: int | None = None,
               error_line: str | None = None, events: list[dict[str, Any]] | None = None) -> None:
        """The final state; with the run's `events`, rebuilt in their canonical order, so the
        summary is the same however concurrent branches interleaved."""
        if self._render_due is not None:
            self._render_due.cancel()
            self._render_due = None
        if events is not None:
            self.model = RunModel.from_events(events, self.model.title)
        self.model.finish(result, error, steps, error_line)
        self.prompts.cancel()
        self.render()

    def close(self) -> None:
        self.box.close()
        self.body.close()
        self.prompts.close()

    # -- prompts (views/prompts.py: the one prompt machinery) --------------------------------------
    @property
    def waiting(self) -> bool:
        return self.prompts.waiting

    def answer(self, value: Any) -> bool:
        """Answer the oldest open prompt (from `%approve` in another cell); False if none."""
        return self.prompts.answer(value)

    async def ask(self, request: dict[str, Any]) -> Any:
        """Show a prompt for an operator request and wait for the click (or `answer`)."""
        return await self.prompts.ask(request)

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
import json
from typing import Any

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
        self.prompts = w.VBox([])
        self.box = w.VBox([self.body, self.prompts])
        self._render_due: asyncio.TimerHandle | None = None
        self._pending: list[asyncio.Future[Any]] = []

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
        for future in self._pending:
            if not future.done():
                future.cancel()
        self.render()

    def close(self) -> None:
        self.box.close()
        self.body.close()
        self.prompts.close()

    # -- prompts ---------------------------------------------------------------------------------
    @property
    def waiting(self) -> bool:
        return any(not f.done() for f in self._pending)

    def answer(self, value: Any) -> bool:
        """Answer the oldest open prompt (from `%approve` in another cell); False if none."""
        for future in self._pending:
            if not future.done():
                future.set_result(value)
                return True
        return False

    async def ask(self, request: dict[str, Any]) -> Any:
        """Show a prompt for an operator request and wait for the click (or `answer`)."""
        w = self.w
        future: asyncio.Future[Any] = self.loop.create_future()
        self._pending.append(future)
        kind = request.get("kind")
        question = w.HTML(f"<strong>{_e(request.get('question'))}</strong>")
        parts: list[Any] = [question]
        if request.get("details") is not None:
            parts.append(w.HTML(f"<pre>{_e(json.dumps(request['details'], ensure_ascii=False, indent=2))}</pre>"))

        def settle(value: Any) -> None:
            if not future.done():
                future.set_result(value)

        def resolve(value: Any) -> None:
            # A click may arrive on another thread (subshells): hand it to the run's loop.
            self.loop.call_soon_threadsafe(settle, value)

        controls: list[Any] = []
        if kind == "approve":
            approve = w.Button(description="Approve", button_style="success", icon="check")
            deny = w.Button(description="Deny", button_style="danger", icon="times")
            approve.on_click(lambda _b: resolve(True))
            deny.on_click(lambda _b: resolve(False))
            controls = [approve, deny]
        elif request.get("choice"):
            for option in request["choice"]:
                button = w.Button(description=str(option))
                button.on_click(lambda _b, option=option: resolve(option))
                controls.append(button)
        else:
            text = w.Text(placeholder="your answer")
            submit = w.Button(description="Answer", button_style="primary")
            submit.on_click(lambda _b: resolve(text.value))
            controls = [text, submit]
        prompt = w.VBox([*parts, w.HBox(controls)])
        self.prompts.children = (*self.prompts.children, prompt)
        try:
            return await future
        finally:
            self.prompts.children = tuple(c for c in self.prompts.children if c is not prompt)
            prompt.close()
            self.sink({"type": "_prompt.closed"})  # re-render: the model shows who decided


def _e(value: Any) -> str:
    import html

    return html.escape("" if value is None else str(value))

"""Prompts a person answers by a click while a cell is still running: the operator's
(Approve / Deny, the choices of an `ask`, a text box) inside a run view, and the
capability prompt a cell's magics raise before anything of the cell applies
("This notebook asks to run `sh`" — Allow once / Allow for this notebook / Deny).

One machinery for both: a box of open prompts, each a Future resolved by a button's
click (or by `answer`, from `%approve` in another cell). Every piece of text shown
comes from the notebook or the run, so it is HTML-escaped; button labels are fixed
strings or an `ask`'s choices, which ipywidgets shows as text.

A click counts only while the kernel that asked is there. When it goes (Kernel ▸ Restart,
a crash) the page takes every box of prompts away (the `PROMPTS_CLASS` boxes: hidden, their
controls disabled; widgets/src/prompts.js, the one place): the run view's widget does it for
its box, and a box shown on its own carries a guard widget beside it that does it and says
why (`PromptsGuard`). A notebook saved with a box on its own and opened again, where no
kernel has its widgets, shows the display's text instead (its `LIVE_MIME` marker, as a run
view's: labextension/src/liveview.ts).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from flow_kernel.markup import escape
from flow_kernel.runtime.durable.deadlines import PromptDeadline

# The capability prompt's answers (its buttons).
ALLOW_ONCE, ALLOW_NOTEBOOK, DENY = "Allow once", "Allow for this notebook", "Deny"
LIVE_MIME = "application/vnd.flow.run-view+json"  # marks a live display: a run view, a box of prompts (labextension/src/liveview.ts)
PROMPTS_CLASS = "flow-prompts"  # every box of prompts: what the page takes away when its kernel goes (widgets/src/prompts.js `PROMPTS`)
# A box of prompts' constant text/plain (for nbval, like the run view's): what a front end
# shows where the buttons cannot be (a notebook opened again, a front end without widgets).
PROMPT_TEXT = ("Flow asked the person here (a prompt, answered by its buttons while the cell that asked runs). "
               "Where the buttons are not shown (the notebook opened again, its kernel gone, a front end "
               "without Jupyter widgets) nothing answers it: run the cell again to be asked again.")


def capability_request(asks: list[str]) -> dict[str, Any]:
    """The prompt for capabilities a notebook asks for; `asks` are what `describe` said,
    one line each when there are several."""
    request: dict[str, Any] = {"kind": "ask", "choice": [ALLOW_ONCE, ALLOW_NOTEBOOK, DENY],
                               "styles": {ALLOW_ONCE: "warning", ALLOW_NOTEBOOK: "warning", DENY: "danger"}}
    if len(asks) == 1:
        return {**request, "question": f"This notebook asks to {asks[0]}"}
    return {**request, "question": "This notebook asks to:", "items": asks}


class Prompts:
    """A VBox (`box`) holding the open prompts; `ask` adds one and waits for its answer."""

    def __init__(self, on_closed: Callable[[], None] | None = None) -> None:
        import ipywidgets as w

        self.w = w
        self.loop = asyncio.get_running_loop()
        self.box = w.VBox([])
        self.box.add_class(PROMPTS_CLASS)
        self.shown: Any = None  # the box with its guard, once displayed on its own (`mimebundle`)
        self.on_closed = on_closed  # after a prompt is answered (the run view re-renders)
        self._pending: list[asyncio.Future[Any]] = []

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

    def cancel(self) -> None:
        for future in self._pending:
            if not future.done():
                future.cancel()

    def close(self) -> None:
        """Cancel what is still open and close the box's widgets (its guard's too)."""
        self.cancel()
        close_widgets(self.box if self.shown is None else self.shown)

    def mimebundle(self) -> dict[str, Any]:
        """The box to display on its own (outside a run view): with its guard, which takes the
        prompts away when the kernel goes, and the marker and text a front end shows where
        the widgets are gone."""
        if self.shown is None:
            from flow_kernel.views.run_widget import PromptsGuard

            self.shown = self.w.VBox([PromptsGuard(), self.box])
        bundle: dict[str, Any] = dict(self.shown._repr_mimebundle_())
        bundle[LIVE_MIME] = {"prompt": True}
        bundle["text/plain"] = PROMPT_TEXT
        return bundle

    async def ask(self, request: dict[str, Any]) -> Any:
        """Show a prompt for `request` and wait for the click (or `answer`): `kind`
        "approve" gives Approve / Deny (True / False); a `choice` list one button each
        (the chosen string); otherwise a text box (its text)."""
        w = self.w
        future: asyncio.Future[Any] = self.loop.create_future()
        self._pending.append(future)
        kind = request.get("kind")
        parts: list[Any] = [w.HTML(f"<strong>{escape(request.get('question'))}</strong>")]
        if request.get("items"):
            parts.append(w.HTML("<ul>" + "".join(f"<li>{escape(item)}</li>" for item in request["items"]) + "</ul>"))
        if request.get("details") is not None:
            parts.append(w.HTML(f"<pre>{escape(json.dumps(request['details'], ensure_ascii=False, indent=2))}</pre>"))
        if isinstance(request.get("timeout_ms"), int):  # `timeout T else V`: the prompt closes after T
            deadline = PromptDeadline(request["timeout_ms"], request.get("default"))
            parts.append(w.HTML(f"<em>{escape(deadline.describe())}</em>"))

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
            styles = request.get("styles") or {}
            for option in request["choice"]:
                button = w.Button(description=str(option), button_style=str(styles.get(option, "")),
                                  layout=w.Layout(width="auto"))  # the whole label
                button.on_click(lambda _b, option=option: resolve(option))
                controls.append(button)
        else:
            text = w.Text(placeholder="your answer")
            submit = w.Button(description="Answer", button_style="primary")
            submit.on_click(lambda _b: resolve(text.value))
            controls = [text, submit]
        prompt = w.VBox([*parts, w.HBox(controls)])
        self.box.children = (*self.box.children, prompt)
        try:
            return await future
        finally:
            self.box.children = tuple(c for c in self.box.children if c is not prompt)
            close_widgets(prompt)
            if self.on_closed is not None:
                self.on_closed()


def close_widgets(*widgets: Any) -> None:
    """Close widgets with their children, layouts and styles: each of those is a widget of
    its own that `Widget.close()` leaves open, registered in the comm manager for the
    kernel's life."""
    from ipywidgets import Widget

    todo, seen = list(widgets), set()
    while todo:
        widget = todo.pop()
        if id(widget) in seen:
            continue
        seen.add(id(widget))
        todo.extend(getattr(widget, "children", None) or ())
        for part in (widget._trait_values.get("layout"), widget._trait_values.get("style")):
            if isinstance(part, Widget):  # read without creating one that was never made
                todo.append(part)
        widget.close()

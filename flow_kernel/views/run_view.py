"""The live run view: the widget built from widgets/ (views/run_widget.py), fed the run's
events as compact records in batches (views/run_stream.py), above the operator's prompts
(Approve / Deny, the choices of an `ask`, a text box; views/prompts.py), answered while the
cell still runs. The browser builds the tree; the host keeps the `RunModel` for a card's
details (asked for when the card opens) and for the static summary.

When the run ends, the kernel replaces the widget's output with the static summary
(`static_bundle`) and closes the widget, so a saved notebook keeps
the summary alone. A notebook saved before that (an autosave mid-run, or a save after its
kernel went away) keeps the live view's display instead, whose widget model is gone when the
notebook is opened again: the display carries what a front end shows then (`unlinked_bundle`).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from flow_kernel.markup import escape
from flow_kernel.short_text import shorten
from flow_kernel.views.panel_view import panel_call_words
from flow_kernel.views.prompts import LIVE_MIME, Prompts, close_widgets
from flow_kernel.views.run_html import summary_bundle
from flow_kernel.views.run_model import Node, RunModel
from flow_kernel.views.run_stream import Batcher, Compactor
from flow_kernel.views.wire import Detail, End

DETAIL_TEXT = 4000  # characters of a card's prompt or instructions sent to the browser
DETAIL_JSON = 16000  # bytes of a card's output sent as a tree; past that, its text shortened


class RunView:
    def __init__(self, title: str | None = None, run_id: str | None = None,
                 agents: dict[str, dict[str, Any]] | None = None) -> None:
        import ipywidgets as w

        from flow_kernel.views.run_widget import RunWidget

        self.agents = agents or {}  # agent name -> its declared fields (role, instructions) for the cards
        self.model = RunModel(run_id, title)
        self.loop = asyncio.get_running_loop()
        self.widget = RunWidget(title=title or "", run=run_id or "")
        self.compact = Compactor()
        self.batcher = Batcher(self.widget.send, self.loop)
        self.ended: End | None = None
        self.widget.on_msg(self._on_message)
        self.prompts = Prompts()  # its box is what the widget hides when its kernel goes away
        self.box = w.VBox([self.widget, self.prompts.box])

    # -- display ---------------------------------------------------------------------------------
    def mimebundle(self, display: str | None = None, parent: str | None = None) -> dict[str, Any]:
        """The live view's display: the widget, and what shows where its model is gone;
        `display` its display id and `parent` the id of the request it is an output of (a
        page that did not send that request shows the run's outputs by them)."""
        return {**self.box._repr_mimebundle_(), **unlinked_bundle(self.model.run_id, display, parent)}

    def static_bundle(self) -> dict[str, Any]:
        return summary_bundle(self.model)

    def sink(self, event: dict[str, Any]) -> None:
        self.model.apply(event)
        record = self.compact(event)
        if record is not None:
            self.batcher.add(record)

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """The browser's requests: `hello` (a view opened: what it has not seen), `detail`
        (a card opened: its full text). Handed to the run's loop (a comm message may come on
        another thread)."""
        if isinstance(content, dict):
            self.loop.call_soon_threadsafe(self._answer, content)

    def _answer(self, content: dict[str, Any]) -> None:
        if content.get("t") == "hello":
            have = content.get("have")
            self.batcher.replay(have if isinstance(have, int) and not isinstance(have, bool) else 0, self.compact.now())
            if self.ended is not None:
                self.widget.send(self.ended)
        elif content.get("t") == "detail" and isinstance(content.get("i"), str):
            node = self.model.nodes.get(content["i"])
            if node is not None and node.kind == "agent":
                card: Detail = {"t": "detail", "i": node.id, "d": self.detail(node)}
                self.widget.send(card)

    def detail(self, node: Node) -> dict[str, Any]:
        """A card's full text, each part bounded."""
        d = node.data
        declared = self.agents.get(node.name, {})
        out: dict[str, Any] = {"agent": node.name, "provider": d.get("provider"), "model": d.get("model")}
        if panel_call_words(d.get("label")) is not None:  # the raw label (the card shows it in words)
            out["label"] = shorten(d["label"], 200)
        for key in ("role", "instructions"):
            if isinstance(declared.get(key), str):
                out[key] = shorten(declared[key].strip(), DETAIL_TEXT)
        if d.get("prompt") is not None:
            out["prompt"] = shorten(str(d.get("prompt")), DETAIL_TEXT)
        if "output" in d:
            text = json.dumps(d.get("output"), ensure_ascii=False, default=str)
            out["output"] = d.get("output") if len(text) <= DETAIL_JSON else shorten(text, DETAIL_JSON)
        if node.state == "failed":
            out["code"], out["message"] = str(d.get("code")), shorten(str(d.get("message") or ""), DETAIL_TEXT)
        out["attempts"] = [{k: shorten(v, 300) if isinstance(v, str) else v for k, v in a.items()
                            if k in ("kind", "attempt", "ok", "error", "message", "invalid")} for a in node.attempts[:20]]
        calls = d.get("tool_calls")
        if isinstance(calls, list):
            out["tool_calls"] = [{"tool": str(c.get("tool")), "arguments": shorten(c.get("arguments"), 300, as_json=True),
                                  "result": shorten(c.get("result"), 300, as_json=True)}
                                 for c in calls[:20] if isinstance(c, dict)]
        return out

    def finish(self, result: Any = None, error: dict[str, Any] | None = None, steps: int | None = None,
               events: list[dict[str, Any]] | None = None, waiting: bool = False) -> None:
        """The final state; with the run's `events`, rebuilt in their canonical order, so the
        summary is the same however concurrent branches interleaved."""
        self._end("completed" if error is None else "interrupted" if error.get("code") == "cancelled" else "failed")
        if events is not None:
            self.model = RunModel.from_events(events, self.model.title)
        self.model.finish(result, error, steps, waiting)
        self.prompts.cancel()

    def interrupt(self) -> None:
        """The run was cancelled: what was running shows as cancelled, not running."""
        self._end("interrupted")
        self.model.interrupt()
        self.prompts.cancel()

    def _end(self, status: str) -> None:
        self.batcher.close()
        self.batcher.flush()
        self.ended = {"t": "end", "s": status, "ms": self.compact_elapsed()}
        self.widget.send(self.ended)

    def compact_elapsed(self) -> int | None:
        times = [r.get("t") for r in self.batcher.records[-1:]]
        return times[0] if times and isinstance(times[0], int) else None

    def close(self) -> None:
        self.batcher.close()
        self.prompts.close()
        close_widgets(self.box)

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


def unlinked_text(run_id: str | None) -> str:
    """What a live view's display says where its widget is not there: the notebook was saved
    while the run went on and opened again, or a front end without the widget shows it. True
    however the run went on: its journal, not this display, knows how it ended."""
    run = run_id or "RUN"
    return (f"Flow run {run} (live view). Where the view itself cannot be shown (a notebook "
            "saved while the run went on and opened again, or a front end without Jupyter "
            "widgets), the run's journal keeps what it did: "
            f"%resume {run} goes on with it if it was interrupted (a kernel restart does not "
            "cancel it); %runs (or flow runs) says how it ended.")


def live_display_id(run_id: str) -> str:
    """A display id of one execution's live view: its own, since a resumed run keeps its run
    id, and updating a display id shared with the cell that left the run waiting would
    rewrite that cell's view too."""
    return f"flow-run-{run_id}-{uuid.uuid4().hex[:12]}"


def request_msg_id(parent: Any) -> str | None:
    """The `msg_id` of the Jupyter request `parent` (what a cell's outputs answer), if it
    has one: the live view's marker names it, so a page reloaded mid-run finds the view's
    cell (`unlinked_bundle`)."""
    header = parent.get("header") if isinstance(parent, dict) else None
    msg_id = header.get("msg_id") if isinstance(header, dict) else None
    return msg_id if isinstance(msg_id, str) and msg_id else None


def unlinked_bundle(run_id: str | None, display: str | None = None, parent: str | None = None) -> dict[str, Any]:
    """The live view's display data besides the widget's: `LIVE_MIME` (the run id, for the
    front end that shows `text/plain` in place of a widget whose model is gone; with
    `display` and `parent`, the display id and the request's id, by which a page reloaded
    mid-run shows the run's summary and result: labextension/src/adopt.ts), `text/plain`
    and `text/html` (what a front end without the widget, or an untrusted notebook, shows)."""
    text = unlinked_text(run_id)
    mark = {"run": run_id or ""}
    if display and parent:
        mark.update(display=display, parent=parent)
    return {LIVE_MIME: mark, "text/plain": text,
            "text/html": f'<div class="flow-run-unlinked" style="white-space:pre-wrap;opacity:.8">{escape(text)}</div>'}


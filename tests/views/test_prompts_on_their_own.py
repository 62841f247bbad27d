"""A box of prompts shown on its own (the capability prompt, a resumed run's open requests;
views/prompts.py `Prompts.mimebundle`): the guard widget beside it that takes the prompts away
when the kernel goes (widgets/src/guard.js), the class that finds them, the marker and text a
front end shows where the widgets are gone, and nothing left open once it is closed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.views.prompts import LIVE_MIME, PROMPT_TEXT, PROMPTS_CLASS, Prompts

pytest.importorskip("anywidget")

STATIC = Path(__file__).resolve().parents[2] / "flow_kernel" / "views" / "static"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def test_the_box_on_its_own_has_its_guard_the_marker_and_the_text() -> None:
    from flow_kernel.views.run_widget import PromptsGuard

    async def shown() -> tuple[dict[str, Any], str, Any, Prompts, list[Any]]:
        prompts = Prompts()
        bundle = prompts.mimebundle()
        assert prompts.mimebundle()[WIDGET_MIME] == bundle[WIDGET_MIME]  # displayed again: the same box
        asking = asyncio.ensure_future(prompts.ask({"kind": "approve", "question": "Wire the <b>money</b>?"}))
        await asyncio.sleep(0)
        model_id = prompts.shown.model_id
        opened = widgets_under(prompts.shown)
        prompts.close()
        with pytest.raises(asyncio.CancelledError):
            await asking
        return bundle, model_id, prompts.shown, prompts, opened

    bundle, model_id, shown, prompts, opened = asyncio.run(shown())
    assert bundle[WIDGET_MIME]["model_id"] == model_id
    assert bundle[LIVE_MIME] == {"prompt": True}  # no run, request or display: nothing to adopt
    assert bundle["text/plain"] == PROMPT_TEXT and "run the cell again" in PROMPT_TEXT
    guard, box = shown.children
    assert isinstance(guard, PromptsGuard) and box is prompts.box
    assert PROMPTS_CLASS in box._dom_classes and PROMPTS_CLASS not in shown._dom_classes
    assert guard._esm == (STATIC / "prompts_guard.js").read_text(encoding="utf-8")
    # Closed: the box, its guard, the prompt's buttons and every layout and style with them.
    assert len(opened) > 10 and all(w.comm is None for w in opened)


def widgets_under(root: Any) -> list[Any]:
    """`root` and every widget under it: children, layouts, styles."""
    from ipywidgets import Widget

    found, todo = [], [root]
    while todo:
        widget = todo.pop()
        found.append(widget)
        todo.extend(getattr(widget, "children", None) or ())
        todo.extend(p for p in (getattr(widget, "layout", None), getattr(widget, "style", None)) if isinstance(p, Widget))
    return found


def test_a_box_inside_a_run_view_has_no_guard_of_its_own() -> None:
    async def made() -> tuple[Any, Any]:
        prompts = Prompts()
        try:
            return prompts.shown, list(prompts.box._dom_classes)
        finally:
            prompts.close()

    shown, classes = asyncio.run(made())
    assert shown is None and PROMPTS_CLASS in classes  # the run view's widget takes it away

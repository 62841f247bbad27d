"""What the live view's display carries for the front end: the class on its box of prompts
that the widget looks for when its kernel goes away (widgets/src/prompts.js hides and disables
the prompts in it: a click there would reach no kernel), and the ids by which a page that did
not send the run's request shows its outputs (labextension/src/adopt.ts)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from flow_kernel.views.prompts import PROMPTS_CLASS
from flow_kernel.views.run_view import LIVE_MIME, unlinked_bundle

pytest.importorskip("ipywidgets")

PROMPTS_JS = Path(__file__).resolve().parents[2] / "widgets" / "src" / "prompts.js"


def test_the_prompts_box_has_the_class_the_front_end_hides() -> None:
    from flow_kernel.views.run_view import RunView

    async def classes() -> tuple[list[str], list[str]]:
        view = RunView("<cell 1>", "r0a1b2c3d4e5f")
        try:
            return list(view.prompts.box._dom_classes), list(view.widget._dom_classes)
        finally:
            view.close()

    prompts, widget = asyncio.run(classes())
    assert PROMPTS_CLASS in prompts and PROMPTS_CLASS not in widget
    declared = re.search(r'export const PROMPTS = "([^"]+)"', PROMPTS_JS.read_text(encoding="utf-8"))
    assert declared and declared.group(1) == PROMPTS_CLASS


def test_the_marker_names_the_display_and_the_request_only_with_both() -> None:
    mark = unlinked_bundle("r1", "flow-run-r1-0a1b", "9c8d-msg")[LIVE_MIME]
    assert mark == {"run": "r1", "display": "flow-run-r1-0a1b", "parent": "9c8d-msg"}
    assert unlinked_bundle("r1", "flow-run-r1-0a1b", None)[LIVE_MIME] == {"run": "r1"}
    assert unlinked_bundle(None)[LIVE_MIME] == {"run": ""}


def test_the_live_display_names_the_request_it_belongs_to() -> None:
    from flow_kernel.views.run_view import RunView

    async def bundle() -> dict[str, object]:
        view = RunView("<cell 2>", "r0a1b2c3d4e5f")
        try:
            return view.mimebundle("flow-run-r0a1b2c3d4e5f-01", "msg-7")
        finally:
            view.close()

    assert asyncio.run(bundle())[LIVE_MIME] == {"run": "r0a1b2c3d4e5f", "display": "flow-run-r0a1b2c3d4e5f-01",
                                                 "parent": "msg-7"}

"""The run view's box of prompts carries the class the widget's front end looks for when its
kernel goes away (widgets/src/gone.js hides and disables the prompts in it: a click there
would reach no kernel)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from flow_kernel.views.run_view import PROMPTS_CLASS

pytest.importorskip("ipywidgets")

GONE_JS = Path(__file__).resolve().parents[2] / "widgets" / "src" / "gone.js"


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
    declared = re.search(r'export const PROMPTS = "([^"]+)"', GONE_JS.read_text(encoding="utf-8"))
    assert declared and declared.group(1) == PROMPTS_CLASS

"""The live view's display for where its widget model is gone (`views/run_view.py`
`unlinked_bundle`): a notebook saved mid-run, opened again, shows this text in place of the
widget (labextension/src/liveview.ts), an untrusted one its HTML. It must be true however
the run went on, say the same as docs/widgets.md, and carry nothing as live markup."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from flow_kernel.views.run_view import LIVE_MIME, unlinked_bundle, unlinked_text

pytest.importorskip("ipywidgets")

DOCS = Path(__file__).resolve().parents[2] / "docs" / "widgets.md"


def test_the_live_display_carries_the_widget_and_what_to_show_without_it() -> None:
    from flow_kernel.views.run_view import RunView

    async def bundle() -> dict[str, object]:
        view = RunView("<cell 3>", "r0a1b2c3d4e5f")
        try:
            return view.mimebundle()
        finally:
            view.close()

    data = asyncio.run(bundle())
    assert set(data) == {"application/vnd.jupyter.widget-view+json", LIVE_MIME, "text/plain", "text/html"}
    assert data[LIVE_MIME] == {"run": "r0a1b2c3d4e5f"}
    assert data["text/plain"] == unlinked_text("r0a1b2c3d4e5f")
    assert "%resume r0a1b2c3d4e5f goes on with it" in str(data["text/plain"])


def test_the_text_is_what_the_docs_say() -> None:
    quoted = re.sub(r"\n> ?", " ", DOCS.read_text(encoding="utf-8"))  # the blockquote as one paragraph
    docs = " ".join(quoted.split())
    assert unlinked_text("RUN") in docs


def test_nothing_in_it_becomes_markup() -> None:
    data = unlinked_bundle('<img src=x onerror="alert(1)">')
    html = str(data["text/html"])
    assert "<img" not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    assert html.count("<") == 2  # the one div, opened and closed


def test_without_a_run_id_it_names_the_placeholder() -> None:
    assert unlinked_bundle(None)[LIVE_MIME] == {"run": ""}
    assert "%resume RUN goes on" in unlinked_text(None)

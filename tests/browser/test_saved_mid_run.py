"""A notebook saved after Kernel ▸ Restart mid-run, opened again (JupyterLab, Chromium).

A run's live view is a widget display that the kernel replaces with the run's summary when
the run ends; a restart mid-run kills the kernel before that, so the saved notebook keeps
the live display, whose widget model no kernel has when the notebook is opened again. The
Jupyter widget manager would show "Error displaying widget: model not found" there; the
display's `text/plain` says what became of the run instead (flow_kernel/views/run_view.py
`unlinked_text`, shown by labextension/src/liveview.ts; docs/widgets.md "A live view saved
mid-run")."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import WIDGET_MIME, Lab, missing, reopened_output

pytestmark = pytest.mark.browser

REASON = missing()
if REASON:
    pytest.skip(REASON, allow_module_level=True)

from flow_kernel.views.run_view import LIVE_MIME, unlinked_text  # noqa: E402

CELL = 'let ok = approve "Archive the March tickets?"\nok ? "archived" : "kept"'


def test_a_view_saved_after_a_restart_mid_run_says_what_became_of_the_run(lab: tuple[Any, str, Path]) -> None:
    browser, url, root = lab
    path = root / "saved-mid-run.ipynb"
    with Lab(browser, url).closing("saved-mid-run-failed.png") as view:
        view.run_until_prompt(path, [CELL])
        output = view.page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-OutputArea")
        assert output.locator(".flow-run-view").count() == 1 and output.locator(".flow-run-unlinked").count() == 0
        view.restart_kernel()
        gone = output.locator(".fr-gone")  # the live view, still shown, says its kernel went away
        gone.wait_for(timeout=30_000)
        found = re.search(r"%resume (r[0-9a-f]+)", gone.inner_text())
        assert found, gone.inner_text()
        run = found.group(1)
        live = view.saved_display(path)
    assert WIDGET_MIME in live and live[LIVE_MIME]["run"] == run, live
    assert "".join(live["text/plain"]) == unlinked_text(run)

    shown, _ = reopened_output(browser, url, path.name, "saved-mid-run-reopened.png")  # on the kernel its restart started
    assert "model not found" not in shown and "Loading widget" not in shown, shown
    assert note_text(shown) == unlinked_text(run)
    assert f"%resume {run}" in shown


def note_text(shown: str) -> str:
    """The output area's text as one paragraph (the browser wraps it into lines)."""
    return " ".join(shown.split())

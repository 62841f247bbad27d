"""The run view in Jupyter Notebook 7's own UI (issue 18: "works in JupyterLab, Notebook 7 and
VS Code"), in Debian's Chromium: a Flow notebook opened at /notebooks/…, a cell with a small
parallelMap and an approval run under the interactive operator; the live anywidget renders
(the map's row with its counts), its Approve button is clicked, and the finished summary
replaces it. One server, one notebook, one cell: kept lean (the server start dominates)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import Notebook7, jupyter_server, missing, write_notebook

pytestmark = pytest.mark.browser

REASON = missing("notebook")  # Notebook 7
if REASON:
    pytest.skip(REASON, allow_module_level=True)

CELL = '''agent triager {
  model: "scripted"
  output: { id: string }
  script: [{ id: "T1" }, { id: "T2" }, { id: "T3" }]
}
let triaged = parallelMap(["printer", "refund", "login"], t => triager("Ticket: ${t}"))
let ok = approve "Escalate ${len(triaged)} tickets?"
ok ? "escalated" : "kept"
'''


@pytest.fixture(scope="module")
def notebook7(chromium: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str, Path]]:
    root = tmp_path_factory.mktemp("notebook7-root")
    home = tmp_path_factory.mktemp("notebook7-home")
    with jupyter_server("notebook", root, home) as url:
        yield chromium, url, root


def test_run_view_and_approve_in_notebook_7(notebook7: tuple[Any, str, Path]) -> None:
    browser, url, root = notebook7
    started = time.monotonic()
    write_notebook(root / "escalate.ipynb", [CELL])
    view = Notebook7(browser, url)
    view.open("escalate.ipynb")
    page = view.page
    # Notebook 7's shell, not JupyterLab's: its body says which Notebook page this is.
    assert page.locator("body[data-notebook=notebooks]").count() == 1
    assert page.locator("#jp-main-statusbar").count() == 0
    view.run_cell(0)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(0)
    widget = cell.locator(".flow-run-view")
    try:
        # The live anywidget: the map as one row with its counts, the approval waiting.
        widget.locator(".fr-group", has_text="3 done").wait_for(timeout=30_000)
        row = widget.locator(".fr-group .fr-head").first.inner_text()
        assert "parallelMap" in row and "triager" in row and "3/3" in row, row
        assert "Ticket: refund" in widget.inner_text()  # the item cards, labelled by their prompt
        widget.get_by_text("Escalate 3 tickets?", exact=False).first.wait_for(timeout=10_000)
        view.screenshot("notebook7-run-view-live.png", index=0)
        view.click_button("Approve")
        # The finished summary replaces the widget: the result, and who approved.
        view.wait_for_text("escalated", index=0, timeout=30_000)
        view.wait_for_text("by interactive", index=0, timeout=30_000)
    except Exception:
        view.screenshot("notebook7-failed.png")
        raise
    widget.wait_for(state="detached", timeout=10_000)
    text = view.output_text(0)
    assert "approved" in text and "parallelMap triager" in text and "live view" not in text, text
    view.screenshot("notebook7-run-view-done.png", index=0)
    print(f"Notebook 7: open, run, approve, summary in {time.monotonic() - started:.1f} s")

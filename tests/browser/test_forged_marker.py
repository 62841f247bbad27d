"""A notebook file whose outputs carry forged live-view markers (JupyterLab, Chromium;
docs/security.md, "A live view's marker in a saved notebook").

A run's live view names, under `application/vnd.flow.run-view+json`, its run, its display id
and the request it belongs to, and flow-kernel-lab acts on them: where the widget has no view
it shows the display's `text/plain` (labextension/src/liveview.ts), and a page that did not
send the request shows the run's outputs in the cell whose marker names it (adopt.ts). A
notebook file can hold anything there. Here the notebook holds, around a real live view, one
cell whose marker copies the real view's request and display ids and one whose marker names
a request of nothing (the real display id again); their `text/plain` and `text/html` carry an
`<img onerror>` and a `<script>` that would write a canary through the server's REST API. The
notebook is signed as the server signs one it saved (the worst case: a person trusted it), and
the page reloaded while the real run waits; then Approve is clicked in the real view.

Nothing runs (no image drawn or asked for by an output, no script element in the page, no
canary), the forged cells show their markup as text, and no cell is given the run's outputs: two cells name
the request, and the page cannot tell the forged one from the view's own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import WIDGET_MIME, Lab, missing, sign, wait_idle

pytestmark = pytest.mark.browser

REASON = missing()
if REASON:
    pytest.skip(REASON, allow_module_level=True)

from flow_kernel.views.prompts import LIVE_MIME  # noqa: E402
from tests.browser.test_markup_canary import canary_script  # noqa: E402
from tests.browser.test_reload_mid_run import click_until_answered  # noqa: E402

CELL = 'let ok = approve "Archive the May tickets?"\nok ? "archived" : "kept"'
IMAGE = "x-forged-marker.png"


def forged_output(mark: dict[str, Any], canary: str) -> dict[str, Any]:
    """A live display as a notebook file may hold it: `mark`, a widget no kernel has, and
    markup that writes `canary` if anything renders it."""
    markup = (f'<img src="{IMAGE}" onerror="{canary_script(canary)}">'
              f"<script>{canary_script(canary)}</script> Flow run (live view)")
    return {"output_type": "display_data", "metadata": {},
            "data": {LIVE_MIME: mark, WIDGET_MIME: {"model_id": "f0rged0model", "version_major": 2, "version_minor": 0},
                     "text/plain": markup, "text/html": markup}}


def test_forged_markers_run_nothing_adopt_nothing_and_show_as_text(lab: tuple[Any, str, Path], lab_home: Path) -> None:
    browser, url, root = lab
    path = root / "forged-marker.ipynb"
    asked: list[str] = []
    with Lab(browser, url).closing("forged-marker-failed.png") as view:
        view.page.on("request", lambda request: asked.append(request.url))
        view.run_until_prompt(path, [CELL])
        mark = view.saved_display(path)[LIVE_MIME]
        nb = json.loads(path.read_text())
        copied = {**mark, "run": '<img src=x onerror="alert(1)">'}  # the real request and display ids
        nowhere = {"run": "r0", "display": mark["display"], "parent": "a request of nothing"}
        nb["cells"] = [{**nb["cells"][0], "source": "1", "outputs": [forged_output(copied, "canary-copied.txt")]},
                       nb["cells"][0],
                       {**nb["cells"][0], "source": "2", "outputs": [forged_output(nowhere, "canary-nowhere.txt")]}]
        for number, cell in enumerate(nb["cells"]):
            cell["id"] = f"cell-{number}"
        path.write_text(json.dumps(nb))
        sign(path, lab_home)
        view.page.goto(f"{url}/lab/tree/{path.name}?reset", timeout=60_000)  # reloaded mid-run: the page adopts
        cells = view.page.locator(".jp-Notebook .jp-Cell")
        cells.nth(1).locator(".flow-run-view .fr-approval").wait_for(timeout=60_000)  # the real view, trusted
        for index in (0, 2):
            cells.nth(index).locator(".flow-run-unlinked").wait_for(timeout=30_000)  # its text, by liveview.ts
        forged = [" ".join(view.output_text(index).split()) for index in (0, 2)]
        click_until_answered(cells.nth(1).locator("button.jupyter-button", has_text="Approve"))
        cells.nth(1).locator(".flow-run-view").wait_for(state="detached", timeout=30_000)  # the run ended
        wait_idle(url)
        after = [" ".join(view.output_text(index).split()) for index in (0, 2)]
        elements = view.page.evaluate(
            "() => [document.querySelectorAll('.jp-OutputArea script').length,"
            f" document.querySelectorAll('img[src*=\"{IMAGE}\"]').length]")
        view.screenshot("forged-marker.png")
    for shown in forged:  # the markup as text
        assert f'<img src="{IMAGE}" onerror=' in shown and "<script>fetch(" in shown, shown
    assert after == forged  # nothing adopted into a forged cell: no summary, no result
    assert all("archived" not in shown and "approved" not in shown for shown in after), after
    assert elements == [0, 0], elements
    # No output drew the image: an <img> in an output asks for it through the server's files
    # (/files/…). JupyterLab's own table of contents parses every output's text/html, sanitised
    # (no onerror left), into a detached element, and Chromium asks for its image at the page's
    # path (/lab/tree/…) — for any notebook's HTML output, with a marker or without (seen with
    # that plugin, @jupyterlab/notebook-extension:toc, disabled: no request).
    assert not [u for u in asked if (IMAGE in u and "/lab/tree/" not in u) or "canary-" in u], asked
    assert not (root / "canary-copied.txt").exists() and not (root / "canary-nowhere.txt").exists()

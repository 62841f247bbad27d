"""A page reloaded while a run waits for an approval, the kernel alive (JupyterLab, Chromium).

The reloaded page gets the live view back (the saved notebook's display, the widget manager's
models, the view's `hello` replay) and a click on Approve lands in the kernel; but the run's
summary and result go to the request the old page sent, which no future of the new page
has. flow-kernel-lab shows them in the cell by the request and display ids the live view's
display carries (labextension/src/adopt.ts; docs/widgets.md, "A page reloaded mid-run"):
the decision lands and shows as it does without a reload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import Lab, missing

pytestmark = pytest.mark.browser

REASON = missing()
if REASON:
    pytest.skip(REASON, allow_module_level=True)

from flow_kernel.views.run_view import LIVE_MIME  # noqa: E402
from tests.browser.test_saved_mid_run import CELL  # noqa: E402


def click_until_answered(button: Any) -> None:
    """Click once it shows, again until the prompt closes: right after a reload the page's
    kernel connection may still be coming up, and a click then goes nowhere (the status bar
    says "Unknown"); a second click on an answered prompt changes nothing."""
    button.wait_for(state="visible", timeout=60_000)
    for _ in range(20):
        button.click()
        try:
            button.wait_for(state="detached", timeout=3_000)
            return
        except Exception:
            continue
    raise AssertionError("clicking Approve did nothing")


def test_approve_clicked_after_a_reload_shows_the_decision_and_the_result(lab: tuple[Any, str, Path]) -> None:
    browser, url, root = lab
    path = root / "reload-mid-run.ipynb"
    view = Lab(browser, url)
    try:
        view.run_until_prompt(path, [CELL])
        cell = view.page.locator(".jp-Notebook .jp-Cell").first
        mark = view.saved_display(path)[LIVE_MIME]
        assert set(mark) == {"run", "display", "parent"} and mark["display"].startswith(f"flow-run-{mark['run']}-"), mark
        # The page loaded again (F5, with `?reset`: the shared server's workspace would also
        # bring back the other tests' notebooks, and `.jp-Cell` would find theirs first).
        view.page.goto(f"{url}/lab/tree/{path.name}?reset", timeout=60_000)
        cell.locator(".flow-run-view .fr-approval").wait_for(timeout=60_000)  # the view is back, replayed
        click_until_answered(cell.locator("button.jupyter-button", has_text="Approve"))
        view.wait_for_text("archived", index=0, timeout=30_000)
        view.wait_for_text("by interactive", index=0)  # the summary in the view's place
        cell.locator(".flow-run-view").wait_for(state="detached", timeout=10_000)
        shown = view.output_text(0)
        view.screenshot("reload-mid-run-approved.png", index=0)
    except Exception:
        view.screenshot("reload-mid-run-failed.png")
        raise
    finally:
        view.page.close()
    assert shown.count("archived") == 1 and "approved by interactive" in " ".join(shown.split()), shown
    assert "[1]:" in shown  # the result, with its execution count

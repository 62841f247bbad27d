"""Kernel ▸ Restart while the capability prompt waits (JupyterLab, Chromium).

A box of prompts shown on its own — the capability prompt a cell's magics raise — carries a
guard widget beside it: when the widget manager marks the kernel's comms dead, the guard hides
the box, disables its buttons (a click would reach no kernel) and says why, as the run view
does for its own prompts (widgets/src/prompts.js, the one place; guard.js). The notebook saved
then and opened again shows the display's text where no kernel has its widgets, never
live-looking buttons (labextension/src/liveview.ts; docs/widgets.md, "Prompts")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import Lab, missing

pytestmark = pytest.mark.browser

REASON = missing()
if REASON:
    pytest.skip(REASON, allow_module_level=True)

from flow_kernel.views.prompts import LIVE_MIME, PROMPT_TEXT  # noqa: E402

CELL = '%allow run sh\n"allowed"'
GONE = "The kernel went away (restarted or stopped) before this prompt was answered"  # widgets/src/guard.js


def test_a_restart_takes_the_capability_prompt_away_and_the_saved_notebook_shows_its_text(
        lab: tuple[Any, str, Path]) -> None:
    browser, url, root = lab
    path = root / "prompt-after-restart.ipynb"
    view = Lab(browser, url)
    try:
        deny = view.run_until_prompt(path, [CELL], button="Deny")
        output = view.page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-OutputArea")
        assert "This notebook asks to run the executable `sh`" in view.output_text(0)
        assert output.locator("button.jupyter-button:enabled").count() == 3  # live: Allow once / for this notebook / Deny
        view.restart_kernel()
        output.get_by_text(GONE).wait_for(timeout=30_000)
        deny.wait_for(state="hidden", timeout=10_000)
        assert output.locator("button.jupyter-button:visible").count() == 0
        assert output.locator("button.jupyter-button:enabled").count() == 0
        said = " ".join(view.output_text(0).split())
        assert "Run the cell again to be asked again" in said and "This notebook asks" not in said, said
        view.screenshot("prompt-after-restart.png", index=0)
        outputs = view.saved_outputs(path)
    except Exception:
        view.screenshot("prompt-after-restart-failed.png")
        raise
    finally:
        view.page.close()
    shown = [o["data"] for o in outputs if LIVE_MIME in o.get("data", {})]
    assert len(shown) == 1 and shown[0][LIVE_MIME] == {"prompt": True}, outputs
    assert "".join(shown[0]["text/plain"]) == PROMPT_TEXT

    reopened = Lab(browser, url)  # opened again, on the kernel the restart started
    try:
        reopened.open(path.name)
        area = reopened.page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-OutputArea")
        area.locator(".flow-run-unlinked").or_(area.get_by_text("model not found")).first.wait_for(timeout=60_000)
        text = " ".join(reopened.output_text(0).split())
        buttons = area.locator("button").count()
        reopened.screenshot("prompt-after-restart-reopened.png", index=0)
    finally:
        reopened.page.close()
    assert text == PROMPT_TEXT, text
    assert buttons == 0

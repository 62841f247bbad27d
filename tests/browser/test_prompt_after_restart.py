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

from tests.browser.lab import Lab, missing, reopened_output

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
    with Lab(browser, url).closing("prompt-after-restart-failed.png") as view:
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
        saved = view.saved_display(path)
    assert saved[LIVE_MIME] == {"prompt": True} and "".join(saved["text/plain"]) == PROMPT_TEXT, saved

    text, buttons = reopened_output(browser, url, path.name, "prompt-after-restart-reopened.png")
    assert " ".join(text.split()) == PROMPT_TEXT, text
    assert buttons == 0

"""Kernel ▸ Restart while a run waits for an approval (JupyterLab, Chromium).

The live view sees its kernel go (the widget manager marks its comm dead) and says the run was
interrupted. Its Approve / Deny buttons would send their click to no kernel: they are taken
away, and the view says the approval was not answered and that the resumed run asks it again
— which `%resume` then does, in its own cell, where the click counts
(widgets/src/gone.js; docs/widgets.md, "The front end")."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import Lab, missing, wait_idle

pytestmark = pytest.mark.browser

REASON = missing()
if REASON:
    pytest.skip(REASON, allow_module_level=True)

CELL = 'let ok = approve "Archive the April tickets?"\nok ? "archived" : "kept"'  # its own: `%resume last` finds this run


def test_a_restart_takes_the_approval_buttons_away_and_the_resumed_run_asks_again(lab: tuple[Any, str, Path]) -> None:
    browser, url, root = lab
    view = Lab(browser, url)
    try:
        approve = view.run_until_prompt(root / "restart-approval.ipynb", [CELL, "%resume last"])
        first = view.page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-OutputArea")
        view.restart_kernel()
        gone = first.locator(".fr-gone")
        gone.wait_for(timeout=30_000)
        said = " ".join(gone.inner_text().split())
        assert re.search(r"%resume r[0-9a-f]+ \(or %resume last\) goes on with the run", said), said
        assert "its approval was not answered: the resumed run asks it again" in said, said
        approve.wait_for(state="hidden", timeout=10_000)  # no decision offered that goes nowhere
        assert first.locator("button.jupyter-button", has_text="Deny").is_hidden()
        assert first.locator("button.jupyter-button:enabled").count() == 0
        assert "not answered: answer it after %resume" in " ".join(view.output_text(0).split())
        view.screenshot("restart-approval-gone.png", index=0)
        wait_idle(url)
        view.run_cell(1)  # the resumed run asks again, in this cell, and the click counts
        second = view.page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea")
        again = second.locator("button.jupyter-button", has_text="Approve")
        again.wait_for(state="visible", timeout=60_000)
        again.click()
        view.wait_for_text("archived", index=1)
        view.wait_for_text("by interactive", index=1)
        assert "Archive the April tickets?" in view.output_text(1)
    except Exception:
        view.screenshot("restart-approval-failed.png")
        raise
    finally:
        view.page.close()

"""A stranger's notebook opened by a person in real JupyterLab + Chromium (issue 15, "Must
show"): the cell asks for `sh`, a `%tools` file that writes a canary when imported, and
`auto-approve`; the capability prompt widget appears with the request's text, and Deny
keeps everything shut — no canary, `sh` never ran, nothing of the cell applied.
(tests/security/test_stranger_notebook.py runs the same attacks headless and over the
protocol, with the doors reopened to show they get out.)"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import Lab, missing, write_notebook

pytestmark = pytest.mark.browser

REASON = missing()
if REASON:
    pytest.skip(REASON, allow_module_level=True)

DOCS_IMAGE = Path(__file__).resolve().parents[2] / "docs" / "images" / "capability-prompt.png"


def test_deny_at_the_capability_prompt_keeps_everything_shut(lab: tuple[Any, str, Path]) -> None:
    browser, url, root = lab
    folder = root / "stranger"
    folder.mkdir()
    tools_canary, sh_canary = root / "tools-canary.txt", root / "sh-canary.txt"
    (folder / "evil.py").write_text(f"open({str(tools_canary)!r}, 'w').write('pwned')\n"
                                    "@flow_tool\ndef harmless(x: str) -> str:\n    return x\n", encoding="utf-8")
    cell = (f'%allow run sh\n%tools evil.py\n%operator auto-approve\n'
            f'run "sh" ["-c", "echo pwned > {sh_canary}"]\napprove "Wire the money?"')
    write_notebook(folder / "stranger.ipynb", [cell, "%allow\n%operator"])
    view = Lab(browser, url)
    view.open("stranger/stranger.ipynb")
    view.run_cell(0)
    try:
        view.wait_for_text("This notebook asks to:", index=0)
    except Exception:
        view.screenshot("capability-prompt-missing.png")
        raise
    text = view.output_text(0)
    assert "run the executable `sh`" in text and "evil.py on the host" in text and "auto-approve" in text
    shot = view.screenshot("capability-prompt.png", index=0)
    if os.environ.get("FLOW_UPDATE_DOCS_IMAGES") == "1":  # the picture in docs/kernel.md
        shutil.copy(shot, DOCS_IMAGE)
    view.click_button("Deny")
    view.wait_for_text("you denied", index=0)
    assert "nothing of the cell ran" in view.output_text(0)
    view.screenshot("capability-denied.png", index=0)
    view.run_cell(1)  # nothing of the denied cell applied
    view.wait_for_text("operator: interactive", index=1)
    assert "run may start: nothing" in view.output_text(1)
    assert not tools_canary.exists() and not sh_canary.exists()

"""A call's live state in real JupyterLab + Chromium (tests/browser/streaming.py): the card
shows the call waiting on a 429's Retry-After with its end, then its text growing as the
loopback server streams — model markup drawn as text — and the cell keeps the summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import Lab, missing

pytestmark = pytest.mark.browser

REASON = missing()
if REASON:
    pytest.skip(REASON, allow_module_level=True)


def test_the_card_shows_the_wait_then_fills_as_the_model_writes(lab: tuple[Any, str, Path]) -> None:
    from tests.browser.streaming import card_waits_then_fills

    browser, url, root = lab
    card_waits_then_fills(Lab(browser, url), root, "streaming.ipynb")

"""One JupyterLab and one Chromium for every browser test (a server start is the slowest
part of them): each test writes its own notebooks under the shared root, by names of its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import jupyter_lab, launch


@pytest.fixture(scope="package")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str, Path]]:
    from playwright.sync_api import sync_playwright

    root = tmp_path_factory.mktemp("lab-root")
    home = tmp_path_factory.mktemp("lab-home")
    with jupyter_lab(root, home) as url, sync_playwright() as p:
        browser = launch(p)
        try:
            yield browser, url, root
        finally:
            browser.close()

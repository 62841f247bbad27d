"""One JupyterLab and one Chromium for every browser test (a server start is the slowest
part of them): each test writes its own notebooks under the shared root, by names of its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import jupyter_lab, launch


@pytest.fixture(scope="package")
def chromium() -> Iterator[Any]:
    """The one Playwright and Chromium of the browser tests. Playwright's sync API cannot run
    twice at once in a thread ("using Playwright Sync API inside the asyncio loop"), so a
    test that needs another server (test_notebook7) uses this browser too."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="package")
def lab_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared JupyterLab's private HOME (its Jupyter data dir, with the notebook secret
    and signatures, is `data/` under it: `lab.sign`)."""
    return tmp_path_factory.mktemp("lab-home")


@pytest.fixture(scope="package")
def lab(chromium: Any, lab_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str, Path]]:
    root = tmp_path_factory.mktemp("lab-root")
    with jupyter_lab(root, lab_home) as url:
        yield chromium, url, root

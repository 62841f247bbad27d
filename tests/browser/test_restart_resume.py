"""Kernel ▸ Restart in the middle of a durable run, then `%resume last` in the new kernel, as
a person does it in JupyterLab and in Notebook 7 (Chromium): the run's view says
`interrupted` when the old kernel goes, and the resumed run finishes with the journaled
calls not asked again — the only call the provider sees twice is the one in flight at the
restart. Also Notebook 7's card of a streamed call (tests/browser/streaming.py; JupyterLab's
is test_streaming_view.py).

Each front end gets a server of its own here, started with the loopback model server's
address in its environment: a Flow kernel's environment is its Jupyter server's."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import (
    LAB_OPTIONS,
    Lab,
    Notebook7,
    jupyter_server,
    missing,
    wait_idle,
    write_notebook,
)

pytestmark = pytest.mark.browser

REASON = missing("notebook")  # Notebook 7
if REASON:
    pytest.skip(REASON, allow_module_level=True)

from tests.kernel.test_restart import CALLS, DECLARATIONS, HELD, PROGRAM, HoldingServer  # noqa: E402


@dataclass
class FrontEnd:
    browser: Any
    url: str
    root: Path
    server: HoldingServer
    view: type[Lab]


def serve(app: str, chromium: Any, tmp: pytest.TempPathFactory) -> Iterator[FrontEnd]:
    server = HoldingServer()
    root, home = tmp.mktemp(f"{app}-root"), tmp.mktemp(f"{app}-home")
    options = LAB_OPTIONS if app == "jupyterlab" else ()
    try:
        with jupyter_server(app, root, home, options,
                            environ={"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-loopback"}) as url:
            yield FrontEnd(chromium, url, root, server, Lab if app == "jupyterlab" else Notebook7)
    finally:
        server.close()


@pytest.fixture(scope="module")
def jupyterlab(chromium: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrontEnd]:
    yield from serve("jupyterlab", chromium, tmp_path_factory)


@pytest.fixture(scope="module")
def notebook7(chromium: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrontEnd]:
    yield from serve("notebook", chromium, tmp_path_factory)


@pytest.mark.parametrize("app", ["jupyterlab", "notebook7"])
def test_restart_mid_run_then_resume_finishes_it(app: str, request: pytest.FixtureRequest) -> None:
    front: FrontEnd = request.getfixturevalue(app)
    write_notebook(front.root / "durable.ipynb", [DECLARATIONS, PROGRAM, "%resume last"])
    view = front.view(front.browser, front.url)
    try:
        view.open("durable.ipynb")
        view.run_cell(0)
        view.run_cell(1)
        assert front.server.holding.wait(90), "the run never reached the held call"
        asked_before = len(front.server.calls)
        live = view.page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".flow-run-view")
        live.locator(".fr-card.fr-running").first.wait_for(timeout=30_000)  # the call in flight, running
        assert live.locator(".fr-gone").count() == 0
        view.restart_kernel()
        # The front end drops what the dying kernel still sends; the view itself sees its
        # kernel go and says the run was interrupted, and how to go on with it.
        gone = live.locator(".fr-gone")
        gone.wait_for(timeout=30_000)
        assert "%resume r" in gone.inner_text() and "%resume last" in gone.inner_text(), gone.inner_text()
        view.screenshot(f"{app}-restart-interrupted.png", index=1)
        front.server.released.set()  # the call in flight answers a kernel that has gone
        wait_idle(front.url)
        view.run_cell(2)
        view.wait_for_text(f"ans:call {CALLS - 1}", index=2, timeout=90_000)
        view.screenshot(f"{app}-restart-resumed.png")
    except Exception:
        view.screenshot(f"{app}-restart-failed.png")
        raise
    finally:
        view.page.close()
    assert front.server.calls[:asked_before] == list(range(HELD + 1))
    # After the restart: the call that was in flight, then the ones never asked; none again.
    assert front.server.calls[asked_before:] == list(range(HELD, CALLS)), front.server.calls


def test_notebook7_card_waits_then_fills(notebook7: FrontEnd) -> None:
    from tests.browser.streaming import card_waits_then_fills

    card_waits_then_fills(notebook7.view(notebook7.browser, notebook7.url), notebook7.root, "streaming.ipynb",
                          shots="notebook7-run-view")

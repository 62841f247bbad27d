"""The kernel's status as JupyterLab's status bar shows it while a Flow cell waits for its
Approve button: "Flow | Busy" throughout, "Flow | Idle" once the cell has finished. The
reopened twin runs the same kernel as ipykernel 7 runs one by default — its own status
publishing, and its shell-channel thread, which handles the widgets' comm messages beside
the waiting cell (a kernel spec of its own, `flow-ungated`): the status bar says "Flow |
Idle" under the waiting cell."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import Lab, jupyter_lab, missing, write_notebook
from tests.kernel.test_kernel_status import UNGATED

# ipykernel's status publishing and its application's shell-channel thread (kernel/app.py
# drops the thread; kernel/status.py gates the statuses).
IPYKERNEL_DEFAULTS = ("from ipykernel.kernelapp import IPKernelApp; from flow_kernel.kernel.app import FlowKernelApp; "
                      "FlowKernelApp.init_control = IPKernelApp.init_control; " + UNGATED)

pytestmark = pytest.mark.browser

REASON = missing()
if REASON:
    pytest.skip(REASON, allow_module_level=True)

CELL = 'let ok = approve "Ship version 2.4 tonight?"\nok ? "shipped" : "held"'
WATCH_SECONDS = 5.0  # how long the status bar is read while the approval waits


@pytest.fixture(scope="module")
def lab(chromium: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str, Path]]:
    """A JupyterLab whose Jupyter data folder also holds the `flow-ungated` kernel spec."""
    root = tmp_path_factory.mktemp("status-root")
    home = tmp_path_factory.mktemp("status-home")
    spec = home / "data" / "kernels" / "flow-ungated"
    spec.mkdir(parents=True)
    spec.joinpath("kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-c", IPYKERNEL_DEFAULTS, "-f", "{connection_file}"],
        "display_name": "Flow", "language": "flow", "interrupt_mode": "message"}))
    with jupyter_lab(root, home) as url:
        yield chromium, url, root


def statuses_while_the_approval_waits(lab: tuple[Any, str, Path], kernel: str, until_idle: bool) -> tuple[Lab, list[str]]:
    """Open a notebook of `kernel`, run the approval cell, and read the status bar's kernel
    status while its Approve button shows: for WATCH_SECONDS, or (`until_idle`) until it
    says Idle, at most 60 s."""
    browser, url, root = lab
    name = f"status-{kernel}.ipynb"
    write_notebook(root / name, [CELL])
    notebook = json.loads((root / name).read_text())
    notebook["metadata"]["kernelspec"]["name"] = kernel
    (root / name).write_text(json.dumps(notebook))
    view = Lab(browser, url)
    view.open(name)
    view.run_cell(0)
    view.page.locator("button.jupyter-button", has_text="Approve").first.wait_for(state="visible", timeout=60_000)
    seen: list[str] = []
    end = time.time() + (60 if until_idle else WATCH_SECONDS)
    while time.time() < end and not (until_idle and seen and seen[-1] == "Flow | Idle"):
        seen.append(kernel_status(view))
        time.sleep(0.2)
    assert view.page.locator("button.jupyter-button", has_text="Approve").first.is_visible()  # still waiting
    return view, seen


def kernel_status(view: Lab) -> str:
    text = str(view.page.locator("#jp-main-statusbar").inner_text())
    return next(line.strip() for line in text.splitlines() if line.strip().startswith("Flow |"))


def test_the_status_bar_says_busy_while_an_approval_waits_then_idle(lab: tuple[Any, str, Path]) -> None:
    view, seen = statuses_while_the_approval_waits(lab, "flow", until_idle=False)
    assert seen and set(seen) == {"Flow | Busy"}, seen
    view.click_button("Approve")
    view.wait_for_text("shipped", index=0)
    deadline = time.time() + 60
    while (status := kernel_status(view)) != "Flow | Idle" and time.time() < deadline:
        time.sleep(0.2)
    assert status == "Flow | Idle"


def test_reopened_twin_the_status_bar_says_idle_under_the_waiting_cell(lab: tuple[Any, str, Path]) -> None:
    view, seen = statuses_while_the_approval_waits(lab, "flow-ungated", until_idle=True)
    assert "Flow | Idle" in seen, seen
    view.click_button("Approve")

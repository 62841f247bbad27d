"""A real JupyterLab on a loopback port and headless Debian Chromium driven by Playwright
(no browser download), for the browser tests (`pytest -m browser`)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
BUILT_LABEXTENSION = Path(__file__).resolve().parents[2] / "flow_kernel" / "labextension"  # the tree's flow-kernel-lab
ARTIFACTS = Path(os.environ.get("FLOW_TEST_ARTIFACTS", Path(__file__).parent / "artifacts"))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


def missing(*modules: str) -> str | None:
    """Why the browser tests cannot run here, or None; `modules`: what a test needs besides
    JupyterLab and Playwright (`notebook` for Notebook 7)."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (apt-get install chromium; .ci/run does it)"
    for module in ("jupyterlab", "playwright", *modules):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (pip install -r requirements-dev.txt)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


LAB_OPTIONS = ("--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate")


def jupyter_lab(root: Path, home: Path) -> AbstractContextManager[str]:
    """Start `jupyter lab` serving `root`; yields its URL."""
    return jupyter_server("jupyterlab", root, home, LAB_OPTIONS)


@contextmanager
def jupyter_server(app: str, root: Path, home: Path, options: tuple[str, ...] = (),
                   environ: dict[str, str] | None = None) -> Iterator[str]:
    """Start a Jupyter front end's server (`python -m APP`: jupyterlab, or notebook for
    Notebook 7) serving `root`; yields its URL. A private HOME and Jupyter
    config/runtime/data dirs keep the user's settings out; the venv's kernel specs (the
    Flow kernel among them) and labextensions are still found through sys.prefix.
    `environ`: variables the server, and so its kernels, get besides this process's.
    flow-kernel-lab is the tree's build (linked into the private data dir, which JupyterLab
    is told to read before the environment's copy, left from the last install)."""
    port = _free_port()
    extensions = home / "data" / "labextensions"
    extensions.mkdir(parents=True, exist_ok=True)
    if not (extensions / "flow-kernel-lab").exists():
        (extensions / "flow-kernel-lab").symlink_to(BUILT_LABEXTENSION, target_is_directory=True)
    env = {**os.environ, **(environ or {}), "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTER_DATA_DIR": str(home / "data"),
           "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"), "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
           "JUPYTER_PREFER_ENV_PATH": "0"}  # the private data dir first (in a venv, jupyter_core puts it after)
    log_path = home / f"{app}.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", app, "--allow-root", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
         "--IdentityProvider.token=", "--ServerApp.password=", f"--ServerApp.root_dir={root}",
         "--FileContentsManager.delete_to_trash=False", *options],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"{app} did not start: " + log_path.read_text()[-2000:])
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


class Lab:
    """One Chromium page on one notebook."""

    def __init__(self, browser: Any, url: str) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.url = url

    def open(self, notebook: str) -> None:
        page = self.page
        page.goto(f"{self.url}/lab/tree/{notebook}?reset", timeout=60_000)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        # The kernel is up when the status bar says "<kernel> | Idle" (before it connects, the
        # toolbar's indicator also says idle, for "No Kernel").
        deadline = time.time() + 90
        while "| Idle" not in (status := page.locator("#jp-main-statusbar").inner_text()) or "No Kernel" in status:
            if time.time() > deadline:
                raise AssertionError(f"the kernel never became idle: {status!r}")
            time.sleep(0.25)

    def run_until_prompt(self, path: Path, cells: list[str], button: str = "Approve") -> Any:
        """Write the notebook `path` of `cells`, open it, run its first cell and wait until
        that cell shows the prompt's `button`; returns the button's locator."""
        write_notebook(path, cells)
        self.open(path.name)
        self.run_cell(0)
        shown = self.page.locator(".jp-Notebook .jp-Cell").first.locator("button.jupyter-button", has_text=button)
        shown.wait_for(state="visible", timeout=60_000)
        return shown

    def saved_display(self, path: Path, index: int = 0, timeout: float = 30) -> dict[str, Any]:
        """Save the notebook (Ctrl+S, again while the file does not hold a live display in
        cell `index` yet) and return the data of that cell's one live display as saved."""
        from flow_kernel.views.prompts import LIVE_MIME

        deadline = time.time() + timeout
        while True:
            self.page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-InputPrompt").click()
            self.page.keyboard.press("Control+s")
            outputs: list[dict[str, Any]] = []
            for _ in range(20):
                try:  # the server may be writing the file right now (truncated, then written)
                    outputs = json.loads(path.read_text())["cells"][index]["outputs"]
                except ValueError:
                    time.sleep(0.25)
                    continue
                live = [o["data"] for o in outputs if LIVE_MIME in o.get("data", {})]
                if live:
                    assert len(live) == 1, outputs
                    return dict(live[0])
                time.sleep(0.25)
            if time.time() > deadline:
                raise AssertionError(f"the notebook was never saved with its live display: {outputs}")

    @contextmanager
    def closing(self, failed: str) -> Iterator[Lab]:
        """Close the page after the block; a screenshot of it, named `failed`, if the block fails."""
        try:
            yield self
        except BaseException:
            self.screenshot(failed)
            raise
        finally:
            self.page.close()

    def run_cell(self, index: int, timeout: float = 90) -> None:
        """Click into cell `index` and Shift+Enter, until the cell's prompt shows it is
        queued or running (a kernel still connecting ignores the first keystroke); returns
        without waiting for the cell to finish — it may be waiting for a click."""
        cell = self.page.locator(".jp-Notebook .jp-Cell").nth(index)
        prompt = cell.locator(".jp-InputPrompt")
        deadline = time.time() + timeout
        while time.time() < deadline:
            cell.locator(".jp-InputArea-editor").click()
            self.page.keyboard.press("Shift+Enter")
            for _ in range(40):  # a run that started shows [*]: or its count; only then stop
                if prompt.inner_text().strip() not in ("[ ]:", ""):
                    return
                time.sleep(0.25)
        raise AssertionError(f"cell {index} never started running")

    def click_button(self, name: str, timeout: float = 60_000, gone: bool = True) -> None:
        """Click the button `name` once it is shown. A widget's first render may not have
        its click handler yet (seen here: a click lost right after the button appeared), so
        with `gone` it clicks again until the button goes away (a prompt closes when
        answered; a second click on an answered prompt changes nothing)."""
        # A widget button by its text (a role query would also match, say, "approve.ipynb"
        # in the file browser).
        button = self.page.locator("button.jupyter-button", has_text=name).first
        button.wait_for(state="visible", timeout=timeout)
        for _ in range(10):
            button.click()
            if not gone:
                return
            try:
                button.wait_for(state="detached", timeout=3_000)
                return
            except Exception:
                continue
        raise AssertionError(f"clicking {name!r} did nothing")

    def restart_kernel(self) -> None:
        """Kernel ▸ Restart Kernel…, then Restart in the dialog (the same menu in JupyterLab
        and Notebook 7)."""
        page = self.page
        page.locator(".lm-MenuBar-item", has_text="Kernel").first.click()
        page.locator('.lm-Menu-item[data-command="kernelmenu:restart"]').first.click()
        page.locator(".jp-Dialog .jp-mod-accept").first.click()

    def wait_for_text(self, text: str, index: int | None = None, timeout: float = 60_000) -> None:
        """Wait for `text` in the outputs (of cell `index`), never in the code."""
        cells = self.page.locator(".jp-Notebook .jp-Cell")
        scope = (cells.nth(index) if index is not None else self.page).locator(".jp-OutputArea")
        scope.get_by_text(text, exact=False).first.wait_for(timeout=timeout)

    def output_text(self, index: int) -> str:
        return str(self.page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea").inner_text())

    def screenshot(self, name: str, index: int | None = None) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / name
        if index is not None:
            self.page.locator(".jp-Notebook .jp-Cell").nth(index).screenshot(path=str(path))
        else:
            self.page.screenshot(path=str(path), full_page=True)
        return path


class Notebook7(Lab):
    """A Chromium page on one notebook in Notebook 7's UI. Its notebook is JupyterLab's
    notebook widget (the same .jp-Cell / .jp-OutputArea), so Lab's run_cell, click_button
    and wait_for_text serve; only opening differs (no status bar to read the kernel from)."""

    def open(self, notebook: str) -> None:
        page = self.page
        page.goto(f"{self.url}/notebooks/{notebook}", timeout=60_000)
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
        wait_idle(self.url)


def reopened_output(browser: Any, url: str, notebook: str, screenshot: str) -> tuple[str, int]:
    """Open `notebook` again in a page of its own (on the kernel its session has now) and,
    once its first cell shows a live display's text where no kernel has the widget (or the
    widget manager's own "Loading widget..." then "Error displaying widget: model not
    found"), return that cell's output text and how many buttons it shows."""
    page = Lab(browser, url)
    try:
        page.open(notebook)
        area = page.page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-OutputArea")
        area.locator(".flow-run-unlinked").or_(area.get_by_text("model not found")).first.wait_for(timeout=60_000)
        shown = page.output_text(0)
        buttons = area.locator("button:visible").count()
        page.screenshot(screenshot, index=0)
    finally:
        page.page.close()
    return shown, buttons


def wait_idle(url: str, timeout: float = 90) -> None:
    """Until every kernel of the server at `url` is idle (Notebook 7's toolbar shows the
    kernel's state only as an icon: ask the server). While a kernel is starting,
    jupyter_server has it registered before it sets its execution_state/last_activity, and
    listing it then answers 500 (an AttributeError in kernel_model): a passing state of the
    server, so ask again."""
    import urllib.error

    deadline = time.time() + timeout
    kernels: Any = None
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/kernels", timeout=5) as r:
                kernels = json.load(r)
        except urllib.error.HTTPError as e:
            if e.code < 500:
                raise
            kernels = f"HTTP {e.code}"
        else:
            if kernels and all(k["execution_state"] == "idle" for k in kernels):
                return
        if time.time() > deadline:
            raise AssertionError(f"the kernel never became idle: {kernels!r}")
        time.sleep(0.25)


def write_notebook(path: Path, cells: list[str], kernel: str = "flow") -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": "Flow" if kernel == "flow" else "Python 3",
                                 "language": "flow" if kernel == "flow" else "python"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)


def sign(path: Path, home: Path) -> None:
    """Trust the notebook file `path` as the server whose HOME is `home` does for one it
    saved (its signature in that server's data dir): its outputs render as a trusted
    notebook's."""
    import nbformat
    from nbformat.sign import NotebookNotary

    nb = nbformat.read(path, as_version=4)
    NotebookNotary(data_dir=str(home / "data")).sign(nb)


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


del shutil

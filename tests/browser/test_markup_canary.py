"""No markup from data, in the real page (issue 15, item 2; docs/security.md).

The attack: a string a program publishes — written into the program, or an agent's reply
the program puts into a report — carries `<img src=x onerror=…>` whose script writes a
file through the Jupyter server's REST API (`PUT /api/contents/…` with the page's
`_xsrf` cookie: the same call that could start a Python kernel and run anything). The
Flow cell runs in JupyterLab + Chromium; after its artifact is shown, the canary file
must not exist.

The detector is shown to work in the same test: the same payload displayed as raw
`text/markdown` — what the Flow kernel used to send — from a Python notebook writes its
canary (JupyterLab runs what a live kernel's Markdown contains).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import Lab, missing, write_notebook

pytestmark = pytest.mark.browser

REASON = missing()
if REASON:
    pytest.skip(REASON, allow_module_level=True)


def canary_script(canary: str) -> str:
    """JavaScript that writes the file `canary` through the REST API (no double quotes)."""
    return (f"fetch('/api/contents/{canary}',{{method:'PUT',headers:{{'Content-Type':'application/json',"
            "'X-XSRFToken':(document.cookie.match(/_xsrf=([^;]+)/)||[])[1]},"
            "body:JSON.stringify({type:'file',format:'text',content:'pwned'})})")


def payload(canary: str) -> str:
    """Markdown whose image error handler writes `canary` through the REST API."""
    return f'Quarterly numbers are up.\n\n<img src="x-missing.png" onerror="{canary_script(canary)}">\n'


def flow_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("\n", "\\n")
    return f'"{escaped}"'


def _appears(path: Path, seconds: float, content: str | None = None) -> float | None:
    """Seconds until `path` exists (holding `content`, when given: the server creates the
    file before it writes it), or None if it did not within `seconds`."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if path.exists() and (content is None or path.read_text() == content):
            return time.monotonic() - start
        time.sleep(0.1)
    return None


def test_a_published_payload_writes_no_canary(lab: tuple[Any, str, Path]) -> None:
    browser, url, root = lab

    # The detector: raw text/markdown from a live kernel runs the payload's script.
    write_notebook(root / "raw.ipynb", [
        "from IPython.display import display\n"
        f"display({{'text/markdown': {payload('canary-raw.txt')!r}}}, raw=True)"], kernel="python3")
    raw = Lab(browser, url)
    raw.open("raw.ipynb")
    raw.run_cell(0)
    raw.wait_for_text("Quarterly numbers", index=0)
    fired = _appears(root / "canary-raw.txt", 30, content="pwned")
    assert fired is not None, "the raw Markdown's script did not run: the canary cannot see the attack"
    print(f"raw text/markdown: canary written {fired:.2f} s after the output showed")
    raw.page.close()

    # The Flow kernel: the same payload published directly and inside an agent's reply.
    cell = (f"agent writer {{ model: \"scripted\", script: [{flow_string(payload('canary-agent.txt'))}] }}\n"
            f"publish \"direct.md\" {flow_string(payload('canary-publish.txt'))}\n"
            "let reply = writer(\"Write the quarterly report\")\n"
            "publish \"report.md\" \"# Report\\n\\n${reply}\"\n"
            "\"done\"")
    write_notebook(root / "flow.ipynb", [cell])
    view = Lab(browser, url)
    view.open("flow.ipynb")
    view.run_cell(0)
    try:
        view.wait_for_text("done", index=0)
        view.wait_for_text("Report", index=0)
    except Exception:
        view.screenshot("markup-canary-failed.png")
        raise
    output = view.page.locator(".jp-Notebook .jp-Cell").nth(0).locator(".jp-OutputArea")
    assert output.locator("img").count() == 0
    assert "onerror" in output.inner_text()  # the payload shows as text
    # Give the page several times what the raw payload needed to fire.
    waited = max(5.0, 5 * fired)
    assert _appears(root / "canary-publish.txt", waited) is None
    assert not (root / "canary-agent.txt").exists()
    view.screenshot("markup-canary.png", index=0)

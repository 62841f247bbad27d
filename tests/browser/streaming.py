"""A call's live state as a person sees it, in whichever Jupyter front end `view` drives: a
loopback OpenAI-compatible server first answers 429 with Retry-After, then streams the reply
slowly (Server-Sent Events, one piece every 0.3 s). The card shows the call waiting on the
Retry-After with its end, then its text growing before the call ends — model text with markup
in it drawn as text — and the cell keeps the static summary at the end. A Python notebook with
`%%flow` points the `openai` provider at the server (a Flow kernel takes its environment from
the Jupyter server)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.browser.lab import Lab, write_notebook
from tests.runtime.sse_servers import Reply, SSEServer, openai_text

PIECES = [f"Line {n} of the poem.\n" for n in range(1, 13)]
PIECES.insert(3, '<img src=x onerror="window.__flowPwned = 1"><b>bold?</b>\n')
PROGRAM = '%%flow\nagent poet { model: "openai/m" }\npoet("Write a poem")\n'
CARD = ".flow-run-view .fr-card"


def card_waits_then_fills(view: Lab, root: Path, notebook: str, shots: str = "run-view") -> None:
    """Open `notebook` (written under `root`) in `view`, run the poem, and check what the
    card shows while the call waits and while it streams; screenshots `{shots}-waiting.png`
    and `{shots}-streaming.png`."""
    server = SSEServer()
    try:
        server.replies += [Reply(status=429, error="slow down", headers={"Retry-After": "3"}),
                           openai_text(PIECES, delay=0.3)]
        setup = (f"import os\nos.environ['OPENAI_BASE_URL'] = 'http://127.0.0.1:{server.port}/v1'\n"
                 "os.environ['OPENAI_API_KEY'] = 'sk-loopback'\n%load_ext flow_kernel")
        write_notebook(root / notebook, [setup, PROGRAM], kernel="python3")
        view.open(notebook)
        page = view.page
        view.run_cell(0)
        view.run_cell(1)
        cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
        waiting = cell.locator(f"{CARD} .fr-waiting")
        waiting.wait_for(timeout=60_000)
        said = waiting.inner_text()
        assert "waiting for openai: Retry-After" in said and "into the run" in said, said
        assert "1 call waiting" in cell.locator(".flow-run-view .fr-header").inner_text()
        view.screenshot(f"{shots}-waiting.png", index=1)
        seen, markup_as_text, newest_in_sight = _watch_it_grow(view, cell, shots)
        print(f"streamed text lengths seen while the call ran: {seen}")
        assert len(seen) >= 3 and seen == sorted(seen), seen
        assert markup_as_text
        assert newest_in_sight
        assert page.evaluate("() => window.__flowPwned") is None
        view.wait_for_text("Line 12 of the poem.", index=1, timeout=60_000)  # the summary's result
        view.page.close()
    finally:
        server.close()
    assert len(server.requests) == 2


def _watch_it_grow(view: Lab, cell: Any, shots: str) -> tuple[list[int], bool, bool]:
    """The lengths of the card's text seen while the call ran (each longer than the last),
    whether the model's markup showed as text, and whether a card with more lines than it
    shows scrolled to its newest."""
    seen: list[int] = []
    markup_as_text = newest_in_sight = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        running = cell.locator(f"{CARD}.fr-running .fr-stream")
        text = running.first.inner_text() if running.count() else ""
        if not cell.locator(f"{CARD}.fr-running").count() and seen:
            break
        if text and (not seen or len(text) > seen[-1]):
            seen.append(len(text))
            if text.count("\n") >= 10 and not newest_in_sight:
                newest_in_sight = running.first.evaluate(
                    "e => e.scrollHeight > e.clientHeight && e.scrollTop + e.clientHeight >= e.scrollHeight - 2")
                view.screenshot(f"{shots}-streaming.png", index=1)
        if '<img src=x onerror="window.__flowPwned = 1">' in text:  # the model's markup, drawn as text
            markup_as_text = True
            assert cell.locator(".flow-run-view img").count() == 0
        time.sleep(0.1)
    return seen, markup_as_text, newest_in_sight

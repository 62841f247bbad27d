"""Deadlines on the person over the real kernel protocol (issue 17, item 4): with a person
present (the frontend allows input, as JupyterLab does), the run view shows the prompt;
nobody clicks, and when the deadline passes the run goes on with the default, decided
`by timeout` in the run's summary. Headless, the same cell fails closed at once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kernel.kernel_helpers import collect, execute, start


@pytest.fixture()
def kernel(tmp_path: Any) -> Iterator[Any]:
    km, kc = start(tmp_path)
    yield kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def test_an_unanswered_prompt_is_answered_by_its_default_at_the_deadline(kernel: Any) -> None:
    code = '%operator interactive\nlet ship = approve "Ship tonight?" timeout 400ms else false\nship ? "shipped" : "kept"'
    started = time.perf_counter()
    msg_id = kernel.execute(code, allow_stdin=True)  # a person is there, and does not click
    reply = collect(kernel, msg_id, started)
    assert reply.status == "ok", reply.outputs
    assert reply.result == "kept"
    live = [c for c in reply.of("display_data") if "application/vnd.jupyter.widget-view+json" in c["data"]]
    assert live, reply.outputs  # the run view was there to show the prompt to the person
    summaries = [c["data"]["text/plain"] for c in reply.of("update_display_data")
                 if c["data"].get("text/plain", "").startswith("Flow run:")]
    assert summaries and "→ no (timeout)" in summaries[-1], summaries

    headless = execute(kernel, '%operator interactive\napprove "Anyone there?" timeout 30s else true')
    assert headless.status == "error" and headless.content["ename"] == "operator-unavailable"

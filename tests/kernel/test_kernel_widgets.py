"""The live run view over the real protocol: a prompt answered by a button click while the
cell runs (the click sent as the frontend sends it, a comm message), `ask` choices,
`%background` with `%approve` and `%wait`, and headless runs failing closed at once."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from flow_kernel.views.run_view import LIVE_MIME, unlinked_text
from tests.kernel.kernel_helpers import TIMEOUT, collect, execute, start


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    km, kc = start(tmp_path_factory.mktemp("widgets"))
    yield kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def click_when_shown(kc: Any, msg_id: str, description: str, seen: list[dict[str, Any]]) -> None:
    """Wait for the button `description` of the cell's view to be opened, then click it."""
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        seen.append(msg)
        if msg["msg_type"] != "comm_open":
            continue
        state = msg["content"]["data"].get("state", {})
        if state.get("_model_name") == "ButtonModel" and state.get("description") == description:
            click = kc.session.msg("comm_msg", {"comm_id": msg["content"]["comm_id"],
                                                "data": {"method": "custom", "content": {"event": "click"}}})
            kc.shell_channel.send(click)
            return
    raise AssertionError(f"no {description!r} button")


def run_and_click(kc: Any, code: str, button: str) -> Any:
    msg_id = kc.execute(code, allow_stdin=True)  # what JupyterLab sends: a person is there
    started = time.perf_counter()
    seen: list[dict[str, Any]] = []
    click_when_shown(kc, msg_id, button, seen)
    reply = collect(kc, msg_id, started)
    reply.outputs = [m for m in seen if m["parent_header"].get("msg_id") == msg_id and
                     m["msg_type"] not in ("status", "execute_input")] + reply.outputs
    return reply


def summary(reply: Any) -> str:
    """The summary, which replaces the live view in place (update_display_data, same id)."""
    live = [c for c in reply.of("display_data") if "application/vnd.jupyter.widget-view+json" in c["data"]]
    assert live, reply.outputs
    assert_unlinked_fallback(live[0]["data"])
    mark = live[0]["data"][LIVE_MIME]  # what a page reloaded mid-run shows the run's outputs by
    assert mark["display"] == live[0]["transient"]["display_id"], mark
    assert mark["parent"] == reply.reply["parent_header"]["msg_id"], mark  # the cell's request
    display_id = live[0]["transient"]["display_id"]
    updates = [c["data"] for c in reply.of("update_display_data") if c["transient"]["display_id"] == display_id]
    texts = [data["text/plain"] for data in updates if data["text/plain"].startswith("Flow run:")]
    assert texts, reply.outputs
    assert not [data for data in updates if LIVE_MIME in data]  # the summary leaves no live marker
    assert not [c for c in reply.of("display_data") if c["data"].get("text/plain", "").startswith("Flow run:")]
    return str(texts[-1])


def assert_unlinked_fallback(data: dict[str, Any]) -> None:
    """The live view's display as the kernel sends it: the widget, and, for where its model is
    gone (a notebook saved mid-run, opened again), the run's id under `LIVE_MIME` and the
    text that says what became of the run, as text and as escaped HTML."""
    run = data[LIVE_MIME]["run"]
    assert re.fullmatch(r"r[0-9a-f]+", run), data
    assert data["text/plain"] == unlinked_text(run) and f"%resume {run}" in data["text/plain"]
    assert data["text/html"].startswith('<div class="flow-run-unlinked"') and f"%resume {run}" in data["text/html"]


def test_approve_clicked_while_the_cell_runs(kernel: Any) -> None:
    reply = run_and_click(kernel, 'let ok = approve "Ship it?"\nok', "Approve")
    assert reply.status == "ok" and reply.result == "true"
    assert 'approve "Ship it?" → yes (interactive)' in summary(reply)
    assert "true" not in summary(reply).splitlines()[-1]  # the result shows once: as Out


def test_headless_cells_get_the_summary_and_no_live_view(kernel: Any) -> None:
    reply = execute(kernel, 'log "hello"\n40 + 2')  # allow_stdin False: nbclient, nbval
    assert reply.status == "ok" and reply.result == "42"
    assert not [c for c in reply.of("display_data") if "application/vnd.jupyter.widget-view+json" in c["data"]]
    texts = [c["data"]["text/plain"] for c in reply.of("display_data")]
    assert len(texts) == 1 and texts[0].startswith("Flow run: completed") and "log: hello" in texts[0]


def test_deny_clicked(kernel: Any) -> None:
    reply = run_and_click(kernel, 'let ok = approve "Delete everything?"\nok ? "deleted" : "kept"', "Deny")
    assert reply.result == "kept"
    assert 'approve "Delete everything?" → no (interactive)' in summary(reply)


def test_ask_with_choices(kernel: Any) -> None:
    reply = run_and_click(kernel, 'let which = ask "Which draft?" choice ["A", "B"]\nwhich', "B")
    assert reply.result == "B"
    assert 'ask "Which draft?" → B (interactive)' in summary(reply)


def test_headless_runs_fail_closed_at_once(kernel: Any) -> None:
    reply = execute(kernel, 'approve "Anyone?"')  # allow_stdin False: nbclient, nbval
    assert reply.status == "error" and reply.content["ename"] == "operator-unavailable"
    assert reply.seconds < 20


def test_operator_interactive_set_by_magic_still_asks_the_view(kernel: Any) -> None:
    """`%operator interactive` after another policy: the view's buttons answer (not a
    prompt on the kernel's own stdin), and headless it still fails closed."""
    assert execute(kernel, "%operator auto-deny").status == "ok"
    reply = run_and_click(kernel, '%operator interactive\nlet ok = approve "Back to the buttons?"\nok', "Approve")
    assert reply.result == "true" and "→ yes (interactive)" in summary(reply)
    headless = execute(kernel, '%operator interactive\napprove "Anyone there?"')
    assert headless.status == "error" and headless.content["ename"] == "operator-unavailable"


def test_background_run_answered_from_a_later_cell(kernel: Any) -> None:
    started = execute(kernel, '%background\nagent a { model: "scripted", script: ["done"] }\n'
                              'let go = approve "Deploy?"\ngo ? a("deploy") : "skipped"')
    assert started.status == "ok"
    text = started.of("display_data")[-1]["data"]["text/plain"]
    run = text.split()[1]
    assert text.startswith(f"run {run} goes on in the background")
    assert execute(kernel, "1 + 1").result == "2"  # the kernel is free meanwhile
    bad = execute(kernel, f"%approve {run} maybe")
    assert bad.status == "error" and "usage: %approve [RUN] yes|no" in bad.content["evalue"]
    approved = execute(kernel, "%approve yes")  # the only run waiting: no need to name it
    assert approved.status == "ok", approved.outputs
    assert approved.of("display_data")[-1]["data"]["text/plain"] == f"run {run}: approved"
    assert approved.status == "ok", approved.outputs
    waited = execute(kernel, f"%wait {run}")
    assert waited.of("display_data")[-1]["data"]["text/plain"] == f"run {run}: completed"
    late = execute(kernel, f"%approve {run} yes")
    assert late.status == "error" and "has ended" in late.content["evalue"]
    none = execute(kernel, "%approve no")
    assert none.status == "error" and "no run is waiting for an approval" in none.content["evalue"]
    unknown = execute(kernel, "%wait rnope")
    assert unknown.status == "error" and "no background run" in unknown.content["evalue"]


def test_an_interrupted_run_keeps_a_summary_that_says_so(kernel: Any) -> None:
    """Interrupt mid-parallelMap with a person watching: the live view gives way to a summary
    of what happened, the run interrupted and its running calls cancelled, not running."""
    code = ('limits { agent_runs: 100, concurrency: 2 }\n'
            'agent slowpoke { model: "scripted", script: [slow(20000ms, "late")] }\n'
            'print "asking"\nparallelMap(["a", "b", "c"], t => slowpoke("hurry ${t}"))')
    msg_id = kernel.execute(code, allow_stdin=True)
    started = time.perf_counter()
    seen: list[dict[str, Any]] = []
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:  # until the print: the calls are running
        msg = kernel.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") == msg_id:
            seen.append(msg)
            if msg["msg_type"] == "stream" and "asking" in msg["content"]["text"]:
                break
    time.sleep(1.0)
    interrupt = kernel.session.msg("interrupt_request", {})
    kernel.control_channel.send(interrupt)
    reply = collect(kernel, msg_id, started)
    reply.outputs = [m for m in seen if m["msg_type"] not in ("status", "execute_input")] + reply.outputs
    assert reply.status == "error" and reply.content["ename"] == "cancelled"
    text = summary(reply)
    assert text.startswith("Flow run: interrupted"), text
    assert "⊘ agent slowpoke" in text and "● " not in text and "…" not in text.split("\n", 1)[1].split("agent runs")[0]

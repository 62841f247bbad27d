"""A kernel shutdown or restart over the real Jupyter protocol leaves a durable run
resumable (docs/durability.md): the run going on is journaled `interrupted`, not
`failed: cancelled`; `%runs` says so; the next kernel goes on with it (`%resume RUN`,
`%resume last`) without asking the provider again for the calls the journal holds — also
when the run's declarations came from an earlier cell that the new kernel never ran."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking import BlockingKernelClient
from jupyter_client.manager import KernelManager

from flow_kernel.runtime.durable.journal import read_checkpoint
from tests.kernel.kernel_helpers import TIMEOUT, collect, execute, start
from tests.reliability.test_kill_resume import read_chat, send_completion

CALLS = 4
HELD = 2  # the call the server holds until the kernel has restarted
DECLARATIONS = '''type Verdict = { call: string, answer: string }
agent a { model: "openai/gpt-test" }'''
PROGRAM = f'''var answers: Verdict[] = []
for i in range({CALLS}) {{
  answers = answers + [{{ call: "${{i}}", answer: a("call ${{i}}") }}]
}}
answers'''
EXPECTED = [{"call": str(i), "answer": f"ans:call {i}"} for i in range(CALLS)]


class HoldingServer:
    """Chat Completions on 127.0.0.1 answering `ans:<prompt>`; the first request for call
    `HELD` waits until `release()` (the kernel restarts while the run is in that call)."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.released = threading.Event()
        self.holding = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # the name http.server calls
                body, prompt = read_chat(self)
                call = int(prompt.split()[-1])
                first = call not in server.calls
                server.calls.append(call)
                if call == HELD and first:
                    server.holding.set()
                    server.released.wait(TIMEOUT)
                with contextlib.suppress(OSError):  # the client went away with its kernel
                    send_completion(self, body["model"], f"ans:{prompt}")

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.released.set()
        self.http.shutdown()


def shown(reply: Any) -> str:
    return "\n".join(str(c["data"].get("text/plain")) for c in reply.of("display_data"))


def resumed_result(kc: BlockingKernelClient, magic: str) -> Any:
    """The value of a `%resume` cell that must succeed."""
    resumed = execute(kc, magic)
    assert resumed.status == "ok", resumed.error
    (result,) = resumed.of("execute_result")
    return result["data"]["application/json"]


def newest_journal(folder: Path) -> Path:
    return max((folder / ".flow" / "runs").glob("r*.jsonl"), key=lambda p: p.stat().st_mtime)


def restart_mid_run(km: KernelManager, kc: BlockingKernelClient, server: HoldingServer,
                    folder: Path) -> tuple[Path, list[dict[str, Any]], BlockingKernelClient]:
    """Run PROGRAM until the server holds call HELD, restart the kernel the way Jupyter's
    Kernel ▸ Restart does (a `shutdown_request` with restart, then a new process); the
    journal, the old kernel's last iopub messages, and a client of the new kernel."""
    msg_id = kc.execute(PROGRAM)
    assert server.holding.wait(TIMEOUT), "the run never reached the held call"
    km.restart_kernel(now=False)
    server.released.set()
    said: list[dict[str, Any]] = []
    deadline = time.time() + 10
    while time.time() < deadline:  # what the old kernel said to that cell before it went
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except Exception:
            break
        if msg["parent_header"].get("msg_id") == msg_id:
            said.append(msg)
    kc.stop_channels()
    journal = newest_journal(folder)
    new = km.client()
    new.start_channels()
    new.wait_for_ready(timeout=TIMEOUT)
    return journal, said, new


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    server = HoldingServer()
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    yield server
    server.close()


def test_a_restart_leaves_the_run_interrupted_and_the_next_kernel_resumes_it(tmp_path: Path,
                                                                           server: HoldingServer) -> None:
    km, kc = start(tmp_path)
    try:
        declared = execute(kc, DECLARATIONS)
        assert declared.status == "ok", declared.outputs
        journal, said, kc = restart_mid_run(km, kc, server, tmp_path)
        checkpoint = read_checkpoint(journal)
        assert checkpoint.status == "interrupted", checkpoint.ends
        assert checkpoint.ends[-1]["status"] == "interrupted"  # said by the journal, not only its silence
        held = sum(1 for key in checkpoint.effects if key.startswith("agent:"))
        assert held == HELD, checkpoint.effects.keys()
        updates = [json.dumps(m["content"]) for m in said if m["msg_type"] in ("update_display_data", "display_data")]
        assert any("interrupted" in text for text in updates), [m["msg_type"] for m in said]
        listed = execute(kc, "%runs")
        assert re.search(rf"{journal.stem}\s+interrupted", shown(listed)), shown(listed)
        assert execute(kc, DECLARATIONS).status == "ok"  # the declarations as they were
        asked_before = len(server.calls)
        assert resumed_result(kc, f"%resume {journal.stem}") == EXPECTED
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert server.calls[asked_before:] == list(range(HELD, CALLS))  # the journaled calls were not asked again
    assert read_checkpoint(journal).status == "completed"


def test_the_next_kernel_resumes_last_with_the_declarations_the_run_journaled(tmp_path: Path,
                                                                             server: HoldingServer) -> None:
    """The new kernel never ran the declarations cell: `%resume last` finds the run in the
    folder's journals, and the run goes on with the declarations it started with."""
    km, kc = start(tmp_path, live_view=False)
    try:
        assert execute(kc, DECLARATIONS).status == "ok"
        journal, _, kc = restart_mid_run(km, kc, server, tmp_path)
        asked_before = len(server.calls)
        assert resumed_result(kc, "%resume last") == EXPECTED  # a new kernel: the folder's last run
        assert execute(kc, "let v: Verdict = { call: \"x\", answer: \"y\" }\nv.call").status == "ok"  # declared again
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert server.calls[asked_before:] == list(range(HELD, CALLS))
    assert read_checkpoint(journal).status == "completed"


def test_a_sigterm_leaves_the_run_interrupted_and_flow_resume_finishes_it(tmp_path: Path,
                                                                          server: HoldingServer) -> None:
    """The kernel manager's SIGTERM (a shutdown that did not answer in time) ends the process
    before the run can end: the journal has no end, which says `interrupted` as well, and
    `flow resume` in a terminal goes on with the cell run and its earlier cell's declarations."""
    km, kc = start(tmp_path, live_view=False)
    try:
        assert execute(kc, DECLARATIONS).status == "ok"
        kc.execute(PROGRAM)
        assert server.holding.wait(TIMEOUT)
        km.signal_kernel(signal.SIGTERM)
        deadline = time.time() + TIMEOUT
        while km.is_alive() and time.time() < deadline:
            time.sleep(0.05)
        server.released.set()
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    journal = newest_journal(tmp_path)
    assert read_checkpoint(journal).status == "interrupted"
    listed = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "runs"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=TIMEOUT)
    assert re.search(rf"{journal.stem}\s+interrupted", listed.stdout), listed.stdout + listed.stderr
    asked_before = len(server.calls)
    resumed = subprocess.run([sys.executable, "-m", "flow_kernel.cli", "resume", journal.stem, "--format", "json"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout)["result"] == EXPECTED
    assert server.calls[asked_before:] == list(range(HELD, CALLS))


def test_an_interrupt_still_cancels_the_run(tmp_path: Path, server: HoldingServer) -> None:
    """Kernel ▸ Interrupt is the person stopping the run: it ends `failed: cancelled`."""
    km, kc = start(tmp_path, live_view=False)
    try:
        execute(kc, DECLARATIONS)
        msg_id = kc.execute(PROGRAM)
        assert server.holding.wait(TIMEOUT)
        km.interrupt_kernel()
        # The reply and then the cell's idle, as a front end sees them before a person runs
        # the next cell: a request that reached the kernel between a failed cell's reply and
        # its idle is aborted (ipykernel's stop_on_error), which is not what this tests.
        msg = collect(kc, msg_id, time.perf_counter()).reply
        assert msg["content"]["status"] == "error" and msg["content"]["ename"] == "cancelled"
        journal = newest_journal(tmp_path)
        listed = execute(kc, "%runs")
        assert re.search(rf"{journal.stem}\s+failed: cancelled", shown(listed)), shown(listed)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)

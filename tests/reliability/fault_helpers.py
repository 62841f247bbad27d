"""Shared by the fault, durability and soak tests: a kernel started with extra environment,
a loopback server speaking the Chat Completions API whose behaviour the model name picks,
and the checks every run's journal must pass."""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psutil
from jupyter_client.blocking import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel

from flow_kernel.runtime.durable.journal import read_checkpoint, read_journal

TIMEOUT = 120


def start_kernel(cwd: Path, kernel_name: str = "flow", **env: str) -> tuple[KernelManager, BlockingKernelClient]:
    full = {**os.environ, "FLOW_LIVE_VIEW": "off", **env}
    return start_new_kernel(kernel_name=kernel_name, cwd=str(cwd), startup_timeout=TIMEOUT, env=full)


class FakeModel:
    """POST /v1/chat/completions. Model `ok-*` answers `{"answer": "ok"}`-shaped text,
    `hang-*` never answers (until `release()`), `garbage-*` answers 200 with HTML,
    `broken-*` a 200 whose JSON is not a completion, `echo-*` a 401 whose message repeats
    the API key it was sent. Keeps every request's headers."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.headers: list[dict[str, str]] = []
        self.bodies: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the name http.server calls
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                fake.headers.append(dict(self.headers))
                fake.bodies.append(raw.decode(errors="replace"))
                model = str(json.loads(raw).get("model"))
                if model.startswith("hang"):
                    fake.released.wait(300)
                    return
                if model.startswith("garbage"):
                    self._send(200, b"<html><body>502 Bad Gateway \xff\xfe</body></html>", "text/html")
                    return
                if model.startswith("echo"):  # an endpoint that repeats the key in its error
                    key = self.headers.get("Authorization") or self.headers.get("x-api-key") or ""
                    message = f"Incorrect API key provided: {key}"
                    body = {"type": "error", "error": {"type": "authentication_error", "message": message,
                                                       "code": "invalid_api_key"}}
                    self._send(401, json.dumps(body).encode(), "application/json")
                    return
                if model.startswith("broken"):
                    self._send(200, b'{"choices": "none", "id": 7}', "application/json")
                    return
                payload = {"id": "c1", "object": "chat.completion", "created": 0, "model": model,
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": "ok"}}],
                           "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}
                self._send(200, json.dumps(payload).encode(), "application/json")

            def _send(self, status: int, data: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.thread.join()
        self.server.server_close()


def journals(directory: Path) -> set[Path]:
    runs = directory / ".flow" / "runs"
    return set(runs.glob("*.jsonl")) if runs.exists() else set()


def new_journal(directory: Path, before: set[Path]) -> Path:
    (path,) = journals(directory) - before
    return path


def check_journal(path: Path, *, ends_with: str | None, contains: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every line parses, `seq` runs 1..n without a gap (so no event was lost between the
    host numbering it and the journal), it starts with the run and holds `contains` in
    order; `ends_with` is the error code of the closing `workflow.failed` (None: completed)."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines()
             if not line.startswith('{"journal":')]  # the checkpoint records between the events
    events = read_journal(path)
    assert len(events) == len(lines), f"{path.name}: a line does not parse"
    read_checkpoint(path)  # and every checkpoint record verifies (JournalForged otherwise)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), f"{path.name}: events lost"
    types = [e["type"] for e in events]
    assert types[0] == "workflow.started", types
    position = 0
    for wanted in contains:
        assert wanted in types[position:], (wanted, types)
        position = types.index(wanted, position) + 1
    if ends_with is None:
        assert types[-1] == "workflow.completed", types
    else:
        assert types[-1] == "workflow.failed" and events[-1]["data"]["code"] == ends_with, events[-1]
    return events


def sandbox_processes(km: KernelManager) -> list[psutil.Process]:
    kernel = psutil.Process(km.provisioner.pid)  # type: ignore[attr-defined]
    return [p for p in kernel.children(recursive=True) if is_sandbox(p)]


def is_sandbox(process: psutil.Process) -> bool:
    """A sandbox's Node process, known by its runner in its command line: not by its name,
    which Node 24 sets to its main thread's ("MainThread")."""
    try:
        return any(part.endswith("runner.mjs") for part in process.cmdline())
    except psutil.Error:  # it ended meanwhile
        return False


def wait_for_stdout(kc: BlockingKernelClient, msg_id: str, text: str, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream" and text in msg["content"]["text"]:
            return
    raise AssertionError(f"no {text!r} on stdout")


def wait_for_event(directory: Path, before: set[Path], event_type: str, count: int = 1, timeout: float = 60) -> Path:
    """The new journal, once it holds `count` events of `event_type` (the fault goes in
    after a known point of the run, not after a guessed delay)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for path in journals(directory) - before:
            if sum(1 for e in read_journal(path) if e["type"] == event_type) >= count:
                return path
        time.sleep(0.05)
    raise AssertionError(f"no {event_type!r} in a new journal")

"""Starting the real Flow kernel (the installed kernel spec) and talking to it over the
Jupyter protocol with jupyter_client."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path
from typing import Any

from ipykernel.iostream import IOPubThread
from jupyter_client.blocking import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel

TIMEOUT = 90


def start(cwd: Path, kernel_name: str = "flow", live_view: bool = True,
          allow: str | None = None, history: Path | None = None) -> tuple[KernelManager, BlockingKernelClient]:
    """`allow`: the capabilities the person grants this kernel, as `FLOW_ALLOW` words
    (docs/security.md), e.g. "operator:auto-approve run:echo"; `history`: the kernel's
    history file (`FLOW_HISTORY`; else the tests' default, memory)."""
    env = {**os.environ, "FLOW_LIVE_VIEW": "on" if live_view else "off"}
    if allow is not None:
        env["FLOW_ALLOW"] = allow
    if history is not None:
        env["FLOW_HISTORY"] = str(history)
    return start_new_kernel(kernel_name=kernel_name, cwd=str(cwd), startup_timeout=TIMEOUT, env=env)


class Reply:
    def __init__(self, reply: dict[str, Any], outputs: list[dict[str, Any]], seconds: float) -> None:
        self.reply = reply
        self.content = reply["content"]
        self.outputs = outputs  # iopub messages of the request, status and execute_input left out
        self.seconds = seconds

    @property
    def status(self) -> str:
        return str(self.content["status"])

    def of(self, msg_type: str) -> list[dict[str, Any]]:
        return [m["content"] for m in self.outputs if m["msg_type"] == msg_type]

    @property
    def stdout(self) -> str:
        return "".join(c["text"] for c in self.of("stream") if c["name"] == "stdout")

    @property
    def result(self) -> str | None:
        results = self.of("execute_result")
        return results[0]["data"]["text/plain"] if results else None

    @property
    def error(self) -> dict[str, Any] | None:
        errors = self.of("error")
        return errors[0] if errors else None


def execute(kc: BlockingKernelClient, code: str, timeout: float = TIMEOUT, allow_stdin: bool = False) -> Reply:
    started = time.perf_counter()
    msg_id = kc.execute(code, allow_stdin=allow_stdin)
    return collect(kc, msg_id, started, timeout)


def collect(kc: BlockingKernelClient, msg_id: str, started: float, timeout: float = TIMEOUT) -> Reply:
    reply = None
    while reply is None:
        msg = kc.get_shell_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") == msg_id:
            reply = msg
    seconds = time.perf_counter() - started
    outputs = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
        if msg["msg_type"] not in ("status", "execute_input"):
            outputs.append(msg)
    return Reply(reply, outputs, seconds)


def end_gc_task(thread: IOPubThread) -> None:
    """Cancel the thread's event-pipe gc task on its own loop and wait until it has ended.
    ipykernel's `stop()` cancels it only after the loop has stopped, so it is destroyed
    pending and asyncio prints "Task was destroyed but it is pending!" at exit."""

    async def end() -> None:
        for _ in range(1000):  # the thread starts the task as it starts its loop: maybe not yet
            if (task := thread._event_pipe_gc_task) is not None:
                break
            await asyncio.sleep(0.001)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    asyncio.run_coroutine_threadsafe(end(), thread.io_loop.asyncio_loop).result(10)

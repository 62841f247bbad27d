"""The kernel's status over the real protocol: `busy` from an execute request's first
status until its reply, while the cell waits for an approval and other messages are
handled meanwhile (a `kernel_info_request` on the control channel, as jupyter_server's
nudge sends one; a comm message, as a widget sends one); then `idle`. The reopened
twin runs the same kernel with ipykernel's own status publishing: an `idle` shows while
the cell still waits (what JupyterLab's status bar showed as "Flow | Idle")."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from tests.kernel.kernel_helpers import TIMEOUT

# The Flow kernel as kernel.json starts it, with ipykernel's `_publish_status` put back.
UNGATED = ("import sys; from ipykernel.kernelbase import Kernel; "
           "from flow_kernel.kernel.kernel import FlowKernel; "
           "FlowKernel._publish_status = Kernel._publish_status; "
           "from flow_kernel.__main__ import main; sys.exit(main(sys.argv[1:]))")


# The Flow kernel with its closing idles named from the kernel's context, as ipykernel does.
CONTEXT_PARENTS = ("import sys; from flow_kernel.kernel.status import DispatchParents; "
                   "DispatchParents.parent_of = lambda self, status, channel, current: current; "
                   "from flow_kernel.__main__ import main; sys.exit(main(sys.argv[1:]))")


def start(cwd: Path, gated: bool = True, launcher: str | None = None) -> tuple[KernelManager, BlockingKernelClient]:
    specs = cwd / "kernels"
    if launcher is None and not gated:
        launcher = UNGATED
    argv = ([sys.executable, "-m", "flow_kernel"] if launcher is None else [sys.executable, "-c", launcher]) + \
        ["-f", "{connection_file}"]
    (specs / "flow-status").mkdir(parents=True)
    (specs / "flow-status" / "kernel.json").write_text(json.dumps(
        {"argv": argv, "display_name": "Flow", "language": "flow", "interrupt_mode": "message"}))
    km = KernelManager(kernel_name="flow-status",
                       kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(specs)]))
    km.start_kernel(cwd=str(cwd), env={**os.environ, "FLOW_LIVE_VIEW": "on"})
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=TIMEOUT)
    return km, kc


def statuses_of_a_waiting_cell(kc: BlockingKernelClient) -> list[tuple[str, str]]:
    """Run a cell that waits for its Approve button; while it waits, send a control
    `kernel_info_request` (and wait for its reply) and a comm message; then click.
    The IOPub messages from the execute's `busy` to its `idle`, as (msg_type, what):
    a status's state and the request it is about, or the output's type."""
    msg_id = kc.execute('let ok = approve "Ship it?"\nok', allow_stdin=True)
    seen: list[dict[str, Any]] = []
    deadline = time.time() + TIMEOUT
    button = None
    while button is None and time.time() < deadline:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        seen.append(msg)
        state = msg["content"].get("data", {}).get("state", {}) if msg["msg_type"] == "comm_open" else {}
        if state.get("_model_name") == "ButtonModel" and state.get("description") == "Approve":
            button = msg["content"]["comm_id"]
    assert button is not None, "no Approve button"
    info = kc.session.msg("kernel_info_request", {})
    kc.control_channel.send(info)
    reply = kc.control_channel.get_msg(timeout=TIMEOUT)  # handled while the cell waits
    assert reply["msg_type"] == "kernel_info_reply" and reply["parent_header"]["msg_id"] == info["header"]["msg_id"]
    kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": button, "data": {"method": "request_state"}}))
    kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": button, "data": {
        "method": "custom", "content": {"event": "click"}}}))
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        seen.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle" \
                and msg["parent_header"].get("msg_id") == msg_id:
            break
    shell = kc.get_shell_msg(timeout=TIMEOUT)
    while shell["parent_header"].get("msg_id") != msg_id:  # wait_for_ready's kernel_info_reply
        shell = kc.get_shell_msg(timeout=TIMEOUT)
    assert shell["msg_type"] == "execute_reply" and shell["content"]["status"] == "ok", shell
    start = next(i for i, m in enumerate(seen) if m["msg_type"] == "status"
                 and m["parent_header"].get("msg_id") == msg_id)
    return [(m["msg_type"], f"{m['content']['execution_state']} {m['parent_header'].get('msg_type')}"
             if m["msg_type"] == "status" else "") for m in seen[start:]]


def before_the_result(trace: list[tuple[str, str]]) -> list[str]:
    """The states published before the cell's `execute_result` (sent before its reply)."""
    end = trace.index(("execute_result", ""))
    return [what for kind, what in trace[:end] if kind == "status"]


def test_busy_from_the_execute_until_its_reply_while_an_approval_waits(tmp_path: Path) -> None:
    km, kc = start(tmp_path)
    try:
        trace = statuses_of_a_waiting_cell(kc)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    statuses = [what for kind, what in trace if kind == "status"]
    assert before_the_result(trace) == ["busy execute_request", "busy kernel_info_request"], trace
    # After the reply: the control request's idle, held until now, then the execute's.
    assert statuses[-2:] == ["idle kernel_info_request", "idle execute_request"], trace
    assert statuses.count("idle kernel_info_request") == 1


def test_reopened_twin_ipykernels_statuses_say_idle_while_the_cell_waits(tmp_path: Path) -> None:
    km, kc = start(tmp_path, gated=False)
    try:
        trace = statuses_of_a_waiting_cell(kc)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert before_the_result(trace) == ["busy execute_request", "busy kernel_info_request",
                                        "idle kernel_info_request"], trace


def executes_left_busy(kc: BlockingKernelClient, cells: int, cell: str = "{i}", comms: int = 3) -> tuple[int, str]:
    """Queue `cells` trivial cells (`cell` with `{i}` numbered), each followed by `comms`
    comm messages (as widgets send them while Run All goes on), and read IOPub until every
    cell's reply has come: how many execute requests got a `busy` but never an `idle` of
    their own, and the last state."""
    ids = []
    for i in range(cells):
        ids.append(kc.execute(cell.format(i=i)))
        for _ in range(comms):
            kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": "no-such-comm", "data": {}}))
    replies = 0
    while replies < cells:
        reply = kc.get_shell_msg(timeout=TIMEOUT)
        replies += reply["parent_header"].get("msg_id") in ids
    busy, idle, last = set(), set(), ""
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=2)
        except Exception:  # queue.Empty: nothing more within 2 s after the last reply
            break
        if msg["msg_type"] == "status":
            last = msg["content"]["execution_state"]
            of = msg["parent_header"].get("msg_id")
            if of in ids:
                (busy if last == "busy" else idle).add(of)
    return len(busy - idle), last


def test_every_execute_gets_its_own_idle_while_comms_come_between_cells(tmp_path: Path) -> None:
    km, kc = start(tmp_path)
    try:
        left, last = executes_left_busy(kc, 30)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert (left, last) == (0, "idle")


def test_reopened_twin_idles_named_from_the_context_leave_executes_busy(tmp_path: Path) -> None:
    km, kc = start(tmp_path, launcher=CONTEXT_PARENTS)
    try:
        for _ in range(3):  # a race: on a loaded machine one batch of cells may miss it
            left, last = executes_left_busy(kc, 30)
            if left:
                break
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert left > 0 and last == "busy"


# A stock ipykernel, as a Python notebook's "Python 3 (ipykernel)" starts it.
IPYKERNEL = "from ipykernel import kernelapp; kernelapp.launch_new_instance()"
# A cell that yields to the kernel's loop, as a `%%flow` cell (a top-level await) does: a
# comm message is handled while a cell holds the shell only then. Many turns and many
# comms make the race likely: a comm message read in the cell's last turn.
AWAITING_CELL = "import asyncio\nfor _ in range(50):\n    await asyncio.sleep(0)\n{i}"


def executes_left_busy_in_ipykernel(tmp_path: Path, load_flow: bool, batches: int = 1) -> tuple[int, str]:
    """`executes_left_busy` on a stock ipykernel, after `%load_ext flow_kernel` or not;
    up to `batches` batches of 30 cells, until one leaves an execute busy."""
    km, kc = start(tmp_path, launcher=IPYKERNEL)
    try:
        if load_flow:
            reply = kc.execute_interactive("%load_ext flow_kernel", timeout=TIMEOUT)
            assert reply["content"]["status"] == "ok", reply["content"]
        for _ in range(batches):  # a race: on a loaded machine one batch of cells may miss it
            left, last = executes_left_busy(kc, 30, AWAITING_CELL, comms=20)
            if left:
                break
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return left, last


def test_the_extension_gives_a_python_kernels_executes_their_own_idle(tmp_path: Path) -> None:
    """Run All of a Python notebook with `%%flow` cells in JupyterLab: a run view's hello
    after its run ended came between two cells, and the second never got its idle."""
    assert executes_left_busy_in_ipykernel(tmp_path, load_flow=True) == (0, "idle")


def test_reopened_twin_a_stock_ipykernel_leaves_executes_busy(tmp_path: Path) -> None:
    """Without the extension some execute never gets its idle (while the kernel's last
    status says idle: JupyterLab showed "Idle" and a cell with no count)."""
    left, _ = executes_left_busy_in_ipykernel(tmp_path, load_flow=False, batches=3)
    assert left > 0

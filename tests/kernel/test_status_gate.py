"""`StatusGate` on its own: the order of the statuses it lets through when requests
overlap (the protocol and browser tests show what a frontend sees)."""

from __future__ import annotations

import threading
from typing import Any

from flow_kernel.kernel.status import DispatchParents, StatusGate


def request(msg_type: str, msg_id: str) -> dict[str, Any]:
    return {"header": {"msg_type": msg_type, "msg_id": msg_id}}


def test_idles_of_other_requests_wait_for_every_execute_in_flight() -> None:
    gate, sent = StatusGate(), []
    publish = [("busy", request("execute_request", "e1")), ("busy", request("kernel_info_request", "k")),
               ("idle", request("kernel_info_request", "k")), ("busy", request("execute_request", "e2")),
               ("idle", request("execute_request", "e1")), ("busy", request("comm_msg", "c")),
               ("idle", request("comm_msg", "c")), ("idle", request("execute_request", "e2")),
               ("busy", request("complete_request", "q")), ("idle", request("complete_request", "q"))]
    for status, parent in publish:
        gate.publish(status, parent, lambda state, of: sent.append(f"{state} {of['header']['msg_id']}"))
    assert sent == ["busy e1", "busy k", "busy e2", "busy c",  # nothing idle while e1 or e2 runs
                    "idle k", "idle e1", "idle c", "idle e2",  # after the last execute: the held ones, then its own
                    "busy q", "idle q"]
    assert not gate.executing


def test_starting_and_statuses_outside_an_execute_pass_at_once() -> None:
    gate, sent = StatusGate(), []
    for status, parent in [("starting", {}), ("busy", request("kernel_info_request", "k")),
                           ("idle", request("kernel_info_request", "k"))]:
        gate.publish(status, parent, lambda state, of: sent.append(state))
    assert sent == ["starting", "busy", "idle"]


def test_a_closing_idle_names_the_request_its_busy_opened() -> None:
    parents = DispatchParents()
    e1, e2 = request("execute_request", "e1"), request("execute_request", "e2")
    assert parents.parent_of("busy", "shell", e2) is e2
    # A comm handled meanwhile put e1 back in the kernel's context: the idle is still e2's.
    assert parents.parent_of("idle", "shell", e1) is e2
    assert parents.parent_of("idle", "shell", e1) is e1  # no dispatch open: the context's
    control = request("kernel_info_request", "k")
    assert parents.parent_of("busy", "control", control) is control
    assert parents.parent_of("starting", "shell", e1) is e1


def test_dispatches_on_other_threads_keep_their_own_parents() -> None:
    parents = DispatchParents()
    main, sub = request("execute_request", "main"), request("execute_request", "sub")
    parents.parent_of("busy", "shell", main)
    seen: list[dict[str, Any]] = []
    def subshell() -> None:
        parents.parent_of("busy", "shell", sub)
        seen.append(parents.parent_of("idle", "shell", main))
    thread = threading.Thread(target=subshell)
    thread.start()
    thread.join()
    assert seen == [sub]
    assert parents.parent_of("idle", "shell", sub) is main

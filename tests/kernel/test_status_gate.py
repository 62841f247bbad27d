"""`StatusGate` on its own: the order of the statuses it lets through when requests
overlap (the protocol and browser tests show what a frontend sees)."""

from __future__ import annotations

from typing import Any

from flow_kernel.kernel.status import StatusGate


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

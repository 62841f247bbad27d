"""An execute request's `busy` and `execute_input` leave once its cell has started (kernel.py
`_execute`: two loop turns later, when a warm cell's run request is on its way to the
sandbox), before any other message of the kernel, with the same content and in the same
order as ipykernel sends them; every other status leaves at once (kernel/app.py
`FlowSession.send_later`)."""

from __future__ import annotations

import datetime
import logging
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.kernel.app import FlowSession, pack
from tests.kernel.kernel_helpers import TIMEOUT, start

KEY = b"0123456789abcdef"


class _Recorder:
    def __init__(self) -> None:
        self.sent: list[list[bytes]] = []

    def send_multipart(self, parts: list[bytes], copy: bool = True, track: bool = False) -> None:
        self.sent.append(list(parts))


def _session() -> FlowSession:
    session = FlowSession(key=KEY, session="s", username="u")
    session.pack = pack
    return session


@pytest.fixture
def fixed_now(monkeypatch: pytest.MonkeyPatch) -> None:
    import jupyter_client.session as jupyter_session

    moment = datetime.datetime(2026, 12, 6, 2, 0, 0, 123456, tzinfo=datetime.UTC)
    monkeypatch.setattr(jupyter_session, "utcnow", lambda: moment)


def test_held_messages_leave_first_and_as_if_sent_at_once(fixed_now: None) -> None:
    held, direct = _session(), _session()
    request = FlowSession(key=KEY).msg("execute_request", {"code": "1 + 1"})
    held_out, direct_out = _Recorder(), _Recorder()
    held.send_later(held_out, "status", {"execution_state": "busy"}, request, b"kernel.k.status")
    held.send_later(held_out, "execute_input", {"code": "1 + 1", "execution_count": 1}, request, b"t")
    assert held_out.sent == [] and held.holds()
    held.send(held_out, "execute_result", {"data": {"text/plain": "2"}}, request, ident=b"t")
    assert not held.holds()
    direct.send(direct_out, "status", {"execution_state": "busy"}, request, ident=b"kernel.k.status")
    direct.send(direct_out, "execute_input", {"code": "1 + 1", "execution_count": 1}, request, ident=b"t")
    direct.send(direct_out, "execute_result", {"data": {"text/plain": "2"}}, request, ident=b"t")
    assert held_out.sent == direct_out.sent  # the same parts, ids in the same sequence
    held.send_held()  # nothing held: nothing sent
    assert len(held_out.sent) == 3


def test_a_held_message_that_cannot_be_sent_is_logged_and_the_rest_go(caplog: pytest.LogCaptureFixture) -> None:
    session, out = _session(), _Recorder()

    class Broken:
        def send_multipart(self, parts: list[bytes], copy: bool = True, track: bool = False) -> None:
            raise OSError("gone")

    session.send_later(Broken(), "status", {"execution_state": "busy"}, {}, b"a")
    session.send_later(out, "execute_input", {"code": "", "execution_count": 1}, {}, b"b")
    with caplog.at_level(logging.ERROR):
        session.send_held()
    assert len(out.sent) == 1 and "status" in caplog.text and not session.holds()


def test_a_send_from_another_thread_waits_for_the_held_ones() -> None:
    session, out = _session(), _Recorder()
    session.send_later(out, "status", {"execution_state": "busy"}, {}, b"first")
    thread = threading.Thread(target=session.send, args=(out, "status", {"execution_state": "idle"}),
                              kwargs={"ident": b"second"})
    thread.start()
    thread.join(TIMEOUT)
    assert [parts[0] for parts in out.sent] == [b"first", b"second"]


def _kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, _Recorder]:
    from flow_kernel.kernel.kernel import FlowKernel

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLOW_HISTORY", ":memory:")
    out = _Recorder()
    kernel = FlowKernel(session=_session(), iopub_socket=out, log=logging.getLogger("test-kernel"))
    return kernel, out


def _types(out: _Recorder) -> list[str]:
    import json

    return [json.loads(parts[parts.index(b"<IDS|MSG>") + 2])["msg_type"] for parts in out.sent]


def test_an_execute_requests_busy_and_input_wait_for_the_cells_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, out = _kernel(tmp_path, monkeypatch)
    request = kernel.session.msg("execute_request", {"code": "1 + 1"})
    kernel._publish_status("busy", "shell", request)
    kernel._publish_execute_input("1 + 1", request, 1)
    assert out.sent == [] and kernel._status_gate.executing  # the gate counts it from its busy on
    kernel._send_start()
    assert _types(out) == ["status", "execute_input"]
    kernel._publish_status("busy", "shell", kernel.session.msg("execute_request", {"code": "2"}))
    kernel.iopub("stream", {"name": "stdout", "text": "x"}, request)  # any other message: after them
    assert _types(out) == ["status", "execute_input", "status", "stream"]


def test_other_statuses_leave_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, out = _kernel(tmp_path, monkeypatch)
    kernel._publish_status("busy", "shell", kernel.session.msg("kernel_info_request", {}))
    assert _types(out) == ["status"]
    control = threading.Thread(target=kernel._publish_status,
                               args=("busy", "control", kernel.session.msg("execute_request", {"code": "1"})))
    control.start()
    control.join(TIMEOUT)
    assert _types(out) == ["status", "status"]  # off the main thread: no cell of its own to wait for
    kernel._publish_execute_input("1", kernel.session.msg("execute_request", {"code": "1"}), 1)
    assert _types(out) == ["status", "status", "execute_input"]  # nothing held: sent as ipykernel sends it


def test_a_cells_messages_keep_their_order_and_sequence() -> None:
    """Over the protocol: busy, execute_input, the cell's output and result, the reply and
    idle, their ids numbered in that order, for a warm cell, a silent one and one that fails."""
    with tempfile.TemporaryDirectory() as folder:
        km, kc = start(Path(folder), live_view=False)
        try:
            for code, silent, kinds in [('print("hi")\n1 + 1', False, ["stream", "execute_result"]),
                                        ("1 + 1", True, []),
                                        ("let x: int = ", False, ["display_data", "error"])]:
                msg_id = kc.execute(code, silent=silent)
                reply = kc.get_shell_msg(timeout=TIMEOUT)
                assert reply["parent_header"]["msg_id"] == msg_id
                seen: list[tuple[str, int]] = []
                while True:
                    msg = kc.get_iopub_msg(timeout=TIMEOUT)
                    if msg["parent_header"].get("msg_id") != msg_id:
                        continue
                    state = msg["content"].get("execution_state", "")
                    seen.append((f"{msg['msg_type']} {state}".strip(), int(msg["header"]["msg_id"].rsplit("_", 1)[1])))
                    if state == "idle":
                        break
                number = int(reply["header"]["msg_id"].rsplit("_", 1)[1])
                expected = ["status busy", *([] if silent else ["execute_input"]), *kinds, "status idle"]
                assert [kind for kind, _ in seen] == expected, code
                numbers = [n for _, n in seen]
                assert numbers == sorted(numbers) and numbers[-2] < number < numbers[-1], code
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)

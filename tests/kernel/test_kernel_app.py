"""kernel/app.py: the kernel reads shell messages on its main loop and offers no
subshells (a cell's runs belong to that loop), builds no log records its handlers
would drop, and packs and reads messages as jupyter_client does (an encoder made once,
a UTC date read without dateutil)."""

from __future__ import annotations

import datetime
import logging
import math
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.session import json_packer

from flow_kernel.kernel.app import pack, quiet_logger
from tests.kernel.kernel_helpers import TIMEOUT, execute, start


def test_no_subshells_offered_and_a_create_request_answered_with_an_error() -> None:
    with tempfile.TemporaryDirectory() as folder:
        km, kc = start(Path(folder), live_view=False)
        try:
            info = kc.kernel_info(reply=True)["content"]
            assert "kernel subshells" not in info["supported_features"]
            request = kc.session.msg("create_subshell_request", {})
            kc.control_channel.send(request)
            reply = kc.control_channel.get_msg(timeout=TIMEOUT)
            assert reply["parent_header"]["msg_id"] == request["header"]["msg_id"]
            assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "SubshellsUnsupported"
            cell = execute(kc, "6 * 7")  # the shell, read on the main loop, still answers
            assert cell.status == "ok" and cell.result == "42"
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)


def test_quiet_logger_takes_the_lowest_level_a_handler_prints() -> None:
    logger = logging.getLogger("flow-test-quiet-logger")
    logger.setLevel(logging.DEBUG)
    warning, error = logging.StreamHandler(), logging.StreamHandler()
    warning.setLevel(logging.WARNING)
    error.setLevel(logging.ERROR)
    logger.addHandler(warning)
    logger.addHandler(error)
    try:
        quiet_logger(logger)
        assert logger.level == logging.WARNING and not logger.isEnabledFor(logging.DEBUG)
        debug = logging.StreamHandler()  # `--debug`: a handler that prints everything
        debug.setLevel(logging.DEBUG)
        logger.addHandler(debug)
        logger.setLevel(logging.DEBUG)
        quiet_logger(logging.LoggerAdapter(logger, {}))
        assert logger.level == logging.DEBUG
    finally:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)


def test_a_logger_without_handlers_is_left_as_it_is() -> None:
    logger = logging.getLogger("flow-test-quiet-logger-bare")
    logger.setLevel(logging.DEBUG)
    quiet_logger(logger)
    assert logger.level == logging.DEBUG


_AWARE = datetime.datetime(2026, 12, 5, 9, 0, 1, 123456, tzinfo=datetime.UTC)
_NAIVE = datetime.datetime(2026, 12, 5, 9, 0, 1)


@pytest.mark.filterwarnings("ignore:Interpreting naive datetime:DeprecationWarning")  # jupyter_client's, both ways
@pytest.mark.parametrize("value", [
    {"msg_id": "a", "date": _AWARE, "version": "5.4"},  # a header: an aware time becomes …Z
    {"date": _NAIVE, "day": _AWARE.date()},
    {"text": "naïve ✓ \u2028 \"quoted\"", "lone": "\udc80", "bytes": b"\x00\xff", "set": {3}, "tuple": (1, 2)},
    {"nested": [{"a": [1, 2.5, None, True]}], "big": 2**70, "empty": {}},
    {},
])
def test_pack_gives_json_packers_bytes(value: Any) -> None:
    assert pack(value) == json_packer(value)


def test_pack_hands_what_json_cannot_hold_to_json_packer() -> None:
    value = {"nan": math.nan, "inf": [math.inf]}
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        expected = json_packer(value)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        assert pack(value) == expected
    assert len(ours) == len(theirs) == 1
    for packer in (pack, json_packer):  # what neither can hold: the same error
        with pytest.raises(ValueError, match="Can't clean for JSON"):
            packer({"object": object()})


@pytest.mark.parametrize("ident", [None, b"client", [b"a", b"b"]])
def test_flow_session_serializes_as_jupyter_client_does(ident: Any) -> None:
    from jupyter_client.session import Session

    from flow_kernel.kernel.app import FlowSession

    key = b"0123456789abcdef"
    ours, theirs = FlowSession(key=key), Session(key=key)
    ours.pack = theirs.pack = pack
    request = theirs.msg("execute_request", {"code": "1 + 1"})
    parent = theirs.deserialize(theirs.serialize(request)[1:])  # its header's date a datetime again
    messages = [ours.msg("status", {"execution_state": "busy"}, parent),
                ours.msg("execute_result", {"data": {"text/plain": "2"}}, parent, metadata={"k": [1]}),
                {**ours.msg("stream", None, parent), "content": None},
                {**ours.msg("stream", None, parent), "content": b'{"a":1}'},
                {**ours.msg("stream", None, parent), "content": '{"b":2}'},
                ours.msg("status", {"execution_state": "idle"}, {"header": {"msg_id": "other"}})]
    for message in [*messages, *messages]:  # the second time, each parent header's bytes are kept
        assert ours.serialize(message, ident) == theirs.serialize(message, ident)
    with pytest.raises(TypeError, match="Content incorrect type"):
        ours.serialize({**messages[0], "content": 3})


def _received(session: Any, message: dict[str, Any]) -> list[Any]:
    """The parts a kernel reads for `message` (after the identities and the delimiter)."""
    parts = session.serialize(message)
    return parts[parts.index(b"<IDS|MSG>") + 1:] + list(message.get("buffers", []))


def test_flow_session_deserializes_as_jupyter_client_does() -> None:
    import zmq
    from jupyter_client.session import Session

    from flow_kernel.kernel.app import FlowSession

    key = b"0123456789abcdef"
    client = Session(key=key)
    request = client.msg("execute_request", {"code": "1 + 1"})
    answer = client.msg("input_reply", {"value": "y"}, parent=request)  # a parent header with its date
    offset = {**client.msg("comm_msg", {"data": {}}), "buffers": [b"xyz"]}
    offset["header"] = {**offset["header"], "date": "2026-12-05T17:24:02.5+02:00"}
    naive = client.msg("kernel_info_request")
    naive["header"] = {**naive["header"], "date": "2026-12-05T17:24:02"}
    whole = client.msg("execute_request", {"code": "x"})
    whole["header"] = {**whole["header"], "date": "2026-12-05T17:24:02Z"}
    for message in (request, answer, offset, naive, whole):
        parts = _received(client, message)
        for content, copy in ((True, True), (False, True), (True, False)):
            given = parts if copy else [zmq.Frame(part) for part in parts]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # the naive date: local time, said
                ours, theirs = FlowSession(key=key).deserialize(given, content, copy), \
                    Session(key=key).deserialize(given, content, copy)
            assert {k: v for k, v in ours.items() if k != "buffers"} == \
                {k: v for k, v in theirs.items() if k != "buffers"}
            assert [bytes(b) for b in ours["buffers"]] == [bytes(b) for b in theirs["buffers"]]
            # Answered: the reply's parent header is written as the same bytes.
            reply = client.msg("status", {"execution_state": "idle"}, parent=theirs)
            assert client.serialize({**reply, "parent_header": ours["header"]}) == \
                client.serialize({**reply, "parent_header": theirs["header"]})


def test_flow_session_refuses_what_jupyter_client_refuses() -> None:
    from jupyter_client.session import Session

    from flow_kernel.kernel.app import FlowSession

    key = b"0123456789abcdef"
    client = Session(key=key)
    parts = _received(client, client.msg("execute_request", {"code": "1"}))
    ours = FlowSession(key=key)
    ours.deserialize(parts)
    with pytest.raises(ValueError, match="Duplicate Signature"):
        ours.deserialize(parts)
    with pytest.raises(ValueError, match="Invalid Signature"):
        FlowSession(key=key).deserialize([b"0" * 64, *parts[1:]])
    with pytest.raises(ValueError, match="Unsigned Message"):
        FlowSession(key=key).deserialize([b"", *parts[1:]])
    with pytest.raises(TypeError, match="malformed message"):
        FlowSession(key=b"").deserialize(parts[:4])  # unsigned: the length is what is wrong


class _Recorder:
    """A socket's stand-in that keeps what is sent on it."""

    def __init__(self) -> None:
        self.sent: list[tuple[list[bytes], bool]] = []

    def send_multipart(self, parts: list[bytes], copy: bool = True, track: bool = False) -> None:
        self.sent.append((list(parts), copy))


def test_flow_session_sends_what_jupyter_client_sends(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same messages (ids in sequence, header, parent, metadata) and the same parts, for
    the kernel's own messages made here and for those `Session.send` still makes."""
    import jupyter_client.session as jupyter_session
    from jupyter_client.session import Session

    from flow_kernel.kernel.app import FlowSession

    moment = datetime.datetime(2026, 12, 5, 20, 0, 0, 123456, tzinfo=datetime.UTC)
    monkeypatch.setattr(jupyter_session, "utcnow", lambda: moment)
    key = b"0123456789abcdef"
    ours, theirs = (FlowSession(key=key, session="s", username="u", metadata={"kept": 1}) for _ in range(2))
    ours.pack = theirs.pack = pack
    request = Session(key=key).msg("execute_request", {"code": "1 + 1"})
    big = {"data": {"text/plain": "x" * 70_000}}  # above the copy threshold: sent without a copy
    sends: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        (("status", {"execution_state": "busy"}, request["header"]), {"ident": b"kernel.k.status"}),
        (("execute_result", big, request), {"ident": [b"a", b"b"], "metadata": {"more": [2]}}),
        (("stream", None, None), {}),
        (("comm_msg", {"data": {}}, request), {"buffers": [b"xyz"]}),  # Session.send's way
        (("status", {}, None), {"header": {**request["header"], "msg_type": "status"}}),
        ((dict(request),), {}),
    ]
    ours_sent, theirs_sent = _Recorder(), _Recorder()
    for args, kwargs in sends:
        mine, expected = ours.send(ours_sent, *args, **kwargs), Session.send(theirs, theirs_sent, *args, **kwargs)
        assert mine == expected
    assert ours_sent.sent == theirs_sent.sent
    assert [copy for _, copy in ours_sent.sent][:3] == [True, False, True]
    assert ours.message_count == theirs.message_count == 4
    assert ours.send(None, "status", {}) == Session.send(theirs, None, "status", {})  # no stream: made, not sent

"""kernel/frames.py: `send_frames` puts on the wire what `send_multipart` does — the same
frames, in order, for bytes, memoryviews and frames, copied or not — and refuses what
zmq cannot send before any frame of the message leaves."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import zmq

from flow_kernel.kernel.frames import FrameSender, send_frames


@pytest.fixture
def pair() -> Iterator[tuple[zmq.Socket[Any], zmq.Socket[Any]]]:
    context: zmq.Context[Any] = zmq.Context()
    sender, receiver = context.socket(zmq.PAIR), context.socket(zmq.PAIR)
    sender.bind("inproc://flow-frames-test")
    receiver.connect("inproc://flow-frames-test")
    yield sender, receiver
    sender.close(linger=0)
    receiver.close(linger=0)
    context.term()


MESSAGES: list[list[Any]] = [
    [b"only"],
    [b"kernel.1.status", b"<IDS|MSG>", b"a" * 64, b'{"msg_type":"status"}', b"{}", b"{}", b'{"execution_state":"idle"}'],
    [b"<IDS|MSG>", b"", memoryview(b"a view"), zmq.Frame(b"a frame"), b"x" * 100_000],
]


@pytest.mark.parametrize("copy", [True, False])
@pytest.mark.parametrize("parts", MESSAGES)
def test_the_frames_are_those_send_multipart_sends(pair: Any, parts: list[Any], copy: bool) -> None:
    sender, receiver = pair
    sender.send_multipart(parts, copy=copy)
    expected = receiver.recv_multipart()
    send_frames(sender, parts, copy)
    FrameSender(sender).send_multipart(parts, copy=copy)
    assert receiver.recv_multipart() == expected == receiver.recv_multipart()


def test_a_part_zmq_cannot_send_is_refused_before_any_frame_leaves(pair: Any) -> None:
    sender, receiver = pair
    with pytest.raises(TypeError, match="Frame 1"):
        send_frames(sender, [b"first", "text, not bytes", b"last"])
    sender.send_multipart([b"next"])
    assert receiver.recv_multipart() == [b"next"]  # no half message before it

"""sandbox/process.py `_read`: the sandbox's lines taken from reads of any size — a line split
over reads, many lines in one read — each checked and dispatched in order, as a line reader
would; the first bad line ends the process with its reason. Driven with a fake process."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flow_kernel.sandbox import process as bridge
from flow_kernel.sandbox.process import MAX_LINE, SandboxProcess


class FakeProcess:
    """What `_read` and `_die` touch of a subprocess: its stdout, pid, exit and `kill`."""

    def __init__(self) -> None:
        self.stdout = asyncio.StreamReader(limit=MAX_LINE + 1)
        self.returncode: int | None = None
        self.pid = -1

    def kill(self) -> None:
        self.returncode = -9

    async def wait(self) -> int:
        return -9


def read(pieces: list[bytes]) -> tuple[list[Any], str | None]:
    """The notifications dispatched from `pieces` fed to stdout one read at a time, and the
    reason the bridge ended (None while it still reads)."""

    async def scenario() -> tuple[list[Any], str | None]:
        sandbox = SandboxProcess(["fake"])
        fake = FakeProcess()
        sandbox.proc = fake  # type: ignore[assignment]
        seen: list[Any] = []
        sandbox.on_notify = lambda op, payload: seen.append(payload["n"])
        reader = asyncio.ensure_future(sandbox._read())
        for piece in pieces:
            fake.stdout.feed_data(piece)
            await asyncio.sleep(0)  # one read of what is there
        for _ in range(5):
            await asyncio.sleep(0)
        ended = sandbox.dead
        if not reader.done():
            fake.stdout.feed_eof()
            await reader
        return seen, ended

    return asyncio.run(scenario())


def lines(*numbers: int) -> bytes:
    return b"".join(json.dumps({"op": "note", "payload": {"n": n}}).encode() + b"\n" for n in numbers)


@pytest.mark.parametrize("size", [1, 3, 7, 40, 1000])
def test_lines_split_anywhere_arrive_whole_and_in_order(size: int) -> None:
    data = lines(*range(30))
    seen, ended = read([data[i:i + size] for i in range(0, len(data), size)])
    assert seen == list(range(30)) and ended is None


def test_the_first_bad_line_ends_the_bridge_and_nothing_after_it_is_dispatched() -> None:
    seen, ended = read([lines(1, 2) + b"[1, 2]\n" + lines(3)])
    assert seen == [1, 2]
    assert ended is not None and "not a JSON object: b'[1, 2]'" in ended


def test_a_line_over_the_limit_ends_the_bridge_before_its_end_arrives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bridge, "MAX_LINE", 100)
    seen, ended = read([lines(1), b'{"op": "note", "payload": {"n": "' + b"x" * 60, b"y" * 60])
    assert seen == [1] and ended is not None and "longer than 100 bytes" in ended
    seen, ended = read([lines(1) + b"x" * 102 + b"\n" + lines(2)])  # whole in one read
    assert seen == [1] and ended is not None and "longer than 100 bytes" in ended
    seen, ended = read([b"z" * 101 + b"\n"])  # MAX_LINE + 1, as a stream reader's limit allows: not JSON
    assert ended is not None and "not a JSON object" in ended


def test_a_partial_last_line_at_the_exit_is_dropped() -> None:
    seen, ended = read([lines(1) + b'{"op": "note", "pay'])
    assert seen == [1] and ended is None


def _loads_outcome(decode: Any, raw: bytes) -> tuple[str, Any]:
    try:
        return "value", decode(raw)
    except RecursionError:
        return "error", "RecursionError"
    except ValueError as exc:
        return "error", (type(exc).__name__, str(exc))


EDGE_LINES = [
    b'{"op":"note","payload":{"n":1}}', b'{"a":1} ', b'{"a":1}\r', b'{"a":1}{"b":2}', b'{"a":1},{"b":2}',
    b'{"a":', b'{"', b'{"\xed\xa0\x80":1}', b'{"\xff":1}', b'{"x":"\xc3\xa9"}', b'{"\x00\x00', b'{\x00"\x00',
    b'\xef\xbb\xbf{"a":1}', b'\xff\xfe{\x00}\x00', b" {}", b"[1]", b"1", b"", b"nul", b'{"a":NaN}',
    b'{"a":1e999}', b'{"a":[' * 100_000,
]


@pytest.mark.parametrize("raw", EDGE_LINES, ids=range(len(EDGE_LINES)))
def test_a_line_decodes_as_json_loads_would(raw: bytes) -> None:
    """`decode_line` is `json.loads` made cheaper for the runner's lines: the same value or
    the same error for anything, a forged line included (encodings, surrogates, extra data)."""
    assert _loads_outcome(bridge.decode_line, raw) == _loads_outcome(json.loads, raw)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                    max_leaves=12),
       st.sampled_from([b"", b" ", b"\t", b"x", b"}", b"\n"]))
@settings(max_examples=300, deadline=None)
def test_generated_messages_decode_as_json_loads_would(payload: Any, tail: bytes) -> None:
    raw = json.dumps({"op": "note", "payload": payload}, ensure_ascii=False).encode("utf-8", "surrogatepass") + tail
    assert _loads_outcome(bridge.decode_line, raw) == _loads_outcome(json.loads, raw)

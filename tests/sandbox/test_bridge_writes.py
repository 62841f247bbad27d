"""When the bridge's lines leave, both ways.

Host → sandbox (sandbox/process.py `_write`, driven with a fake process): replies to the
requests of one read that end at once go out together after it (one write for a burst of
zero-latency calls); a line written after a wait (an agent's reply when its latency is over)
goes out at once, and a burst of them as the turn's 1st, 2nd, 4th … line, the rest at the
turn's end — every line once, in the order written.

Sandbox → host (flowbox/bridge.py `_send`, in a real sandbox): the runner writes a turn's
lines at the start of its next turn, except that the 1st, 2nd, 4th … line since the runner
last called in has them written at once."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from flow_kernel.sandbox.process import SandboxProcess
from tests.sandbox.sandbox_helpers import Sandbox, sandbox
from tests.sandbox.test_bridge_reader import FakeProcess as ReaderFakeProcess

__all__ = ["sandbox"]


class FakeStdin:
    def __init__(self) -> None:
        self.writes: list[list[dict[str, Any]]] = []

    def write(self, data: bytes) -> None:
        self.writes.append([json.loads(line) for line in data.decode().splitlines()])

    def is_closing(self) -> bool:
        return False


class FakeProcess(ReaderFakeProcess):
    """test_bridge_reader's fake, with a stdin that records each write."""

    def __init__(self) -> None:
        super().__init__()
        self.stdin = FakeStdin()


def sizes(stdin: FakeStdin) -> list[int]:
    return [len(batch) for batch in stdin.writes]


def ids(stdin: FakeStdin) -> list[Any]:
    return [line["id"] for batch in stdin.writes for line in batch]


def test_replies_after_a_wait_leave_at_once_then_in_doubling_chunks() -> None:
    async def scenario() -> tuple[list[int], list[int], list[Any]]:
        sandbox = SandboxProcess(["fake"])
        fake = FakeProcess()
        sandbox.proc = fake  # type: ignore[assignment]
        for rid in range(11):  # one turn, as when the timers of a burst of calls fire together
            sandbox._write({"id": rid, "ok": True, "value": "ok"})
        during = sizes(fake.stdin)
        await asyncio.sleep(0)  # the turn ends
        sandbox._write({"id": 11, "ok": True, "value": "ok"})  # a new turn starts over
        await asyncio.sleep(0)
        return during, sizes(fake.stdin), ids(fake.stdin)

    during, after, written = asyncio.run(scenario())
    assert during == [1, 1, 2, 4]  # lines 1, 2, 4 and 8 of the turn; 9-11 wait for its end
    assert after == [1, 1, 2, 4, 3, 1]
    assert written == list(range(12))


def test_replies_to_one_read_of_requests_that_end_at_once_leave_in_one_write() -> None:
    async def scenario() -> tuple[list[int], list[Any]]:
        sandbox = SandboxProcess(["fake"])
        fake = FakeProcess()
        sandbox.proc = fake  # type: ignore[assignment]

        async def echo(op: str, payload: dict[str, Any]) -> Any:
            return payload

        sandbox.handler = echo
        sandbox.eager = lambda op, payload: True  # each runs to its end in the reader
        reader = asyncio.ensure_future(sandbox._read())
        requests = b"".join(json.dumps({"id": rid, "op": "echo", "payload": {"n": rid}}).encode() + b"\n"
                            for rid in range(8))
        fake.stdout.feed_data(requests)
        for _ in range(3):
            await asyncio.sleep(0)
        fake.stdout.feed_eof()
        await reader
        return sizes(fake.stdin), ids(fake.stdin)

    written_sizes, written = asyncio.run(scenario())
    assert written_sizes == [8]
    assert written == list(range(8))


def test_the_sandbox_writes_a_burst_as_its_1st_2nd_4th_8th_line_and_the_rest_later(sandbox: Sandbox) -> None:
    result = sandbox.raw("""
        import flowbox.bridge as b
        bridge = b._bridge
        real = bridge.io

        class Recorder:  # the runner's io, counting lines held and writes asked for
            def __init__(self):
                self.held, self.writes = 0, []
            def write(self, line):
                self.held += 1
            def flush(self):
                if self.held:
                    self.writes.append(self.held)
                    self.held = 0

        rec = Recorder()
        bridge.io, bridge.write, bridge.write_now = rec, rec.write, rec.flush  # looked up once
        try:
            bridge.new_turn()
            for i in range(11):
                bridge.notify("note", {"i": i})
            during = list(rec.writes)
            bridge.on_lines("")  # the runner calls in again: the count starts over
            bridge.notify("note", {"i": 11})
            return [during, list(rec.writes), rec.held]
        finally:
            bridge.io, bridge.write, bridge.write_now = real, real.write, real.flush
            bridge.unflushed = False
    """)
    assert result == [[1, 1, 2, 4], [1, 1, 2, 4, 4], 0]

"""The runner's own ends of the bridge's pipes (runner.mjs `openBridgeInput`, `lineReader`,
`stdoutSink`), driven byte by byte from a plain `subprocess.Popen` of the real command.

stdin: a line that reaches the runner in several reads, split inside multi-byte UTF-8
characters and with a U+2028 in it, is one line, decoded whole. Each piece is written only
once the runner has taken the one before out of the pipe (the pipe's byte count, FIONREAD,
is back to 0), so the reads really are separate.

stdout: a burst the host does not read fills the pipe; the runner's direct write then
takes part of a turn's text or none, and the stream queues the rest and everything written
after it until it drains. Read once the pipe is full, every line is there, whole, once and
in order."""

from __future__ import annotations

import fcntl
import json
import os
import select
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from typing import IO, Any

import pytest

from flow_kernel.sandbox import stack
from flow_kernel.sandbox.install import ensure_snapshot
from flow_kernel.sandbox.node import find_node
from flow_kernel.sandbox.process import SANDBOX_ENV, sandbox_command

F_GETPIPE_SZ = 1032  # Linux fcntl
WAIT_S = 20.0


def _pipe_bytes(fd: int) -> int:
    """Bytes waiting in the pipe `fd` is an end of (FIONREAD)."""
    return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])


def _until(condition: Any) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "the sandbox did not get there"
        time.sleep(0.001)


@pytest.fixture
def runner() -> Iterator[tuple[subprocess.Popen[bytes], Lines]]:
    node = find_node()
    proc = subprocess.Popen(sandbox_command(node, snapshot=ensure_snapshot(node), memory_mb=512),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=dict(SANDBOX_ENV), start_new_session=True, preexec_fn=stack.preexec())
    try:
        assert proc.stdout is not None
        lines = Lines(proc.stdout)
        ready = lines.next()
        assert ready["op"] == "ready", ready
        yield proc, lines
    finally:
        proc.kill()
        proc.wait()


class Lines:
    """The sandbox's stdout, line by line, read from the fd itself (no buffer that
    `select` cannot see)."""

    def __init__(self, stdout: IO[bytes]) -> None:
        self.fd = stdout.fileno()
        self.held = b""

    def next(self) -> Any:
        while b"\n" not in self.held:
            ready, _, _ = select.select([self.fd], [], [], WAIT_S)
            assert ready, "no line from the sandbox"
            chunk = os.read(self.fd, 1 << 16)
            assert chunk, "the sandbox closed its stdout"
            self.held += chunk
        line, self.held = self.held.split(b"\n", 1)
        return json.loads(line)


def test_a_line_read_in_pieces_split_inside_characters_is_one_line(
        runner: tuple[subprocess.Popen[bytes], Lines]) -> None:
    proc, lines = runner
    assert proc.stdin is not None
    text = "ü\u2028€😀 end"
    line = json.dumps({"id": 7, "op": "ping", "payload": {"text": text}}, ensure_ascii=False).encode() + b"\n"
    at = line.index("😀".encode())
    cuts = [line.index("ü".encode()) + 1, at + 1, at + 3]  # inside ü, then twice inside the emoji
    stdin_fd = proc.stdin.fileno()
    start = 0
    for cut in [*cuts, len(line)]:
        os.write(stdin_fd, line[start:cut])
        _until(lambda: _pipe_bytes(stdin_fd) == 0)  # the runner has read this piece on its own
        start = cut
    reply = lines.next()
    assert reply == {"id": 7, "ok": True, "value": {"text": text}}


def test_a_burst_into_a_full_pipe_arrives_whole_once_and_in_order(
        runner: tuple[subprocess.Popen[bytes], Lines]) -> None:
    proc, lines = runner
    assert proc.stdin is not None
    calls, size = 3000, 2000  # ~6 MB of requests in one turn, against a 64 KiB pipe
    proc.stdin.write(json.dumps({"id": 1, "op": "echo_bench",
                                   "payload": {"n": calls, "concurrent": True, "size": size}}).encode() + b"\n")
    proc.stdin.flush()
    stdout_fd = lines.fd
    capacity = fcntl.fcntl(stdout_fd, F_GETPIPE_SZ)
    _until(lambda: _pipe_bytes(stdout_fd) >= capacity - 4096)  # full: the runner's writes were refused
    requests = [lines.next() for _ in range(calls)]
    assert [r["id"] for r in requests] == list(range(1, calls + 1))
    assert all(r["op"] == "echo" and r["payload"] == {"x": "x" * size} for r in requests)
    for r in requests:
        proc.stdin.write(json.dumps({"id": r["id"], "ok": True, "value": r["payload"]}).encode() + b"\n")
    proc.stdin.flush()
    reply = lines.next()
    assert reply["id"] == 1 and reply["ok"] is True and reply["value"]["n"] == calls, str(reply)[:300]

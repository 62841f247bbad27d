"""What the escape tests share: a sandbox started *without* the network namespace (so that
the stubbed `net`/`tls` modules are tested alone, and a loopback listener of the test is
reachable if anything leaks), a listener that counts connections, and the secret markers."""

from __future__ import annotations

import socket
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from flow_kernel.sandbox.node import find_node
from flow_kernel.sandbox.process import SandboxProcess, sandbox_command
from tests.sandbox.sandbox_helpers import Sandbox

# Inside the sandbox: undo the Python-level guard first, so each attempt tries the wall behind it.
UNGUARD = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_Blocker"]
"""


class OpenNetworkSandbox(Sandbox):
    """A real sandbox as the pool starts it, but in the host's network namespace."""

    def start(self) -> SandboxProcess:
        command = sandbox_command(find_node(), snapshot=self.snapshot, memory_mb=512, isolate_network=False)
        return self.loop.run_until_complete(SandboxProcess.start(command=command))


def attempt(box: Sandbox, body: str, **kw: Any) -> Any:
    return box.raw(UNGUARD + textwrap.dedent(body), **kw)


class Listener:
    """A loopback TCP listener that records every connection it accepts (and its first bytes)."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.server.settimeout(0.1)
        self.port = self.server.getsockname()[1]
        self.accepted: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            conn.settimeout(0.5)
            try:
                data = conn.recv(1024)
            except OSError:
                data = b""
            self.accepted.append(data)
            conn.close()

    def settle(self) -> list[bytes]:
        """What arrived, after the accept loop has had a few turns to see a late connection."""
        for _ in range(5):
            time.sleep(0.1)
        return self.accepted

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.server.close()


@pytest.fixture()
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


@pytest.fixture(scope="module")
def open_box() -> Iterator[OpenNetworkSandbox]:
    box = OpenNetworkSandbox()
    yield box
    box.close()

"""Records cassettes/13-a2a.jsonl, the cassette lesson 13's A2A cell replays.

    python notebooks/cassettes/record_13.py

It starts `flow serve greetings.flow --a2a` on a free loopback port with a token of its own
(`--token-env`), then runs the lesson's A2A cell (notebooks/lessons/n13_flow_and_other_agents.py, A2A_CELL) in a Flow session with
`record()` on and `[a2a.greeter]` pointing at that server: a real A2A conversation through
the a2a-sdk on both sides, deterministic (the served workflow composes its greeting).
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASSETTE = HERE / "13-a2a.jsonl"
sys.path.insert(0, str(HERE.parent))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    from lessons.n13_flow_and_other_agents import A2A_CELL

    from flow_kernel import Session
    from flow_kernel.runtime.config import FlowConfig
    from flow_kernel.runtime.remote.config import A2AAgentSettings

    port = free_port()
    os.environ["GREETER_TOKEN"] = secrets.token_urlsafe(32)  # the server's, and the client's to send
    server = subprocess.Popen([sys.executable, "-m", "flow_kernel.cli", "serve", str(HERE.parent / "greetings.flow"),
                               "--a2a", f"127.0.0.1:{port}", "--token-env", "GREETER_TOKEN"], stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            if time.monotonic() > deadline or server.poll() is not None:
                print("flow serve did not start", file=sys.stderr)
                return 1
            time.sleep(0.1)
        config = FlowConfig(a2a={"greeter": A2AAgentSettings("greeter", f"http://127.0.0.1:{port}",
                                                                     token_env="GREETER_TOKEN", skill="greet")})
        CASSETTE.unlink(missing_ok=True)
        session = Session(directory=HERE.parent, config=config, sandbox=False, journal_dir=None, record=CASSETTE)
        outcome = session.run(A2A_CELL)
        if outcome.error is not None:
            print(outcome.error, file=sys.stderr)
            return 1
        print(f"{CASSETTE.relative_to(HERE.parent.parent)}: {outcome.result}")
        return 0
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    sys.exit(main())

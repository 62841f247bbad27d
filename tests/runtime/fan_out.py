"""What the cost-reservation tests share (tests/runtime/test_cost_reservations.py,
tests/security/test_cost_door.py): a priced model, a slow loopback provider speaking OpenAI's
Chat Completions (a new one for each run), runs in one reused Pyodide sandbox, and what the
provider saw: what it billed, and the most that was ever committed."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.lang.prices import Price
from flow_kernel.runtime.config import FlowConfig
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.executors import SandboxExecutor
from flow_kernel.runtime.providers.resilience import estimate_tokens
from flow_kernel.runtime.providers.table import ProviderSettings
from flow_kernel.runtime.run import RunOutcome, run_compiled
from tests.runtime.sse_servers import SSEServer, openai_text

MAX_OUTPUT = 100
PRICE = Price(1000, 1000)  # 0.001 a token either way
CONFIG = FlowConfig(providers={"openai": ProviderSettings(options={"max_tokens": MAX_OUTPUT})},
                    prices={"openai/m": PRICE})
USAGE = (20, 10)  # what each reply says it used: 0.03, well under an attempt's worst case (> 0.1)
REPLY_COST = PRICE.cost(*USAGE)


class Provider:
    """A new loopback provider for each run (late requests of a run cut short never reach the
    next one's), the one before it closed; OPENAI_BASE_URL/OPENAI_API_KEY point at it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.server: SSEServer | None = None
        self.env = monkeypatch

    def fresh(self, replies: int, content: str = "ok", seed: int | None = None) -> SSEServer:
        """A new server with `replies` replies of USAGE, all saying `content` (the server hands
        them out as requests arrive), each streamed over ~25 ms, or over a random 0..50 ms
        with `seed`."""
        self.close()
        self.server = SSEServer()
        self.env.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{self.server.port}/v1")
        self.env.setenv("OPENAI_API_KEY", "sk-reservations-test")
        pick = random.Random(seed)
        for _ in range(replies):
            delay = 0.005 if seed is None else pick.uniform(0, 0.01)
            self.server.replies.append(openai_text([content], usage=USAGE, delay=delay))
        return self.server

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None


class Sandbox:
    """One Pyodide sandbox executor and its loop, reused by every run of a module."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.executor = SandboxExecutor()

    def run(self, source: str, workflow: str = "w", input: dict[str, Any] | None = None) -> RunOutcome:
        compiled = compile_source(SourceFile("fan.flow", source))
        assert compiled.ok, [d.message for d in compiled.check.errors]
        return self.loop.run_until_complete(run_compiled(compiled, self.executor, RunContext(config=CONFIG),
                                                         workflow=workflow, input=input))

    def close(self) -> None:
        self.loop.run_until_complete(self.executor.close())
        self.loop.close()


@pytest.fixture(scope="module", name="sandbox")
def sandbox_fixture() -> Iterator[Sandbox]:
    """The module's sandbox (a fixture: import it into a test module)."""
    box = Sandbox()
    yield box
    box.close()


@pytest.fixture(name="provider")
def provider_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[Provider]:
    """The test's loopback providers, the last one closed at the end (a fixture: import it)."""
    made = Provider(monkeypatch)
    yield made
    made.close()


def worst_case(body: dict[str, Any]) -> float:
    """An attempt's worst case as the host reserves it: its messages, and MAX_OUTPUT tokens."""
    text = "".join(str(m.get("content") or "") for m in body["messages"])
    return PRICE.cost(estimate_tokens(text), MAX_OUTPUT)


def committed_peak(server: SSEServer) -> float:
    """The most ever committed as the provider saw it: at each request's arrival, the replies
    answered at their cost, and every request not answered yet (this one included) at its
    worst case. The host had at least as much committed then (it reserves before it sends,
    and settles only after the reply's last event)."""
    return max((answered * REPLY_COST + sum(worst_case(server.requests[i]) for i in open_)
                for answered, open_ in server.arrivals), default=0.0)


def spent(server: SSEServer) -> float:
    """What the provider billed: every request it received, at its reply's cost."""
    return len(server.requests) * REPLY_COST

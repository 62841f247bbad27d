"""Why calls wait, in `flow run`'s log: the terminal view's lines for a provider's waits and
breaker (with until when), and `flow run` printing them on stderr when it is not a terminal —
a real run against a loopback OpenAI-compatible server that answers 429 with Retry-After."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from flow_kernel.runtime.events.terminal import NOTICES, TerminalProgress
from tests.runtime.sse_servers import Reply, SSEServer, openai_text

FLOW = [sys.executable, "-m", "flow_kernel.cli"]


def ev(type_: str, span: str, parent: str | None = None, **data: Any) -> dict[str, Any]:
    return {"type": type_, "span": {"id": span, "parent": parent}, "data": data, "ts": "2026-03-01T10:00:00.500+00:00"}


EVENTS = [
    ev("workflow.started", "w", None, name="main"),
    ev("agent.started", "c1", "w", agent="a", label=None, prompt="go"),
    ev("provider.waiting", "c1", "w", provider="openai", reason="retry-after", wait_ms=7000),
    ev("provider.resumed", "c1", "w", provider="openai", reason="retry-after", waited_ms=7004),
    ev("provider.breaker", "c1", "w", provider="openai", state="open", failures=5, pause_ms=30_000),
    ev("provider.waiting", "c1", "w", provider="openai", reason="bulkhead"),
    ev("agent.completed", "c1", "w", agent="a", label=None, output="x", attempts=[{"kind": "attempt"}]),
]


def lines(view: TerminalProgress, out: io.StringIO) -> list[str]:
    for event in EVENTS:
        view(event)
    return [line.strip() for line in out.getvalue().splitlines()]


def test_a_wait_says_for_whom_why_and_until_when() -> None:
    out = io.StringIO()
    shown = lines(TerminalProgress(out), out)
    assert "⏸ waiting ~7.0 s for openai (retry-after) until 10:00:07 UTC" in shown
    assert "▶ resumed after 7.0 s (openai, retry-after)" in shown
    assert "⚡ openai's circuit breaker is open after 5 failures until 10:00:30 UTC" in shown
    assert "⏸ waiting for openai (bulkhead)" in shown  # no known end: no `until`
    assert any(line.startswith("▸ workflow") for line in shown)


def test_only_the_notices_when_no_person_watches() -> None:
    out = io.StringIO()
    shown = lines(TerminalProgress(out, only=NOTICES), out)
    assert len(shown) == 4 and all(line[0] in "⏸▶⚡" for line in shown), shown
    assert out.getvalue().splitlines()[0].startswith("    ⏸")  # still indented by where the call is


PROGRAM = 'agent a { model: "openai/m" }\nworkflow main() -> string { return a("go") }\nmain()\n'


def test_flow_run_without_a_terminal_prints_why_a_call_waited(tmp_path: Path) -> None:
    server = SSEServer()
    try:
        server.replies += [Reply(status=429, error="slow down", headers={"Retry-After": "1"}), openai_text(["fine"])]
        (tmp_path / "prog.flow").write_text(PROGRAM, encoding="utf-8")
        env = {**os.environ, "OPENAI_BASE_URL": f"http://127.0.0.1:{server.port}/v1", "OPENAI_API_KEY": "sk-loopback"}
        done = subprocess.run([*FLOW, "run", "prog.flow"], cwd=tmp_path, capture_output=True, text=True, env=env,
                              timeout=300)
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    assert '"fine"' in done.stdout or "fine" in done.stdout
    err = done.stderr.splitlines()
    assert any("⏸ waiting ~1.0 s for openai (retry-after) until " in line and line.endswith(" UTC") for line in err), err
    assert any("▶ resumed after" in line for line in err), err
    assert not any("▸" in line or "✓" in line for line in err), err  # the progress view itself is a terminal's
    quiet = subprocess.run([*FLOW, "run", "prog.flow", "--no-progress"], cwd=tmp_path, capture_output=True,
                           text=True, env={**env, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, timeout=300)
    assert "⏸" not in quiet.stderr  # --no-progress: nothing of the kind

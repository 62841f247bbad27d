"""The deadline on busy Python, kept by the runner's main thread (docs/sandbox.md,
"Deadlines inside the sandbox"). There is no watchdog worker any more: Node runs without
`--allow-worker`, so no Worker can start in the sandbox at all, and the deadline of a run
that never yields is enforced through the interrupt buffer Pyodide polls while Python runs
(a getter on Pyodide's Module that puts SIGINT in the buffer once the deadline has passed).
Each door is also reopened: a runner whose buffer never reads SIGINT leaves the same busy
run going past its deadline, and the same flags with `--allow-worker` start a Worker."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from flow_kernel.errors import FlowError
from flow_kernel.sandbox.install import RUNNER, ensure_snapshot
from flow_kernel.sandbox.node import find_node
from flow_kernel.sandbox.process import SandboxProcess, sandbox_command

BUSY = {"run": "busy", "module": "async def main(rt, args):\n    while True:\n        pass\n",
        "args": {}, "unrestricted": True, "deadline_ms": 300}
ONE_PLUS_ONE = {"run": "after", "module": "async def main(rt, args):\n    return 1 + 1\n", "args": {},
                "unrestricted": True}
NEVER_FIRES = ("now >= fireAt", "false")


def _command(tmp_path: Path, *, reopen: bool) -> list[str]:
    command = sandbox_command(find_node(), snapshot=ensure_snapshot(find_node()), memory_mb=512)
    if not reopen:
        return command
    old, new = NEVER_FIRES
    text = RUNNER.read_text(encoding="utf-8")
    assert old in text, "the interrupt getter changed: update the reopened door"
    runner = tmp_path / "runner.mjs"
    runner.write_text(text.replace(old, new), encoding="utf-8")
    return [c.replace(str(RUNNER), str(runner)) for c in command]


async def _busy_run(command: list[str]) -> tuple[object, object]:
    """The busy run's outcome within 2 s (its deadline is 0.3 s), then `1 + 1` in the same process."""
    process = await SandboxProcess.start(command=command)
    try:
        try:
            outcome: object = await asyncio.wait_for(process.request("run", BUSY), 2.0)
        except FlowError as exc:
            outcome = exc
        except TimeoutError:
            return "still running", None
        after = (await process.request("run", ONE_PLUS_ONE))["result"]
        return outcome, after
    finally:
        await process.close()


def test_a_run_that_never_yields_stops_at_its_deadline(tmp_path: Path) -> None:
    outcome, after = asyncio.run(_busy_run(_command(tmp_path, reopen=False)))
    assert isinstance(outcome, FlowError) and outcome.code == "workflow-timeout", outcome
    assert after == 2  # the same process goes on


def test_reopened_an_interrupt_that_never_fires_lets_the_run_go_on(tmp_path: Path) -> None:
    outcome, _after = asyncio.run(_busy_run(_command(tmp_path, reopen=True)))
    assert outcome == "still running"


WORKER = ("import { Worker } from 'node:worker_threads';"
          "try { const w = new Worker('1', { eval: true }); console.log('started'); w.terminate(); }"
          "catch (e) { console.log(e.code); }")


def _start_worker(*, allow: bool) -> str:
    command = sandbox_command(find_node(), snapshot=None, memory_mb=512, isolate_network=False)
    node = find_node().path
    flags = command[command.index(node) + 1:command.index(str(RUNNER))]  # Node's own flags
    flags += ["--allow-worker"] if allow else []
    out = subprocess.run([node, *flags, "--input-type=module", "-e", WORKER], capture_output=True, text=True, timeout=60)
    return out.stdout.strip()


def test_no_worker_starts_under_the_sandbox_flags() -> None:
    assert _start_worker(allow=False) == "ERR_ACCESS_DENIED"


def test_reopened_with_allow_worker_a_worker_starts() -> None:
    assert _start_worker(allow=True) == "started"

"""How often busy Python asks the runner's watchdog for a signal (runner.mjs `startWatchdog`).

CPython in Pyodide calls out to JavaScript every 50 ticks of its eval breaker by default;
the runner sets its tick counter (`_Py_emscripten_signal_clock`) itself: every 3,200 ticks
while no deadline is armed, and from 50 up to 3,200 while one is, as the pace allows. The
runner here is the real one with one line changed: `io.memory()` returns the count of
checks so far (a check is the first of the three reads of the buffer each makes), which a
run reads before and after a loop of two million backward jumps (one tick each). The same
loop under the runner with the counter left alone (`checkEvery` a no-op) checks every 50
ticks, ~40,000 times: the door reopened, so these counts can fail."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from flow_kernel.sandbox.install import RUNNER, ensure_snapshot
from flow_kernel.sandbox.node import find_node
from flow_kernel.sandbox.process import SandboxProcess, sandbox_command

LOOP_TICKS = 2_000_000
COUNT = ("memory: () => pyodide._module.HEAPU8.buffer.byteLength,", "memory: () => checks,")
WATCH = ("    watch() {\n", "    watch() {\n      if (reads === 0) checks++;\n")
DECLARE = ("const MAX_TIMER_MS = 2 ** 31 - 1;\n", "const MAX_TIMER_MS = 2 ** 31 - 1;\nlet checks = 0;\n")
CLOCK_LEFT_ALONE = ("signalClock % 4 === 0", "false")
CHECKS_IN_A_LOOP = f"""
import flowbox.bridge as b
before = b._bridge.memory()
for i in range({LOOP_TICKS}):
    pass
return b._bridge.memory() - before
"""


def _runner(tmp_path: Path, *, clock_left_alone: bool) -> list[str]:
    text = RUNNER.read_text(encoding="utf-8")
    edits = [COUNT, WATCH, DECLARE, *([CLOCK_LEFT_ALONE] if clock_left_alone else [])]
    for old, new in edits:
        assert text.count(old) == 1, f"the runner changed: update this test's edit of {old!r}"
        text = text.replace(old, new)
    runner = tmp_path / ("runner-50.mjs" if clock_left_alone else "runner.mjs")
    runner.write_text(text, encoding="utf-8")
    command = sandbox_command(find_node(), snapshot=ensure_snapshot(find_node()), memory_mb=512)
    return [c.replace(str(RUNNER), str(runner)) for c in command]


async def _checks(command: list[str]) -> dict[str, Any]:
    """The checks during the loop with no deadline and with a far one; then a busy run's fate."""
    process = await SandboxProcess.start(command=command)
    try:
        counts: dict[str, Any] = {}
        for name, deadline_ms in (("disarmed", None), ("armed", 600_000)):
            module = "async def main(rt, args):\n" + "\n".join(f"    {line}" for line in CHECKS_IN_A_LOOP.strip().splitlines())
            reply = await process.request("run", {"run": name, "module": module, "args": {}, "unrestricted": True,
                                                  "deadline_ms": deadline_ms})
            counts[name] = reply["result"]
        return counts
    finally:
        await process.close()


def test_busy_python_checks_for_a_signal_every_few_thousand_ticks(tmp_path: Path) -> None:
    counts = asyncio.run(_checks(_runner(tmp_path, clock_left_alone=False)))
    # Disarmed: one check per 3,200 ticks (625), whatever the pace. Armed: the interval starts
    # at 50 and grows 4× a check while the pace allows; a loaded machine that preempts the
    # process resets it now and then, so the bound is loose — still 4× under the old 40,000.
    assert 0 < counts["disarmed"] < 1_000, counts
    assert 0 < counts["armed"] < LOOP_TICKS // 50 // 4, counts


def test_with_the_counter_left_alone_python_checks_every_fifty_ticks(tmp_path: Path) -> None:
    counts = asyncio.run(_checks(_runner(tmp_path, clock_left_alone=True)))
    assert min(counts.values()) > LOOP_TICKS // 50 * 9 // 10, counts  # ~39,000

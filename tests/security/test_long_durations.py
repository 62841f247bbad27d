"""Durations up to the host maximum work (issue 15, item 7). Node's `setTimeout` takes at
most 2^31-1 ms (~24.8 days) and turns a longer delay into 1 ms, so `limits { duration:
600h }` used to time out at once: the sandbox's watchdog (watchdog.mjs) and the frame's
deadline timer (Pyodide's event loop runs on setTimeout) both fired immediately. Both now
wait in stretches of at most 2^31-1 ms up to the deadline. The ceiling on `duration` is
raised for these tests (`FLOW_MAX_DURATION`), so the program's 600 h reaches the sandbox."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.sandbox.sandbox_helpers import Sandbox, sandbox
from tests.security.door_helpers import attempt

__all__ = ["sandbox"]

HOURS_600_MS = 600 * 3600 * 1000
assert HOURS_600_MS > 2**31 - 1

PROGRAM = '''limits { duration: DURATION }
agent slowpoke {
  model: "scripted"
  output: string
  script: [slow(300ms, "answered")]
}
workflow inner(x: string) -> string {
  limits { duration: DURATION }
  return slowpoke(x)
}
print slowpoke("first")
inner("second")
'''


def flow_run(tmp_path: Path, duration: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "long.flow").write_text(PROGRAM.replace("DURATION", duration), encoding="utf-8")
    env = {**os.environ, "FLOW_MAX_DURATION": str(1000 * 3600 * 1000)}  # 1000 h, in ms
    return subprocess.run([sys.executable, "-m", "flow_kernel.cli", "run", "long.flow"], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=120)


def test_a_600_hour_run_completes(tmp_path: Path) -> None:
    out = flow_run(tmp_path, "600h")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "answered\nanswered\n"


def test_a_short_deadline_still_holds(tmp_path: Path) -> None:
    out = flow_run(tmp_path, "100ms")
    assert out.returncode == 1 and "error[workflow-timeout]" in out.stderr, out.stderr


def test_the_watchdog_waits_past_2_to_the_31_ms(sandbox: Sandbox) -> None:
    body = "import asyncio\nawait asyncio.sleep(0.5)\nreturn 'slept'"
    assert sandbox.raw(body, deadline_ms=HOURS_600_MS) == "slept"
    assert sandbox.raw(body, deadline_ms=2**31 + 1) == "slept"
    # the same test sees a watchdog that fires: a deadline inside the sleep stops the run
    stopped = sandbox.raw(body, deadline_ms=100)
    assert getattr(stopped, "code", None) == "workflow-timeout", stopped


# Pyodide's loop clamps a call_later delay to 2^31-1 ms, so the old frame timer (the whole
# delay to call_later) fired at ~24.8 days, before a longer deadline. Shrunk here to 0.2 s
# (the loop's clamp and the frame's stretch alike) to see it in a second, not in a month.
FRAME = """
import asyncio, time
from flowbox import runtime
from pyodide import webloop
saved = runtime.MAX_TIMER_S, webloop._MAX_TIMEOUT_MS
webloop._MAX_TIMEOUT_MS = 200
runtime.MAX_TIMER_S = float("inf") if args["reopen"] else 0.2


async def until(moment):  # short sleeps: the shrunk loop maximum would cut a long one short
    while time.monotonic() < moment:
        await asyncio.sleep(0.05)

try:
    start = time.monotonic()
    frame = runtime.Frame("w", "f1", 0, "steps", 0, start + 1.0, 1)
    waiting = asyncio.get_running_loop().create_future()
    frame.watch(waiting, 1.0)
    await until(start + 0.6)
    early = waiting.done()
    await until(start + 1.4)
    due = waiting.done()
    frame.close()
finally:
    runtime.MAX_TIMER_S, webloop._MAX_TIMEOUT_MS = saved
return [early, due]
"""


def test_the_frame_timer_waits_for_its_deadline_past_the_loop_maximum(sandbox: Sandbox) -> None:
    assert attempt(sandbox, FRAME, args={"reopen": False}) == [False, True]


def test_the_reopened_frame_timer_fires_early(sandbox: Sandbox) -> None:
    assert attempt(sandbox, FRAME, args={"reopen": True}) == [True, True]

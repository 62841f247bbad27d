"""The sandbox's stack (flow_kernel/sandbox/stack.py): the plan V8 and the OS get from the
host's RLIMIT_STACK, the rlimit a started sandbox really has, and how a death by a stack
overflow is recognised in what the process wrote on stderr."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest

from flow_kernel.sandbox import early, stack
from flow_kernel.sandbox.stack import HEADROOM, MIB, V8_STACK, StackPlan, overflow_in, plan_for

INF = resource.RLIM_INFINITY
WANT = V8_STACK + HEADROOM


def test_the_plan_follows_what_the_os_allows() -> None:
    # The usual 8 MiB soft limit under an unlimited (or high enough) hard one: raised.
    assert plan_for(8 * MIB, INF, INF) == StackPlan(V8_STACK // 1024, WANT)
    assert plan_for(8 * MIB, WANT, INF) == StackPlan(V8_STACK // 1024, WANT)
    # Already enough, or unlimited: left alone, V8 told the full size.
    assert plan_for(WANT, WANT, INF) == StackPlan(V8_STACK // 1024, None)
    assert plan_for(INF, INF, INF) == StackPlan(V8_STACK // 1024, None)
    # A hard limit below the want: raised to it, V8 told that less the headroom.
    assert plan_for(8 * MIB, 40 * MIB, INF) == StackPlan((40 * MIB - HEADROOM) // 1024, 40 * MIB)
    # Nothing beyond V8's default is possible: no flag and no rlimit.
    assert plan_for(8 * MIB, 8 * MIB, INF) == StackPlan(None, None)
    assert plan_for(4 * MIB, 4 * MIB, INF) == StackPlan(None, None)


def _stack_limit(pid: int) -> str:
    line = next(line for line in Path(f"/proc/{pid}/limits").read_text().splitlines()
                if line.startswith("Max stack size"))
    return line.split()[3]  # the soft limit, in bytes


@pytest.mark.skipif(not Path("/proc/self/limits").exists(), reason="reads /proc/<pid>/limits")
def test_a_sandbox_child_gets_the_planned_rlimit_and_the_host_keeps_its_own() -> None:
    planned = stack.plan()
    host = resource.getrlimit(resource.RLIMIT_STACK)
    # `early.launch` starts the first sandbox with the same preexec as `SandboxProcess.start`.
    early.cancel()  # no early sandbox of another test's in the way
    assert early.launch(["sleep", "30"], {})
    started = early.take(["sleep", "30"])
    assert started is not None
    try:
        limit = _stack_limit(started.pid)
    finally:
        early.discard(started)
    if planned.rlimit is not None:
        assert limit == str(planned.rlimit)
    else:
        assert limit == ("unlimited" if host[0] == INF else str(host[0]))
    assert resource.getrlimit(resource.RLIMIT_STACK) == host  # set in the child alone


# What Pyodide 314.0.8 under Node 24 wrote when freeing a 20,000-level list overflowed V8's
# stack (abridged: the wasm frames repeat), then the runner's own line.
PYODIDE_OVERFLOW = """Pyodide has suffered a fatal error. Please report this to the Pyodide maintainers.
The cause of the fatal error was:
RangeError: Maximum call stack size exceeded
    at wasm://wasm/0249cf12:wasm-function[4225]:0x206069
    at wasm://wasm/0249cf12:wasm-function[1931]:0xeaf86
    at wasm://wasm/0249cf12:wasm-function[2418]:0x110c50 {
  pyodide_fatal_error: true
}
[python] Stack (most recent call first):
[python]   File "<flow>", line 9 in c_build
[python]   File "<flow>", line 14 in c_main
[python]   File "/flow/flowbox/tasks.py", line 56 in _guarded
[python]   File "/lib/python314.zip/asyncio/events.py", line 94 in _run
flow sandbox: uncaught: RangeError: Maximum call stack size exceeded
    at wasm://wasm/0249cf12:wasm-function[4225]:0x206069""".splitlines()


def test_an_overflow_is_recognised_with_its_innermost_flow_line() -> None:
    found = overflow_in(["earlier output", *PYODIDE_OVERFLOW])
    assert found is not None and found.line == 9
    reason = found.reason()
    assert "ran out of stack" in reason and "nested" in reason and "x = [x]" in reason
    # Python's stack as long as it is printed (100 frames) still leaves the banner in the
    # 200 lines the host keeps.
    at = PYODIDE_OVERFLOW.index('[python]   File "<flow>", line 14 in c_main')
    deep = [*PYODIDE_OVERFLOW[:at], *['[python]   File "<flow>", line 9 in c_build'] * 100, *PYODIDE_OVERFLOW[at:]]
    assert len(deep) < 200 and overflow_in(deep) == stack.Overflow(9)
    without_frames = [line for line in PYODIDE_OVERFLOW if "<flow>" not in line]
    assert overflow_in(without_frames) == stack.Overflow(None)
    # Another fatal error, or the RangeError alone (a user's text, say), is not an overflow.
    other = [line.replace("RangeError: Maximum call stack size exceeded", "RuntimeError: unreachable")
             for line in PYODIDE_OVERFLOW]
    assert overflow_in(other) is None
    assert overflow_in(["RangeError: Maximum call stack size exceeded"]) is None
    assert overflow_in([]) is None


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/<pid>/status")
def test_stack_bytes_reads_the_main_threads_stack_and_is_zero_when_it_cannot() -> None:
    assert 0 < stack.stack_bytes(os.getpid()) < 1024 * MIB
    assert stack.stack_bytes(None) == 0 and stack.stack_bytes(2**22 + 12345) == 0

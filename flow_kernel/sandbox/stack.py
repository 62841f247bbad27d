"""The sandbox's stack: how deep CPython in WebAssembly may recurse before V8 stops it,
and what the process said when it died of it (docs/sandbox.md, "The stack").

CPython's C recursion — freeing a nested list or dict, json's encoder, `repr`, hashing,
`==` on lists — takes one wasm frame a level on V8's stack of the Node process's main
thread. V8 stops at its own bound (`--stack-size`, 984 KiB by default: about 5,500 levels
of a freed list), and Pyodide ends the process there (a fatal error: no `except` sees it;
CPython 3.14's own check reads the linear memory's stack pointer, which these frames barely
move). V8's flag only tells it how big the stack is (nodejs/node#17416, #33090): the OS
stack behind it is the main thread's, which grows up to RLIMIT_STACK (8 MiB by default).
So the sandbox is started with a soft RLIMIT_STACK of `V8_STACK + HEADROOM` (never above
the hard limit, never lowered) and V8 told `V8_STACK` less what the OS does not allow.
Stack pages cost memory only once a recursion reaches them, and keep it while the process
lives: the pool recycles a process whose stack grew past `RECYCLE_STACK`. A run that never
nests deeply pays nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from flow_kernel.sandbox import lifetime
from flow_kernel.sandbox.procfs import status_bytes

try:
    import resource
except ImportError:  # not POSIX: the OS's stack and V8's default stay
    resource = None  # type: ignore[assignment]

MIB = 1024 * 1024
V8_STACK = 64 * MIB  # what V8 may use: ~430,000 levels of a freed list, ~250,000 of a dict (performance.md)
# The OS stack beyond V8's bound: native code V8 calls near it and the RangeError it builds
# (V8's default keeps ~7 MiB of an 8 MiB stack free).
HEADROOM = 8 * MIB
V8_DEFAULT_KB = 984  # V8's own `--stack-size` on 64-bit Linux
BYTES_PER_LEVEL = 250  # of V8's stack, freeing a nested dict (a list: ~150), measured with Node 24


@dataclass(frozen=True)
class StackPlan:
    """`v8_kb`: the `--stack-size` to give V8 (None: its default); `rlimit`: the soft
    RLIMIT_STACK to set in the child before it execs (None: leave the inherited one)."""

    v8_kb: int | None
    rlimit: int | None


def plan_for(soft: int, hard: int, infinity: int) -> StackPlan:
    """The plan for a process whose RLIMIT_STACK is (`soft`, `hard`) (`infinity`: the OS's
    RLIM_INFINITY): V8 gets `V8_STACK` when the OS stack can be `V8_STACK + HEADROOM`, less
    when the hard limit is lower, and its default when that leaves no more than it."""
    want = V8_STACK + HEADROOM
    if soft == infinity or soft >= want:
        return StackPlan(V8_STACK // 1024, None)
    limit = want if hard == infinity or hard >= want else hard
    v8_kb = (limit - HEADROOM) // 1024
    if v8_kb <= V8_DEFAULT_KB:
        return StackPlan(None, None)
    return StackPlan(v8_kb, limit)


@functools.cache
def plan() -> StackPlan:
    """This host's plan (its RLIMIT_STACK is what a child inherits)."""
    if resource is None:
        return StackPlan(None, None)
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    return plan_for(soft, hard, resource.RLIM_INFINITY)


def v8_flags() -> tuple[str, ...]:
    """The Node flags that tell V8 the sandbox's stack size (none: V8's default)."""
    kb = plan().v8_kb
    return () if kb is None else (f"--stack-size={kb}",)


def preexec() -> Callable[[], None] | None:
    """The sandbox's preexec function: the stack's rlimit (when the plan raises it), then
    `lifetime.preexec()` (the parent-death signal). Everything is resolved before the fork."""
    die_with_parent = lifetime.preexec()
    limit = plan().rlimit
    if limit is None or resource is None:
        return die_with_parent
    kind, hard = resource.RLIMIT_STACK, resource.getrlimit(resource.RLIMIT_STACK)[1]
    setrlimit = resource.setrlimit

    def start() -> None:
        setrlimit(kind, (limit, hard))
        if die_with_parent is not None:
            die_with_parent()

    return start


# A sandbox whose main-thread stack grew past this (a deep free touched it) is recycled
# after its run: Linux never gives a stack's pages back, so it would keep them resident.
RECYCLE_STACK = 8 * MIB  # the OS's default stack: what a sandbox had before this module
# Runs of fewer steps are not asked (`SandboxPool.run`): the read costs ~15–35 µs, and a
# value deep enough to grow the stack that far (~55,000 levels) takes far more to build.
STACK_CHECK_STEPS = 10_000


def stack_bytes(pid: int | None) -> int:
    """The size of process `pid`'s main-thread stack (Linux `VmStk`): how deep it has ever
    recursed, since it never shrinks; 0 where it cannot be read."""
    return status_bytes(pid, "VmStk:")


# What Pyodide writes on stderr when V8's stack overflowed inside Python (runner.mjs passes
# it through): its fatal-error banner, then the RangeError, then Python's stack.
_FATAL = "Pyodide has suffered a fatal error"
_OVERFLOW = "RangeError: Maximum call stack size exceeded"
_FLOW_FRAME = re.compile(r'File "<flow>", line (\d+) in ')


@dataclass(frozen=True)
class Overflow:
    """A sandbox that died of V8's stack overflowing: `line`, the innermost line of the
    generated module on Python's stack then (None when it was not printed)."""

    line: int | None

    def reason(self) -> str:
        """Why the process died, for the run's `worker-crashed` error."""
        kb = plan().v8_kb or V8_DEFAULT_KB
        levels = max(1, kb * 1024 // BYTES_PER_LEVEL // 1000) * 1000
        return (f"it ran out of stack ({kb // 1024 or 1} MiB): most likely a value nested about {levels:,} "
                "arrays or objects deep or more (a loop like `x = [x]`) was freed; "
                "keep values shallower than that (docs/sandbox.md, \"The stack\")")


def overflow_in(stderr: Sequence[str]) -> Overflow | None:
    """The stack overflow `stderr` (the process's last lines) reports, if it reports one."""
    text = "\n".join(stderr)
    start = text.rfind(_FATAL)
    if start < 0 or _OVERFLOW not in text[start:]:
        return None
    frames = _FLOW_FRAME.findall(text[start:])
    return Overflow(int(frames[0]) if frames else None)  # most recent call first

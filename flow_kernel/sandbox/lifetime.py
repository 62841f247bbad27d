"""How long the host's child processes live, and what they may see of the host.

- `die_with_parent`: a preexec function that asks Linux to SIGKILL the child when the
  process that started it dies (prctl PR_SET_PDEATHSIG), so sandboxes and `run` children
  do not outlive a killed kernel. Elsewhere it does nothing (a sandbox still exits when
  its stdin closes, which a dead kernel closes; a busy one does not).
- `make_undumpable`: the host process marks itself non-dumpable (prctl PR_SET_DUMPABLE 0)
  so that a child running as the same, unprivileged user cannot read its
  `/proc/<pid>/environ` (API keys) or memory. Root children keep CAP_SYS_PTRACE and
  could still read it: `run` children also get their own user namespace where the OS
  allows (`child_namespace`), which takes that capability away from them.
- `child_namespace`: the `unshare` prefix that gives a `run` child its own user, network,
  PID and mount namespaces (no network, no view of the host's processes, and the
  kernel kills everything in the PID namespace when its first process dies).

Measured on Linux 6.x as root: a child `cat /proc/<host>/environ` reads the keys with
or without non-dumpable (CAP_SYS_PTRACE) and is refused in a user namespace; as an
unprivileged user non-dumpable alone refuses it (docs/security.md).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import signal
import sys
from collections.abc import Callable

from flow_kernel.sandbox.node import first_unshare_that_runs

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4


@functools.cache
def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        function = libc.prctl
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_int
    prctl: Callable[..., int] = function
    return prctl


def die_with_parent() -> None:
    """Run in the child between fork and exec (`preexec_fn`): SIGKILL when the parent dies.
    The function is resolved before the fork, so the child only makes the one call."""
    prctl = _PRCTL
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def preexec() -> Callable[[], None] | None:
    """The preexec function to start a child with (None where it would do nothing)."""
    return die_with_parent if _PRCTL is not None else None


def make_undumpable() -> bool:
    """Mark this process non-dumpable (Linux); True when it was done. Called once when the
    kernel and the CLI start, before any key is read or any child started."""
    prctl = _prctl()
    if prctl is None:
        return False
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0


def is_dumpable() -> bool | None:
    prctl = _prctl()
    if prctl is None:
        return None
    return bool(prctl(3, 0, 0, 0, 0))  # PR_GET_DUMPABLE


@functools.cache
def child_namespace() -> list[str] | None:
    """`unshare` with a new user (the caller's uid mapped to itself), network, PID and mount namespace,
    a fresh /proc, and the child killed when `unshare` dies — if the OS allows it."""
    # --map-current-user (util-linux 2.38+) keeps the child's own uid inside; older ones
    # only know --map-root-user. Either way its capabilities hold in its namespace only.
    return first_unshare_that_runs([[user, "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
                                    for user in ("--map-current-user", "--map-root-user")])


_PRCTL = _prctl()

__all__ = ["child_namespace", "die_with_parent", "is_dumpable", "make_undumpable", "preexec"]

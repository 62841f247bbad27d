"""Figures of a process that Linux keeps in /proc: a sandbox's resident memory and its
main-thread stack (sandbox/process.py, sandbox/stack.py), and the benchmarks' memory rows."""

from __future__ import annotations

from pathlib import Path


def proc_kib(path: str | Path, key: str) -> int | None:
    """The kB figure on the line of a /proc file that starts with `key` (e.g. "VmRSS:" in
    /proc/PID/status, "Pss:" in /proc/PID/smaps_rollup); None when the process is gone, the
    file is unreadable or has no such line."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def status_bytes(pid: int | None, key: str) -> int:
    """A figure of /proc/PID/status in bytes (`key` like "VmRSS:", "VmStk:"); 0 where it
    cannot be read (no such process, or not Linux)."""
    kib = proc_kib(f"/proc/{pid}/status", key) if pid is not None else None
    return 0 if kib is None else kib * 1024

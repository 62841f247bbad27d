"""Memory of open notebooks: N Flow kernels started over jupyter_client, each after
`cells` small cells, with every process they started (their sandboxes), as PSS — pages
shared between processes (Node's and Python's code, the same files mapped) are counted
once across them, so the sum is what the notebooks take together. The `memory` section of
`flow bench` reports it, and tests/test_memory_budget.py holds one notebook to its
budget. Linux only (/proc)."""

from __future__ import annotations

import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from flow_kernel.bench.kernel import round_trip, start_kernel
from flow_kernel.bench.measure import Figures, descendants, pss_mb

SETUP = 'agent helper { model: "scripted", script: ["ok"] }'
SMALL_CELL = 'let x = len("abc") + 2\nx * 3'
BUDGET_MB = 200  # one notebook after 100 small cells, kernel + sandboxes (issue 34)


def kernel_pid(km: Any) -> int:
    provisioner = km.provisioner
    pid = getattr(provisioner, "pid", None) or provisioner.process.pid
    return int(pid)


def cpu_ticks(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime + stime
    return total


def settle(pids: list[int], quiet: float = 0.3, most: float = 10.0) -> None:
    """Wait until the processes have used no CPU for `quiet` seconds (at most `most`): the
    pool's spare has started and run its warm-up, and no V8 thread still compiles. A fixed
    0.5 s is too short: a spare warms up before it joins the pool (~1 s, more under load),
    and a reading taken mid-start counts its snapshot bytes and its compiler's memory (up
    to ~180 MB for ~1 s, then ~130)."""
    time.sleep(0.5)
    deadline = time.monotonic() + most
    ticks = cpu_ticks(pids)
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = cpu_ticks(pids)
        if now == ticks:
            return
        ticks = now


def notebooks_pss(count: int, cells: int = 100) -> Figures:
    """Start `count` kernels, run `cells` small cells in each (round robin, so they are
    open at once), let them go idle (`settle`), and read every process's PSS.
    Returns the total, the mean per notebook, and the mean of the kernels' and the
    sandboxes' parts."""
    with ExitStack() as stack:
        kernels = []
        for _ in range(count):
            cwd = stack.enter_context(tempfile.TemporaryDirectory())
            km, kc, _started = start_kernel("flow", cwd)
            stack.callback(km.shutdown_kernel, now=True)
            stack.callback(kc.stop_channels)
            kernels.append((kernel_pid(km), kc))
            round_trip(kc, SETUP)
        for _ in range(cells):
            for _pid, kc in kernels:
                round_trip(kc, SMALL_CELL)
        pids = [pid for pid, _kc in kernels]
        children = {pid: descendants(pid) for pid in pids}
        settle([*pids, *(c for cs in children.values() for c in cs)])
        children = {pid: descendants(pid) for pid in pids}
        kernel_part = sum(pss_mb(pid) for pid in pids)
        sandbox_part = sum(pss_mb(c) for cs in children.values() for c in cs)
    total = kernel_part + sandbox_part
    return {
        "notebooks": count,
        "cells": cells,
        "total_pss_mb": total,
        "per_notebook_pss_mb": total / count,
        "kernel_pss_mb": kernel_part / count,
        "sandboxes_pss_mb": sandbox_part / count,
        "sandbox_processes": sum(len(cs) for cs in children.values()),
    }

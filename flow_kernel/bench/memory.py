"""Memory section of `flow bench`: resident memory of a Flow kernel started over
jupyter_client, read from /proc (VmRSS), of the kernel process and of its sandboxes
(every process below it: the warm Node/Pyodide processes of the pool).

- kernel RSS idle: the kernel process after its first runs, waiting for a cell;
- sandbox RSS after a run: the largest sandbox process after those runs;
- RSS growth over 1,000 consecutive cells (an agent call and a little data each):
  kernel + sandboxes after the last cell against after the first 100 (the session's
  history of runs is full by then); with --quick after cell 200 against cell 100;
- PSS of one notebook after 100 small cells (kernel + its sandboxes), and of N notebooks
  open at once (10; 2 with --quick), per notebook (bench/notebooks.py).
Linux only (/proc); elsewhere the section reports that it cannot measure.
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time

from flow_kernel.bench.kernel import round_trip, start_kernel
from flow_kernel.bench.measure import Figures, Row, Target, descendants, rss_mb
from flow_kernel.bench.notebooks import BUDGET_MB, kernel_pid, notebooks_pss, settle
from flow_kernel.runtime.session import HISTORY

NAME = "memory"

SETUP = 'agent helper { model: "scripted", script: ["ok"] }'
CELL = 'let words = map(range(200), i => "w${i % 7}")\n[len(groupBy(words, w => w)), helper("hi")]'


def _sandboxes(pid: int) -> list[float]:
    return [rss_mb(child) for child in descendants(pid)]


def measure(quick: bool) -> Figures:
    if not sys.platform.startswith("linux"):
        return {"skipped": "reading RSS needs Linux /proc"}
    # The first reading once the session's run history (its last HISTORY runs with their
    # events) is full: what grows after it is what a long session keeps without a bound.
    first = HISTORY
    cells = 2 * first if quick else 10 * first
    with tempfile.TemporaryDirectory() as cwd:
        km, kc, _started = start_kernel("flow", cwd)
        try:
            pid = kernel_pid(km)
            round_trip(kc, SETUP)
            for _warm in range(3):
                round_trip(kc, CELL)
            settle(descendants(pid))  # let the pool's spare finish starting: idle means idle
            kernel_idle = rss_mb(pid)
            sandboxes = _sandboxes(pid)
            samples: dict[int, tuple[float, float]] = {}
            started = time.perf_counter()
            for n in range(1, cells + 1):
                round_trip(kc, CELL)
                if n in (first, cells):
                    samples[n] = (rss_mb(pid), sum(_sandboxes(pid)))
            elapsed = time.perf_counter() - started
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    gc.collect()
    (kernel_first, sandbox_first), (kernel_last, sandbox_last) = samples[first], samples[cells]
    total_first, total_last = kernel_first + sandbox_first, kernel_last + sandbox_last
    one = notebooks_pss(1, 100)
    at_once = notebooks_pss(2 if quick else 10, 100)
    return {
        "pss_one_notebook": one,
        "pss_notebooks_at_once": at_once,
        "cells": cells,
        "first_cells": first,
        "cells_per_s": cells / elapsed,
        "kernel_rss_idle_mb": kernel_idle,
        "sandbox_processes": len(sandboxes),
        "sandbox_rss_after_run_mb": max(sandboxes, default=0.0),
        "sandbox_rss_all_mb": sum(sandboxes),
        "rss_after_first_mb": {"kernel": kernel_first, "sandboxes": sandbox_first, "total": total_first},
        "rss_after_last_mb": {"kernel": kernel_last, "sandboxes": sandbox_last, "total": total_last},
        "rss_growth": (total_last - total_first) / total_first,
        "kernel_rss_growth": (kernel_last - kernel_first) / kernel_first,
    }


def rows(f: Figures) -> list[Row]:
    if "skipped" in f:
        return [Row("memory", f"skipped: {f['skipped']}")]
    first, last = f["rss_after_first_mb"], f["rss_after_last_mb"]
    return [
        Row("kernel process RSS, idle after its first runs", f["kernel_rss_idle_mb"], "MB", "{:.0f}"),
        Row(f"sandbox process RSS after a run (largest of {f['sandbox_processes']})", f["sandbox_rss_after_run_mb"], "MB", "{:.0f}"),
        Row(f"kernel + sandboxes after cell {f['first_cells']:,}",
            f"{first['total']:.0f} MB (kernel {first['kernel']:.0f}, sandboxes {first['sandboxes']:.0f})"),
        Row(f"kernel + sandboxes after cell {f['cells']:,}",
            f"{last['total']:.0f} MB (kernel {last['kernel']:.0f}, sandboxes {last['sandboxes']:.0f})"),
        Row("  growth (kernel alone)", f"{f['rss_growth'] * 100:+.1f} % ({f['kernel_rss_growth'] * 100:+.1f} %)"),
        Row("cells/s over those cells (agent call + data each)", f["cells_per_s"], "cells/s", "{:.0f}"),
        *(_pss_row(f[key]) for key in ("pss_one_notebook", "pss_notebooks_at_once")),
    ]


def _pss_row(n: Figures) -> Row:
    label = f"PSS of {n['notebooks']} notebook{'s' if n['notebooks'] > 1 else ''} after {n['cells']} small cells"
    return Row(label, f"{n['total_pss_mb']:.0f} MB ({n['per_notebook_pss_mb']:.0f} a notebook: kernel "
                      f"{n['kernel_pss_mb']:.0f}, sandboxes {n['sandboxes_pss_mb']:.0f}; "
                      f"{n['sandbox_processes']} sandbox processes)")


TARGETS = [
    Target(
        "PSS of a notebook after 100 cells (kernel + sandboxes)",
        lambda f: f"{f['pss_one_notebook']['per_notebook_pss_mb']:.0f} MB",
        lambda f: f"{f['pss_notebooks_at_once']['per_notebook_pss_mb']:.0f} MB each, "
                  f"{f['pss_notebooks_at_once']['notebooks']} at once",
        lambda f: float(f["pss_one_notebook"]["per_notebook_pss_mb"]),
        BUDGET_MB * 1.25,
        unit="MB",
        goal=BUDGET_MB,
    ),
    Target(
        "sandbox RSS after a run",
        lambda f: f"{f['sandbox_rss_after_run_mb']:.0f} MB",
        lambda f: "—",
        lambda f: float(f["sandbox_rss_after_run_mb"]),
        220,
        unit="MB",
        goal=150,
    ),
    Target(
        "kernel RSS idle",
        lambda f: f"{f['kernel_rss_idle_mb']:.0f} MB",
        lambda f: "—",
        lambda f: float(f["kernel_rss_idle_mb"]),
        400,
        unit="MB",
    ),
    Target(
        "RSS growth over 1,000 consecutive cells",
        lambda f: f"{f['rss_after_last_mb']['total']:.0f} MB after cell {f['cells']:,}",
        lambda f: f"{f['rss_after_first_mb']['total']:.0f} MB after cell {f['first_cells']:,}",
        lambda f: float(f["rss_growth"]) * 100,
        10,
        unit="%",
    ),
    Target(
        "  … the kernel process alone",
        lambda f: f"{f['rss_after_last_mb']['kernel']:.0f} MB after cell {f['cells']:,}",
        lambda f: f"{f['rss_after_first_mb']['kernel']:.0f} MB after cell {f['first_cells']:,}",
        lambda f: float(f["kernel_rss_growth"]) * 100,
        1,
        unit="%",
        goal=1,
    ),
]

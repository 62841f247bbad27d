"""What every benchmark section shares: timing after a warm-up, median/min/max, the rows
of the report, the targets (docs/performance.md, "The figures"), and the process memory readings.

A section is a module with `NAME`, `measure(quick) -> Figures`, `rows(figures) -> [Row]`
and `TARGETS`; `flow_kernel.bench.run` runs them in one process and prints one report.
Nothing here asserts a time: targets are reported as met or not, never raised.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flow_kernel.lang.compiler import Compiled, compile_source
from flow_kernel.sandbox.procfs import proc_kib
from flow_kernel.source import SourceFile

Stats = dict[str, float]  # {"median", "min", "max"}
Figures = dict[str, Any]  # one section's measurements, as written to --json


def stats(samples: list[float], scale: float = 1.0) -> Stats:
    return {"median": statistics.median(samples) * scale, "min": min(samples) * scale, "max": max(samples) * scale}


def timed(fn: Callable[[], object], repeat: int, warmup: int = 1,
          clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Seconds per call of `fn`, `repeat` times after `warmup` untimed calls. A full
    collection first, so that one run's garbage is not charged to the next. `clock`:
    `time.process_time` for work that only this process does (on a shared machine, the
    wall clock also counts the time other processes had the CPU)."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        gc.collect()
        started = clock()
        fn()
        samples.append(clock() - started)
    return samples


async def timed_async(fn: Callable[[], Awaitable[object]], repeat: int, warmup: int = 1) -> list[float]:
    for _ in range(warmup):
        await fn()
    samples = []
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - started)
    return samples


def compile_flow(source: str) -> Compiled:
    compiled = compile_source(SourceFile("bench.flow", source))
    if not compiled.ok:
        raise SystemExit("benchmark program does not compile: " + "; ".join(d.message for d in compiled.check.errors))
    return compiled


# -- memory ------------------------------------------------------------------------------


def _proc_mb(path: str, key: str) -> float:
    """The kB figure on the line of a /proc file that starts with `key`, in MiB; 0 when the
    process is gone or the file unreadable."""
    kib = proc_kib(path, key)
    return 0.0 if kib is None else kib / 1024


def rss_mb(pid: int) -> float:
    """Resident set size of one process (Linux /proc), in MiB; 0 when it is gone."""
    return _proc_mb(f"/proc/{pid}/status", "VmRSS:")


def pss_mb(pid: int) -> float:
    """Proportional set size of one process (Linux /proc smaps_rollup), in MiB: its private
    pages plus its share of the pages it shares (so the PSS of several processes adds up
    to what they take together); 0 when it is gone or unreadable."""
    return _proc_mb(f"/proc/{pid}/smaps_rollup", "Pss:")


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (the kernel's sandboxes), read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])  # the name in parentheses may hold spaces
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


# -- the report --------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One detail line: a label and either timing stats or a plain value."""

    label: str
    value: Stats | float | str
    unit: str = ""
    fmt: str = "{:.1f}"

    def text(self) -> str:
        v = self.value
        if isinstance(v, str):
            shown = v
        elif isinstance(v, dict):
            f = self.fmt
            shown = f"{f.format(v['median'])} {self.unit}  ({f.format(v['min'])}–{f.format(v['max'])})"
        else:
            shown = f"{self.fmt.format(v)} {self.unit}"
        return f"  {self.label:<52} {shown.rstrip()}"


@dataclass(frozen=True)
class Target:
    """A target figure and its bound: `value(figures)` ≤ `bound` (or ≥ when `at_least`);
    `goal`, when set, is a tighter bound for the same figure."""

    figure: str
    measured: Callable[[Figures], str]
    compared: Callable[[Figures], str]
    value: Callable[[Figures], float]
    bound: float
    at_least: bool = False
    unit: str = "×"
    goal: float | None = None  # the tighter bound, when the figure has one

    def met(self, figures: Figures) -> bool:
        return self.within(self.value(figures), self.bound)

    def within(self, v: float, bound: float) -> bool:
        return v >= bound if self.at_least else v <= bound

    def goal_met(self, figures: Figures) -> bool | None:
        return None if self.goal is None else self.within(self.value(figures), self.goal)

    def shown(self, v: float) -> str:
        if self.unit == "×":
            return f"{v:.2f}×"
        return f"{v:.1f} %" if self.unit == "%" else f"{v:,.0f} {self.unit}"

    def bound_text(self, bound: float | None = None) -> str:
        if bound is None:
            bound = self.bound
        shown = f"{bound:g}×" if self.unit == "×" else f"{bound:,g} {self.unit}"
        return ("≥ " if self.at_least else "≤ ") + shown

    def goal_text(self) -> str:
        return "—" if self.goal is None else self.bound_text(self.goal)

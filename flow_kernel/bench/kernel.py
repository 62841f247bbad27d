"""Kernel section of `flow bench`, over jupyter_client, medians (min–max) after a warm-up:
- the first Flow cell after the kernel starts (execute → reply and idle, sent as soon as
  the kernel answers `kernel_info`), against a cold `loadPyodide` in a fresh Node process;
- the warm round trip of a trivial Flow cell against an IPython kernel's `1+1`: execute →
  its reply and its `idle` both in (the target's figure: by then a front end has the reply
  and every output, whichever order the two channels deliver them in); execute → reply
  alone beside it. The reply may now come before the outputs (docs/kernel.md), so the
  reply alone would flatter the kernel.
`round_trip` and `start_kernel` are shared with the memory section.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import tempfile
import time
from typing import Any

from flow_kernel.bench.measure import Figures, Row, Target, stats


def round_trip(kc: Any, code: str) -> float:
    """Seconds from the execute request until its reply and its `idle` are both in."""
    return round_trips(kc, code)[1]


def round_trips(kc: Any, code: str) -> tuple[float, float]:
    """Seconds from the execute request to its reply, and until its `idle` is in too (idle
    follows the cell's outputs on iopub: by then a front end has the reply and all of them)."""
    started = time.perf_counter()
    msg_id = kc.execute(code)
    while True:
        reply = kc.get_shell_msg(timeout=120)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    elapsed = time.perf_counter() - started
    if reply["content"]["status"] != "ok":
        raise SystemExit(f"benchmark cell failed: {reply['content']}")
    while True:  # drain its outputs, up to idle
        msg = kc.get_iopub_msg(timeout=120)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status" \
                and msg["content"]["execution_state"] == "idle":
            return elapsed, time.perf_counter() - started


def start_kernel(name: str, cwd: str) -> tuple[Any, Any, float]:
    from jupyter_client.manager import start_new_kernel

    started = time.perf_counter()
    # The kernels' stderr (ipykernel's "running over TCP without encryption") is noise here.
    km, kc = start_new_kernel(kernel_name=name, cwd=cwd, startup_timeout=120, stderr=subprocess.DEVNULL)
    return km, kc, time.perf_counter() - started


def _cold_load_pyodide() -> float:
    from flow_kernel.sandbox.process import SandboxProcess

    async def once() -> float:
        started = time.perf_counter()
        process = await SandboxProcess.start(snapshot=None)
        elapsed = time.perf_counter() - started
        await process.close()
        return elapsed

    return asyncio.run(once())


NAME = "kernel"


def measure(quick: bool) -> Figures:
    repeat = 20 if quick else 200
    starts = 1 if quick else 3
    figures: Figures = {"repeat": repeat}
    with tempfile.TemporaryDirectory() as cwd:
        first_cells, kernel_starts, flow, flow_reply = [], [], [], []
        for attempt in range(starts):
            km, kc, started = start_kernel("flow", cwd)
            kernel_starts.append(started)
            first_cells.append(round_trip(kc, "1 + 1"))
            if attempt == starts - 1:  # the warm round trips on the last kernel
                for _warm in range(5):
                    round_trip(kc, "1 + 1")
                flow_reply, flow = map(list, zip(*(round_trips(kc, "1 + 1") for _ in range(repeat)), strict=True))
            kc.stop_channels()
            km.shutdown_kernel(now=True)
        km, kc, _started = start_kernel("python3", cwd)
        for _warm in range(5):
            round_trip(kc, "1+1")
        ipython_reply, ipython = map(list, zip(*(round_trips(kc, "1+1") for _ in range(repeat)), strict=True))
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    cold = [_cold_load_pyodide() for _ in range(starts)]
    figures["kernel_start_s"] = stats(kernel_starts)
    figures["first_cell_ms"] = stats(first_cells, 1000)
    figures["cold_load_pyodide_ms"] = stats(cold, 1000)
    figures["ratio_first_cell_to_cold_pyodide"] = statistics.median(first_cells) / statistics.median(cold)
    figures["flow_cell_ms"] = stats(flow, 1000)
    figures["ipython_cell_ms"] = stats(ipython, 1000)
    figures["flow_cell_reply_ms"] = stats(flow_reply, 1000)
    figures["ipython_cell_reply_ms"] = stats(ipython_reply, 1000)
    figures["ratio_flow_to_ipython"] = statistics.median(flow) / statistics.median(ipython)
    return figures


def rows(f: Figures) -> list[Row]:
    return [
        Row("Flow kernel start (to kernel_info reply)", f["kernel_start_s"], "s", "{:.2f}"),
        Row("first Flow cell after start (execute → reply and idle)", f["first_cell_ms"], "ms"),
        Row("cold loadPyodide, fresh Node process", f["cold_load_pyodide_ms"], "ms"),
        Row(f"warm trivial Flow cell round trip ({f['repeat']} cells)", f["flow_cell_ms"], "ms", "{:.2f}"),
        Row("IPython kernel 1+1 round trip", f["ipython_cell_ms"], "ms", "{:.2f}"),
        *([Row("… the Flow cell, execute → reply alone", f["flow_cell_reply_ms"], "ms", "{:.2f}"),
           Row("… IPython 1+1, execute → reply alone", f["ipython_cell_reply_ms"], "ms", "{:.2f}")]
          if "flow_cell_reply_ms" in f else []),
    ]


TARGETS = [
    Target(
        "first Flow cell after kernel start",
        lambda f: f"{f['first_cell_ms']['median']:,.0f} ms",
        lambda f: f"cold loadPyodide {f['cold_load_pyodide_ms']['median']:,.0f} ms",
        lambda f: float(f["ratio_first_cell_to_cold_pyodide"]),
        0.35,
        goal=0.08,
    ),
    Target(
        "warm trivial Flow cell round trip",
        lambda f: f"{f['flow_cell_ms']['median']:.2f} ms",
        lambda f: f"IPython 1+1 {f['ipython_cell_ms']['median']:.2f} ms",
        lambda f: float(f["ratio_flow_to_ipython"]),
        3.0,
        goal=0.5,  # issue 34 (issue 23's was 1.0)
    ),
]

"""Kernel benchmark: `python -m flow_kernel.bench.kernel [--quick] [--json FILE]`.

Over jupyter_client, in one run:
- the first Flow cell after the kernel starts (execute → reply, sent as soon as the kernel
  answers `kernel_info`), against a cold `loadPyodide` in a fresh Node process;
- the warm round trip of a trivial Flow cell against an IPython kernel's `1+1`.
Medians (min–max) after a warm-up; nothing asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from typing import Any

from flow_kernel.bench.sandbox import _stats


def _round_trip(kc: Any, code: str) -> float:
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
            return elapsed


def _kernel(name: str, cwd: str) -> tuple[Any, Any, float]:
    from jupyter_client.manager import start_new_kernel

    started = time.perf_counter()
    km, kc = start_new_kernel(kernel_name=name, cwd=cwd, startup_timeout=120)
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


def measure(quick: bool) -> dict[str, Any]:
    repeat = 20 if quick else 200
    starts = 1 if quick else 3
    figures: dict[str, Any] = {"repeat": repeat}
    with tempfile.TemporaryDirectory() as cwd:
        first_cells, kernel_starts, flow = [], [], []
        for attempt in range(starts):
            km, kc, started = _kernel("flow", cwd)
            kernel_starts.append(started)
            first_cells.append(_round_trip(kc, "1 + 1"))
            if attempt == starts - 1:  # the warm round trips on the last kernel
                for _warm in range(5):
                    _round_trip(kc, "1 + 1")
                flow = [_round_trip(kc, "1 + 1") for _ in range(repeat)]
            kc.stop_channels()
            km.shutdown_kernel(now=True)
        km, kc, _started = _kernel("python3", cwd)
        for _warm in range(5):
            _round_trip(kc, "1+1")
        ipython = [_round_trip(kc, "1+1") for _ in range(repeat)]
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    cold = [_cold_load_pyodide() for _ in range(starts)]
    figures["kernel_start_s"] = _stats(kernel_starts)
    figures["first_cell_ms"] = {k: v * 1000 for k, v in _stats(first_cells).items()}
    figures["cold_load_pyodide_ms"] = {k: v * 1000 for k, v in _stats(cold).items()}
    figures["ratio_first_cell_to_cold_pyodide"] = statistics.median(first_cells) / statistics.median(cold)
    figures["flow_cell_ms"] = {k: v * 1000 for k, v in _stats(flow).items()}
    figures["ipython_cell_ms"] = {k: v * 1000 for k, v in _stats(ipython).items()}
    figures["ratio_flow_to_ipython"] = statistics.median(flow) / statistics.median(ipython)
    return figures


def report(f: dict[str, Any]) -> str:
    def line(name: str, s: dict[str, float], unit: str, fmt: str = "{:.1f}") -> str:
        return f"{name:<44} {fmt.format(s['median'])} {unit}  ({fmt.format(s['min'])}–{fmt.format(s['max'])})"

    return "\n".join([
        line("Flow kernel start (to kernel_info reply)", f["kernel_start_s"], "s", "{:.2f}"),
        line("first Flow cell after start", f["first_cell_ms"], "ms"),
        line("cold loadPyodide, fresh Node", f["cold_load_pyodide_ms"], "ms"),
        f"{'  ratio first cell / cold loadPyodide':<44} {f['ratio_first_cell_to_cold_pyodide']:.2f}×",
        line("warm trivial Flow cell round trip", f["flow_cell_ms"], "ms", "{:.2f}"),
        line("IPython kernel 1+1 round trip", f["ipython_cell_ms"], "ms", "{:.2f}"),
        f"{'  ratio Flow / IPython':<44} {f['ratio_flow_to_ipython']:.2f}×",
    ])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m flow_kernel.bench.kernel", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    figures = measure(args.quick)
    if not args.quiet:
        print(report(figures))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=2)
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])

"""The Flow kernel as `python -m flow_kernel` starts it, with one addition for
tests/kernel/test_kernel_growth.py: on SIGUSR1 it collects its garbage and writes what it
keeps to `$FLOW_GROWTH_PROBE_OUT/<n>.json` (n counting from 0) — gc-tracked objects,
pymalloc's allocated blocks, the C allocator's bytes in use, SQLite's memory, once the history
has written the cells it keeps (`_settle_history`). The signal hands the report to the
kernel's event loop, which makes it between two of its turns."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import json
import os
import signal
import sys
from pathlib import Path
from types import FrameType


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _malloc_in_use() -> int | None:
    """glibc's bytes in use (mallinfo2, glibc ≥ 2.33), None elsewhere."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        mallinfo2 = libc.mallinfo2
    except (OSError, AttributeError, TypeError):
        return None
    mallinfo2.restype = _MallInfo2
    return int(mallinfo2().uordblks)


def _sqlite_in_use() -> int | None:
    """SQLite's bytes in use in this process (sqlite3_memory_used), None when the library
    cannot be loaded by name (a Python that links it statically)."""
    import sqlite3  # noqa: F401 - the kernel's history loads it; so that its library is this one

    name = ctypes.util.find_library("sqlite3")
    if name is None:
        return None
    try:
        used = ctypes.CDLL(name).sqlite3_memory_used
    except (OSError, AttributeError):
        return None
    used.restype = ctypes.c_int64
    return int(used())


def _on_signal(_signum: int, _frame: FrameType | None) -> None:
    """Report on the kernel's loop, after what the loop already has to do (the end of the
    cell's frozen-heap window, runtime/gc_policy.py), never in the middle of a turn."""
    asyncio.get_running_loop().call_soon_threadsafe(_report)


def _report(tries: int = 100) -> None:
    if gc.get_freeze_count() and tries:  # a run's window still open: counted once it closes
        asyncio.get_running_loop().call_later(0.01, _report, tries - 1)
        return
    _settle_history()
    out = Path(os.environ["FLOW_GROWTH_PROBE_OUT"])
    number = len(list(out.glob("*.json")))
    gc.collect()
    figures = {"objects": len(gc.get_objects()) + gc.get_freeze_count(), "blocks": sys.getallocatedblocks(),
               "malloc": _malloc_in_use(), "sqlite": _sqlite_in_use()}
    partial = out / f"{number}.part"
    partial.write_text(json.dumps(figures))
    partial.rename(out / f"{number}.json")


def _settle_history() -> None:
    """The cells the history still keeps to write together (kernel/history.py `keep_cell`,
    at most `BATCH_WAIT` of them) written before counting: a reading is what the kernel
    holds per cell at rest, not the text of the cells of its last quarter second."""
    from flow_kernel.kernel.app import FlowKernelApp

    history = FlowKernelApp.instance().kernel.history
    history.hand_over_kept()
    history.drain()


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, _on_signal)
    from flow_kernel.__main__ import main

    sys.exit(main(sys.argv[1:]))

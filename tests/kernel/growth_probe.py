"""The Flow kernel as `python -m flow_kernel` starts it, with one addition for
tests/kernel/test_kernel_growth.py: on SIGUSR1 it collects its garbage and writes what it
keeps to `$FLOW_GROWTH_PROBE_OUT/<n>.json` (n counting from 0) — gc-tracked objects,
pymalloc's allocated blocks, the C allocator's bytes in use, SQLite's memory. The handler
runs on the main thread between two bytecodes, while the kernel waits for a message."""

from __future__ import annotations

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


def _report(_signum: int, _frame: FrameType | None) -> None:
    out = Path(os.environ["FLOW_GROWTH_PROBE_OUT"])
    number = len(list(out.glob("*.json")))
    gc.collect()
    figures = {"objects": len(gc.get_objects()), "blocks": sys.getallocatedblocks(),
               "malloc": _malloc_in_use(), "sqlite": _sqlite_in_use()}
    partial = out / f"{number}.part"
    partial.write_text(json.dumps(figures))
    partial.rename(out / f"{number}.json")


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, _report)
    from flow_kernel.__main__ import main

    sys.exit(main(sys.argv[1:]))

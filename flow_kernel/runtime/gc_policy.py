"""Runs keep the objects that were alive before them out of the cyclic collector's way.

A run records every event it makes (two per agent call, each a few dicts and lists),
and they stay alive until the run ends. That growth triggers full collections in the
middle of the run, and each of them scans the whole heap — the kernel's, IPython's,
every module's objects — to find nothing: measured, two full collections took about
half the host's time of 10,000 agent calls. `gc.freeze()` moves the objects alive at
the start of the first running run into the permanent generation (a list splice, not
a scan), so collections during runs only look at what the runs made; `gc.unfreeze()`
gives them back when the last run ends, after one collection of what the runs made (so
their garbage cycles do not wait for a full collection). An application that froze the
heap itself is left alone.

That last collection matters: left to the thresholds, what the runs left in reference
cycles waited for a full collection that the heap given back by `unfreeze()` kept
postponing, and the kernel grew ~40 KB a cell (71 → 106 MB over 900 cells; flat with it).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_running = 0  # runs in progress in this process
_froze = False  # whether the first of them froze the heap (and the last must unfreeze it)


@contextmanager
def older_objects_frozen() -> Iterator[None]:
    global _running, _froze
    with _lock:
        if _running == 0:
            _froze = gc.get_freeze_count() == 0
            if _froze:
                gc.freeze()
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0 and _froze:
                # What the runs left in reference cycles (tasks, frames, callbacks) is freed
                # now, while the older heap is still frozen: a collection that scans only what
                # the runs made.
                gc.collect()
                gc.unfreeze()
                _froze = False

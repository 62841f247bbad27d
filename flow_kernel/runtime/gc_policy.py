"""Runs keep the objects that were alive before them out of the cyclic collector's way.

A run records every event it makes (two per agent call, each a few dicts; their order
keys are tuples, which a collection untracks: events/vocabulary.py, "The kept form"),
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

While runs go, the oldest generation's threshold is raised (`RUN_FULL_THRESHOLD` young
collections between two full ones, instead of CPython's 10). With the older heap frozen,
CPython's other condition for a full collection (what waits in the oldest generation is
25 % more than what it held after the last one) is measured against the runs' own
objects only, so the default threshold alone decided: a 10,000-call run made a full
collection in its middle that scanned its kept events (~66,000 containers) to find
nothing, and the end's collection scanned them again. The young generations still
collect every 700 allocations, so a cycle that dies young is freed as before; one that
survives into the oldest generation waits at most for the run's end (or for
`RUN_FULL_THRESHOLD` young collections). The thresholds the application had are restored
when the last run ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_running = 0  # runs in progress in this process
_froze = False  # whether the first of them froze the heap (and the last must unfreeze it)
_thresholds: tuple[int, ...] = ()  # the application's, while runs go with the raised one
RUN_FULL_THRESHOLD = 100  # young (generation-1) collections between two full ones during runs


@contextmanager
def older_objects_frozen() -> Iterator[None]:
    """The body runs with the older heap frozen and full collections rarer (see the module
    docstring); when the last body in progress ends, what the runs left in reference cycles
    is collected and the heap and the thresholds are given back."""
    global _running, _froze, _thresholds
    with _lock:
        if _running == 0:
            _froze = gc.get_freeze_count() == 0
            if _froze:
                gc.freeze()
                _thresholds = gc.get_threshold()
                young, middle, oldest = _thresholds
                gc.set_threshold(young, middle, max(oldest, RUN_FULL_THRESHOLD))
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
                gc.set_threshold(*_thresholds)
                _froze = False

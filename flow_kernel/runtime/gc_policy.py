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

A run's caller need not wait for that last collection (`collect_later=True`, the runs of
runtime/run.py): on an event loop it runs on the loop's next turn, after the caller has
its outcome. If another run starts first, the heap stays frozen for it and the collection
still runs on that turn, while the new run waits for its sandbox; the older heap is given
back when no run is left.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_running = 0  # runs in progress in this process
_froze = False  # whether the first of them froze the heap (and the last must unfreeze it)
_thresholds: tuple[int, ...] = ()  # the application's, while runs go with the raised one
_collect_due: asyncio.AbstractEventLoop | None = None  # the loop whose next turn collects (`collect_later`)
RUN_FULL_THRESHOLD = 100  # young (generation-1) collections between two full ones during runs


@contextmanager
def older_objects_frozen(collect_later: bool = False) -> Iterator[None]:
    """The body runs with the older heap frozen and full collections rarer (see the module
    docstring); when the last body in progress ends, what the runs left in reference cycles
    is collected and the heap and the thresholds are given back — with `collect_later` and
    a running event loop, on that loop's next turn instead of before the body's caller
    resumes."""
    global _running, _froze, _thresholds, _collect_due
    with _lock:
        if _running == 0 and _collect_due is not None and _collect_due is not _running_loop():
            _collect_and_give_back()  # its loop stopped without that turn, or this is another loop
        if _running == 0 and _collect_due is None:
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
            if _running == 0 and _froze and _collect_due is None:
                loop = _running_loop() if collect_later else None
                if loop is not None:
                    _collect_due = loop
                    loop.call_soon(_collect_due_now)
                else:
                    _collect_and_give_back()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _collect_due_now() -> None:
    """The deferred last collection: what the ended runs left is collected; the heap and the
    thresholds are given back unless a run started meanwhile (its end does that)."""
    global _collect_due
    with _lock:
        if _collect_due is None:
            return
        _collect_due = None
        if _running == 0:
            _collect_and_give_back()
        else:
            gc.collect()


def _collect_and_give_back() -> None:
    """Called with the lock held, when no run is left: what the runs left in reference
    cycles (tasks, frames, callbacks) is freed while the older heap is still frozen — a
    collection that scans only what the runs made — then the heap and thresholds go back."""
    global _froze, _collect_due
    _collect_due = None
    gc.collect()
    gc.unfreeze()
    gc.set_threshold(*_thresholds)
    _froze = False

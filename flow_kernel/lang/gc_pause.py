"""`no_cyclic_gc`: the cyclic collector paused while the front end builds a big module.

Checking or generating a big module makes hundreds of thousands of objects (tokens, spans,
nodes, types), most of them alive until the end; the collector would rescan them over and
over (it took more time than the generation itself, and a third of a check). Nothing made
here is a garbage cycle worth finding early (tests/lang/test_gc_pause.py: a check leaves
none).

Resumed the plain way, the collector's first young collection still scans everything the
pause made (~89,000 objects after a check of the bench's 5,022 lines: ~25 ms, a seventh of
the check), only to move it all to the next generation, where the next middle collection
scans it again. So when the outermost pause ends, what it made goes to the oldest
generation at once, without a scan: `gc.freeze()` + `gc.unfreeze()` is two list splices
(young generations → permanent → oldest). Full collections still scan it, as they would
have after two promotions. Before the pause the young generations are collected once, so
that only what the pause made skips the young collections (the caller's young garbage is
collected, not promoted).

Only when nobody froze the heap (`gc.get_freeze_count() == 0`): `unfreeze()` would give
back another's frozen objects (the kernel's cell window, runtime/gc_policy.py, or an
application's pre-fork freeze); there the young collection is paid as before.

Threads: one depth count under a lock, so the first pause to start records whether the
collector was on, and the last to end restores it (and settles); the collector is on
again whenever the caller had it on, whatever is raised."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0  # pauses in progress in this process
_resume = False  # whether the outermost pause turned the collector off (and must turn it on)


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    global _depth, _resume
    with _lock:
        first = _depth == 0
        if first:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        if first and _resume and gc.get_freeze_count() == 0:
            # The caller's young objects: collected, not promoted when the pause ends. Outside
            # the lock and after the count: a finalizer it runs may check (a nested pause).
            gc.collect(1)
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                _resume = False
                if gc.get_freeze_count() == 0:
                    gc.freeze()  # every generation → permanent (a splice; young count reset)
                    gc.unfreeze()  # permanent → oldest (a splice)
                gc.enable()

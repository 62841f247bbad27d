"""Completion and inspection off the kernel's event loop, within a time budget.

Both run the whole checker on the cell being typed (assist.py). ipykernel handles shell
messages one at a time, so a slow check held back every later request, a trivial cell
included, and on the loop an interrupt could not even be delivered (a catastrophic
regex once made the checker take tens of seconds). Here the check runs in a
worker thread on a snapshot of the session's declarations, and a reply that is not ready
within `BUDGET_S` is an empty one: the loop answers the next request at once, and the
abandoned check ends on its own (the checker has no I/O and no side effects).

Since patterns run on RE2, no regex makes the checker slow; the budget bounds the rest
(a very large cell)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from flow_kernel.kernel.assist import complete, inspect
from flow_kernel.lang.session_scope import SessionScope

JSON = dict[str, Any]

BUDGET_S = 0.5  # an answer later than this is no help to someone typing
# Its own two threads: a pile of abandoned checks waits here, not in the loop's default
# executor that the rest of the kernel uses.
_WORKERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="flow-assist")


def _snapshot(scope: SessionScope) -> SessionScope:
    # A cell that runs meanwhile commits to the live scope; the thread reads its own copy.
    return dataclasses.replace(scope, decls=dict(scope.decls), bindings=dict(scope.bindings))


def _cursor(code: str, cursor_pos: Any) -> int:
    try:
        return max(0, min(int(cursor_pos), len(code)))
    except (TypeError, ValueError):
        return len(code)


async def _within(work: Callable[[], JSON], fallback: JSON, budget: float) -> JSON:
    future = asyncio.get_running_loop().run_in_executor(_WORKERS, work)
    try:
        return await asyncio.wait_for(future, budget)
    except TimeoutError:
        return fallback


async def complete_within(code: str, cursor_pos: Any, scope: SessionScope, magics: Sequence[str] = (),
                          budget: float = BUDGET_S) -> JSON:
    """`assist.complete`, or no matches when it takes longer than `budget` seconds."""
    cursor = _cursor(code, cursor_pos)
    empty: JSON = {"matches": [], "cursor_start": cursor, "cursor_end": cursor, "metadata": {}}
    work = functools.partial(complete, code, cursor_pos, _snapshot(scope), tuple(magics))
    return await _within(work, empty, budget)


async def inspect_within(code: str, cursor_pos: Any, scope: SessionScope, detail_level: int = 0,
                         budget: float = BUDGET_S) -> JSON:
    """`assist.inspect`, or "not found" when it takes longer than `budget` seconds."""
    work = functools.partial(inspect, code, cursor_pos, _snapshot(scope), detail_level)
    return await _within(work, {"found": False, "data": {}, "metadata": {}}, budget)

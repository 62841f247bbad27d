"""How a run's concurrent code runs (`parallel`, `parallelMap`, `async` tasks): each task with
the watchdog's interrupt caught inside it, side by side and fail-closed, and a failure that
names where it happened (`details.where`) or how many steps a fan-out needs.

Shipped into Pyodide as source: imports only the standard library and the package."""

from __future__ import annotations

import asyncio

from .errors import FlowError


class Interrupted(Exception):
    """The watchdog's KeyboardInterrupt, caught inside the task it hit."""


async def where(frame, coro):
    """Await `coro`; a Flow error escaping it gains `frame` (an item of `parallelMap`, a
    branch of `parallel`, a task) at the front of its `details.where`, so the failure report
    names where it happened, outermost first (runtime.md §5). Items count from 1."""
    try:
        return await coro
    except FlowError as exc:
        add_where(exc, frame)
        raise


def add_where(exc, frame):
    """Put `frame` at the front of `exc`'s `details.where`."""
    inner = exc.details.get("where") if isinstance(exc.details, dict) else None
    exc.details = {**(exc.details if isinstance(exc.details, dict) else {}),
                   "where": [frame, *(inner if isinstance(inner, list) else [])]}


def steps_hint(exc, frame, items, begun, now, started):
    """A `steps` limit that stops a `parallelMap` says how many steps the whole fan-out
    needs at the rate its started items used them (`details.needed`), once: the
    innermost `parallelMap` whose frame holds the limit adds it."""
    details = exc.details if isinstance(exc.details, dict) else {}
    if exc.code != "limit-exceeded" or details.get("limit") != "steps" or "needed" in details \
            or details.get("workflow") != frame.cap_name or not started:
        return
    per_item = -(-(now - begun) // started)
    needed = (begun - (frame.cap - frame.cap_limit)) + per_item * items
    exc.details = {**details, "needed": needed}
    exc.message = (f"{exc.message}: this `parallelMap` of {items} items takes about {per_item} steps an item; "
                   f"set `steps: {needed}` in the `limits` of `{frame.cap_name}`")
    exc.args = (exc.message,)


async def _guarded(coro):
    # A KeyboardInterrupt leaving a task's step is re-raised by asyncio into the event
    # loop (and so into JavaScript); caught here, inside the task, it is an ordinary error.
    try:
        return await coro
    except KeyboardInterrupt:
        raise Interrupted() from None


def spawn(coro, context=None):
    """A task for `coro` (in `context`, when given), in which the watchdog's KeyboardInterrupt
    becomes `Interrupted`."""
    if context is None:
        return asyncio.ensure_future(_guarded(coro))
    return asyncio.get_running_loop().create_task(_guarded(coro), context=context)


async def fail_closed(coros):
    """Run coroutines concurrently; the first failure cancels the rest (late results are dropped)."""
    tasks = [spawn(c) for c in coros]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            if not t.done():
                t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise

"""Event order (runtime.md §7).

Events are delivered as they happen, numbered by `seq` in arrival order: a live view and
the journal need them at once. Arrival order between concurrent branches depends on
timing, so each event also carries `order`, a key from where it happened in the run's
tree of branches (see `Branch` in the sandbox bootstrap): `[[fork, key], …, [index]]`.
Sorting by it gives the canonical sequence — sibling `parallel` branches by key,
`parallelMap` items by index, `async` tasks by launch — which is the same on every run
of the same program with the same input and answers. `canonical` gives that sequence,
`comparable` also drops what legitimately differs between runs (timestamps, durations).
"""

from __future__ import annotations

import copy
import re
from typing import Any

Event = dict[str, Any]

# Events the host adds after the sandbox has gone (a dead sandbox, an invalid result) sort last.
LAST = [[1 << 62]]
TIMING_KEYS = ("latency_ms", "elapsed_ms", "duration_ms")


_DEFAULT_LABEL = re.compile(r"[A-Za-z_][\w.]*@\d+:\d+")


def is_default_label(label: Any) -> bool:
    """A label the compiler gave (`<agent or team.member>@line:col`), not worth showing."""
    return isinstance(label, str) and _DEFAULT_LABEL.fullmatch(label) is not None


def sub_order(payload: dict[str, Any]) -> list[Any]:
    """The order key of the next host event for one sandbox request (an agent call, an
    approval): under the request's own key, in the order the host emits them."""
    base = payload.get("order")
    count = payload["_events"] = int(payload.get("_events", 0)) + 1
    return [*base, [count]] if isinstance(base, list) else [*LAST, [count]]


def _key(event: Event) -> list[Any]:
    order = event.get("order")
    return _comparable(order) if isinstance(order, list) else _comparable([*LAST, [event.get("seq", 0)]])


def _comparable(order: list[Any]) -> list[list[tuple[int, Any]]]:
    """An order key that always compares: numbers before strings before anything else
    (as text). Keys from the sandbox are lists of lists of numbers and branch names, whose
    order this keeps; a forged key of mixed types sorts somewhere instead of raising
    `TypeError` and taking the run view and `%events` down with it."""
    def part(item: Any) -> tuple[int, Any]:
        if isinstance(item, int | float) and not isinstance(item, bool):
            return (0, item)
        return (1, item) if isinstance(item, str) else (2, repr(item))

    return [[part(x) for x in step] if isinstance(step, list) else [part(step)] for step in order]


def canonical(events: list[Event]) -> list[Event]:
    """The events in canonical order, renumbered 1…n (copies; the input is untouched)."""
    ordered = [copy.deepcopy(e) for e in sorted(events, key=_key)]
    for seq, event in enumerate(ordered, 1):
        event["seq"] = seq
    return ordered


def comparable(events: list[Event]) -> list[Event]:
    """`canonical` without timestamps and durations: equal for two runs of the same program,
    input and answers."""
    out = canonical(events)
    for event in out:
        event.pop("ts", None)
        data = event.get("data")
        if isinstance(data, dict):
            for key in TIMING_KEYS:
                data.pop(key, None)
    return out

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
    return order if isinstance(order, list) else [*LAST, [event.get("seq", 0)]]


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

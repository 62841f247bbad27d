"""The run view's wire: each run event as a small record for the browser, sent in batches.

The host sends events, not HTML: `Compactor` keeps what a row of the view
shows — ids, names, states, a label, a time — with every text clipped, so a record's
size does not depend on the run (a prompt, an output or a tool call's result stays on the
host; the browser asks for a card's `detail` when the card is opened). `Batcher` collects
records and sends them at most `RATE` times a second, `MAX_BATCH` at a time, so a run of
10,000 calls costs the front end a few hundred messages however fast it goes.

The records and the messages are declared in `views/wire.py` (widgets/src/wire.js mirrors it;
docs/widgets.md describes them).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import time
from collections.abc import Callable
from typing import Any

from flow_kernel.runtime.events import is_default_label, scope_of
from flow_kernel.short_text import shorten
from flow_kernel.views.panel_view import panel_call_words, panel_line
from flow_kernel.views.run_model import item_of
from flow_kernel.views.wire import (
    Artifact,
    Batch,
    CallEnded,
    CallStarted,
    Record,
    ScopeEnded,
    ScopeStarted,
    encode,
)

RATE = 20  # messages a second at most
MAX_BATCH = 2000  # records a message at most; the rest goes in the next one
LABEL = 48  # characters of a card's label
TEXT = 160  # characters of a message, a question, a log line
PREVIEW = 60  # characters of an output's preview
STREAMED = 200  # characters of one piece of a call's streamed text (its end: the card shows the newest)

_SCOPE = {"workflow", "pipeline", "stage"}


def clip(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else "" if value is None else str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ms(ts: Any, t0: datetime.datetime | None) -> int | None:
    if t0 is None or not isinstance(ts, str):
        return None
    try:
        return max(0, round((datetime.datetime.fromisoformat(ts) - t0).total_seconds() * 1000))
    except ValueError:
        return None


class Compactor:
    """Makes a run's events into wire records (`views/wire.py`); keeps the run's start for
    relative times."""

    def __init__(self) -> None:
        self.t0: datetime.datetime | None = None
        self.said: dict[str, set[str]] = {}  # scope id -> the failure messages said inside it

    def now(self) -> int | None:
        """The run's time now, in ms since its first event (the records' clock); None before one."""
        if self.t0 is None:
            return None
        wall = datetime.datetime.now(self.t0.tzinfo) if self.t0.tzinfo else datetime.datetime.now()
        return max(0, round((wall - self.t0).total_seconds() * 1000))

    def __call__(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The event's record in its wire form; None for an event the view does not show."""
        record = self.record(event)
        if record is not None:
            self._say_once(record, event)
        return encode(record) if record is not None else None

    def _say_once(self, record: Record, event: dict[str, Any]) -> None:
        """A failure's message goes to the view once, where it happened: a failed scope whose
        failed call, scope or `require` inside already said it carries its code alone."""
        if record["record"] not in ("scope_ended", "call_ended", "require_failed"):
            return
        message = record.get("message")
        if not isinstance(message, str) or not message:
            return
        if record["record"] == "require_failed":
            self.said.setdefault(record["id"], set()).add(message)
            return
        if record.get("state") != "failed":
            return
        if record["record"] == "scope_ended" and message in self.said.pop(record["id"], set()):
            del record["message"]
        span = event.get("span")
        parent = span.get("parent") if isinstance(span, dict) else None
        if parent is not None:
            self.said.setdefault(clip(parent, 64), set()).add(message)

    def record(self, event: dict[str, Any]) -> Record | None:
        """The event's record with readable names; None for an event the view does not show."""
        kind = str(event.get("type", ""))
        raw_data = event.get("data")
        data: dict[str, Any] = raw_data if isinstance(raw_data, dict) else {}
        raw_span = event.get("span")
        span: dict[str, Any] = raw_span if isinstance(raw_span, dict) else {}
        ts = event.get("ts")
        if self.t0 is None and isinstance(ts, str):
            with contextlib.suppress(ValueError):
                self.t0 = datetime.datetime.fromisoformat(ts)
        i = clip(span.get("id"), 64)
        t = _ms(ts, self.t0)
        scope = scope_of(kind)
        if scope is not None:
            head, phase = scope
            parent = span.get("parent")
            p = clip(parent, 64) if parent is not None else None
            if head == "agent":
                return _call(phase, i, p, data, t, event.get("order"))
            if head not in _SCOPE:
                return None
            if phase == "started":
                started: ScopeStarted = {"record": "scope_started", "id": i, "parent": p, "scope": head,
                                         "name": clip(data.get("name"), 80), "time": t}
                limits = data.get("limits")
                if head == "workflow" and parent is None and isinstance(limits, dict):
                    started["limits"] = {k: v for k, v in list(limits.items())[:8]
                                         if isinstance(k, str) and isinstance(v, int) and len(k) < 24}
                return started
            ended: ScopeEnded = {"record": "scope_ended", "id": i, "state": phase, "time": t}
            if phase == "failed":
                ended["code"], ended["message"] = clip(data.get("code"), 40), clip(data.get("message"), TEXT)
            return ended
        return _point(kind, i, t, data)


def _point(kind: str, i: str, t: int | None, data: dict[str, Any]) -> Record | None:
    """The record of a point event (print goes to the cell's stdout; an unknown kind shows nothing)."""
    if kind == "progress":
        return {"record": "progress", "id": i, "done": _number(data.get("done")), "total": _number(data.get("total")),
                "message": clip(data.get("message"), 80)}
    if kind == "approval.requested":
        return {"record": "approval_asked", "id": i, "kind": clip(data.get("kind"), 16),
                "question": clip(data.get("question"), TEXT), "time": t}
    if kind == "approval.resolved":
        answer = data.get("answer")
        shown = answer if isinstance(answer, bool) or answer is None else clip(answer, TEXT)
        return {"record": "approval_answered", "question": clip(data.get("question"), TEXT), "answer": shown,
                "by": clip(data.get("by"), 40), "code": clip(data.get("error"), 40), "time": t}
    if kind in ("panel.round", "panel.completed"):  # a line a round (the grid is the summary's)
        return {"record": "log", "id": i, "time": t, "message": clip(panel_line(kind, data), TEXT)}
    if kind == "log":
        return {"record": "log", "id": i, "time": t, "message": clip(data.get("text"), TEXT)}
    if kind == "verify.evaluated":
        return {"record": "verify", "id": i, "time": t, "ok": data.get("passed") is True,
                "message": clip(data.get("message"), TEXT)}
    if kind == "require.failed":
        return {"record": "require_failed", "id": i, "time": t, "message": clip(data.get("message"), TEXT)}
    if kind == "artifact.published":
        artifact: Artifact = {"record": "artifact", "id": i, "time": t, "name": clip(data.get("name"), 80)}
        if data.get("primary") is True:
            artifact["primary"] = True
        return artifact
    if kind == "model.degraded":  # the call's card says it, as the summary does
        return {"record": "model_degraded", "id": i, "time": t, "purpose": clip(data.get("purpose"), 40),
                "model": clip(data.get("model"), 80)}
    return _live(kind, i, t, data)


def _live(kind: str, i: str, t: int | None, data: dict[str, Any]) -> Record | None:
    """The record of a call's live state: its streamed text, a wait for its provider's
    limits, the provider's breaker (timing and live kinds, events/vocabulary.py)."""
    if kind == "agent.delta":
        text = data.get("text")
        piece = text if isinstance(text, str) else ""
        if len(piece) > STREAMED:  # the record's length says a part was left out
            piece = "…" + piece[1 - STREAMED:]
        return {"record": "call_text", "id": i, "time": t, "attempt": _count(data.get("attempt")),
                "round": _count(data.get("round")), "text": piece, "length": _count(data.get("length"))}
    if kind == "provider.waiting":
        return {"record": "call_waiting", "id": i, "time": t, "provider": clip(data.get("provider"), 40),
                "reason": clip(data.get("reason"), 16), "wait": _count(data.get("wait_ms"))}
    if kind == "provider.resumed":
        return {"record": "call_resumed", "id": i, "time": t, "waited": _count(data.get("waited_ms"))}
    if kind == "provider.breaker":
        return {"record": "breaker", "id": i, "time": t, "provider": clip(data.get("provider"), 40),
                "state": clip(data.get("state"), 16), "pause": _count(data.get("pause_ms"))}
    return None


def _count(value: Any) -> int | None:
    """A whole number of the event (an attempt, a length, milliseconds); None for anything else."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _call(phase: str, i: str, p: str | None, data: dict[str, Any], t: int | None, order: Any) -> Record:
    if phase == "started":
        label = data.get("label")
        shown = panel_call_words(label) or (label if isinstance(label, str) and label and not is_default_label(label)
                                            else data.get("prompt"))
        started: CallStarted = {"record": "call_started", "id": i, "parent": p, "agent": clip(data.get("agent"), 40),
                                "label": clip(shown, LABEL), "time": t}
        item = item_of(order)
        if item is not None:
            started["group"] = clip(f"{p}|{item[0]}", 96)
            started["index"] = item[1]
            size = data.get("of")  # the map's size: its bar is of the whole map, not the items started
            if isinstance(size, int) and not isinstance(size, bool) and size > 0:
                started["of"] = size
        return started
    attempts = data.get("attempts")
    tried = [a for a in attempts if isinstance(a, dict)] if isinstance(attempts, list | tuple) else []
    latency = data.get("latency_ms")
    ended: CallEnded = {"record": "call_ended", "id": i, "state": phase,
                        "latency": latency if isinstance(latency, int) else None, "attempts": len(tried),
                        "retries": sum(1 for a in tried if a.get("kind") != "attempt"), "time": t}
    if phase == "failed":
        ended["code"], ended["message"] = clip(data.get("code"), 40), clip(data.get("message"), TEXT)
    elif "output" in data:
        ended["output"] = clip(shorten(data.get("output"), PREVIEW * 2), PREVIEW)
    return ended


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if value == value and abs(value) != float("inf") else None


class Batcher:
    """Collects records and calls `send` with `{"t": "batch", "from": n, "ev": [...]}` at
    most `RATE` times a second (`from`: the index of its first record in the run, so a view
    that joins late or twice never counts one twice). All records are kept: a view that
    opens later says `hello` and is sent them again (`replay`)."""

    def __init__(self, send: Callable[[Batch], None], loop: asyncio.AbstractEventLoop | None = None,
                 rate: float = RATE, clock: Callable[[], float] = time.monotonic) -> None:
        self.send = send
        self.loop = loop
        self.every = 1.0 / rate
        self.clock = clock
        self.records: list[dict[str, Any]] = []
        self.sent = 0  # records sent so far
        self.last = -1e9  # when the last message went
        self.due: asyncio.TimerHandle | None = None
        self.messages = 0
        self.bytes = 0  # of the messages' JSON, what the bench reports

    def add(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        if self.due is None:
            wait = max(0.0, self.last + self.every - self.clock())
            if self.loop is None:
                return  # no loop (the bench): the caller flushes
            self.due = self.loop.call_later(wait, self._tick)

    def _tick(self) -> None:
        self.due = None
        self.flush(limit=MAX_BATCH)
        if self.sent < len(self.records) and self.loop is not None:
            self.due = self.loop.call_later(self.every, self._tick)

    def flush(self, limit: int | None = None) -> None:
        """Send what is waiting (at most `limit` records in one message)."""
        while self.sent < len(self.records):
            end = len(self.records) if limit is None else min(len(self.records), self.sent + limit)
            self._send({"t": "batch", "from": self.sent, "ev": self.records[self.sent:end]})
            self.sent = end
            self.last = self.clock()
            if limit is not None:
                return

    def replay(self, have: int, now: int | None = None) -> None:
        """Everything from record `have` on, for a view that asked (`hello`); each message
        says the run's time `now` when given (a view's clock starts from it)."""
        start = max(0, min(int(have), self.sent))
        for k in range(start, self.sent, MAX_BATCH):
            message: Batch = {"t": "batch", "from": k, "ev": self.records[k:min(self.sent, k + MAX_BATCH)]}
            if now is not None:
                message["now"] = now
            self._send(message)

    def close(self) -> None:
        if self.due is not None:
            self.due.cancel()
            self.due = None

    def _send(self, message: Batch) -> None:
        self.messages += 1
        self.bytes += len(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode())
        self.send(message)

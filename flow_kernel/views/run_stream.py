"""The run view's wire: each run event as a small record for the browser, sent in batches.

The host sends events, not HTML (issue 18): `compact(event, t0)` keeps what a row of the
view shows — ids, names, states, a label, a time — with every text clipped, so a record's
size does not depend on the run (a prompt, an output or a tool call's result stays on the
host; the browser asks for a card's `detail` when the card is opened). `Batcher` collects
records and sends them at most `RATE` times a second, `MAX_BATCH` at a time, so a run of
10,000 calls costs the front end a few hundred messages however fast it goes.

The records (widgets/src/reducer.js reads them; docs/widgets.md lists them):
  s  scope started   {i, p, k: workflow|pipeline|stage, n, t, lim?}
  x  scope ended     {i, s: completed|failed, c?, m?, t}
  a  agent started   {i, p, a, l: label or the prompt's start, t, g?: parallelMap, x?: item index, of?: its size}
  b  agent ended     {i, s, ms, n: attempts, r: retries and repairs, o?: output's start | c, m}
  p  progress        {i, d, n, m}
  r  approval asked  {i, k, q}           d  approval answered {q, a, by, c?}
  l  log {i, m}      v  verify {i, ok, m}      q  require failed {i, m}      f  artifact {i, n}
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
from flow_kernel.views.panel_view import panel_line
from flow_kernel.views.run_model import item_of

RATE = 20  # messages a second at most
MAX_BATCH = 2000  # records a message at most; the rest goes in the next one
LABEL = 48  # characters of a card's label
TEXT = 160  # characters of a message, a question, a log line
PREVIEW = 60  # characters of an output's preview

_SCOPE = {"workflow", "pipeline", "stage"}
_POINTS = {"log": "l", "verify.evaluated": "v", "require.failed": "q", "artifact.published": "f"}


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
    """Makes a run's events into records; keeps the run's start for relative times."""

    def __init__(self) -> None:
        self.t0: datetime.datetime | None = None

    def __call__(self, event: dict[str, Any]) -> dict[str, Any] | None:
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
                return self._agent(phase, i, p, data, t, event.get("order"))
            if head not in _SCOPE:
                return None
            if phase == "started":
                record: dict[str, Any] = {"e": "s", "i": i, "p": p, "k": head, "n": clip(data.get("name"), 80), "t": t}
                limits = data.get("limits")
                if head == "workflow" and parent is None and isinstance(limits, dict):
                    record["lim"] = {k: v for k, v in list(limits.items())[:8]
                                     if isinstance(k, str) and isinstance(v, int) and len(k) < 24}
                return record
            ended: dict[str, Any] = {"e": "x", "i": i, "s": phase, "t": t}
            if phase == "failed":
                ended.update(c=clip(data.get("code"), 40), m=clip(data.get("message"), TEXT))
            return ended
        if kind == "progress":
            return {"e": "p", "i": i, "d": _number(data.get("done")), "n": _number(data.get("total")),
                    "m": clip(data.get("message"), 80)}
        if kind == "approval.requested":
            return {"e": "r", "i": i, "k": clip(data.get("kind"), 16), "q": clip(data.get("question"), TEXT), "t": t}
        if kind == "approval.resolved":
            answer = data.get("answer")
            shown = answer if isinstance(answer, bool) or answer is None else clip(answer, TEXT)
            return {"e": "d", "q": clip(data.get("question"), TEXT), "a": shown, "by": clip(data.get("by"), 40),
                    "c": clip(data.get("error"), 40), "t": t}
        if kind in ("panel.round", "panel.completed"):  # a line a round (the grid is the summary's)
            return {"e": "l", "i": i, "t": t, "m": clip(panel_line(kind, data), TEXT)}
        short = _POINTS.get(kind)
        if short is None:
            return None  # print goes to the cell's stdout; an unknown kind shows nothing
        record = {"e": short, "i": i, "t": t}
        if short == "v":
            record.update(ok=data.get("passed") is True, m=clip(data.get("message"), TEXT))
        elif short == "f":
            record["n"] = clip(data.get("name"), 80)
        else:
            record["m"] = clip(data.get("text") if short == "l" else data.get("message"), TEXT)
        return record

    @staticmethod
    def _agent(phase: str, i: str, p: str | None, data: dict[str, Any], t: int | None, order: Any) -> dict[str, Any]:
        if phase == "started":
            label = data.get("label")
            shown = label if isinstance(label, str) and label and not is_default_label(label) else data.get("prompt")
            record: dict[str, Any] = {"e": "a", "i": i, "p": p, "a": clip(data.get("agent"), 40),
                                      "l": clip(shown, LABEL), "t": t}
            item = item_of(order)
            if item is not None:
                record["g"] = clip(f"{p}|{item[0]}", 96)
                record["x"] = item[1]
                size = data.get("of")  # the map's size: its bar is of the whole map, not the items started
                if isinstance(size, int) and not isinstance(size, bool) and size > 0:
                    record["of"] = size
            return record
        attempts = data.get("attempts")
        tried = [a for a in attempts if isinstance(a, dict)] if isinstance(attempts, list) else []
        latency = data.get("latency_ms")
        record = {"e": "b", "i": i, "s": phase, "ms": latency if isinstance(latency, int) else None, "n": len(tried),
                  "r": sum(1 for a in tried if a.get("kind") != "attempt"), "t": t}
        if phase == "failed":
            record.update(c=clip(data.get("code"), 40), m=clip(data.get("message"), TEXT))
        elif "output" in data:
            record["o"] = clip(shorten(data.get("output"), PREVIEW * 2), PREVIEW)
        return record


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if value == value and abs(value) != float("inf") else None


class Batcher:
    """Collects records and calls `send` with `{"t": "batch", "from": n, "ev": [...]}` at
    most `RATE` times a second (`from`: the index of its first record in the run, so a view
    that joins late or twice never counts one twice). All records are kept: a view that
    opens later says `hello` and is sent them again (`replay`)."""

    def __init__(self, send: Callable[[dict[str, Any]], None], loop: asyncio.AbstractEventLoop | None = None,
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

    def replay(self, have: int) -> None:
        """Everything from record `have` on, for a view that asked (`hello`)."""
        start = max(0, min(int(have), self.sent))
        for k in range(start, self.sent, MAX_BATCH):
            self._send({"t": "batch", "from": k, "ev": self.records[k:min(self.sent, k + MAX_BATCH)]})

    def close(self) -> None:
        if self.due is not None:
            self.due.cancel()
            self.due = None

    def _send(self, message: dict[str, Any]) -> None:
        self.messages += 1
        self.bytes += len(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode())
        self.send(message)

"""The terminal view of a run for `flow run` (runtime.md §8): one line per thing that
happened, indented by where it happened (workflow → pipeline → stage → agent), on stderr
while the run goes on. `print` output is not shown here: it goes to stdout. The kinds are
the vocabulary's (`vocabulary.py`), the depth of each scope the event tree's (`tree.py`);
this module only says how each looks.

Without a terminal (`flow run` in CI, piped), `flow run` keeps only `NOTICES`: the waits
for a provider's limits and its breaker's changes, which a log needs to explain a slow run.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Collection
from typing import Any, TextIO

from flow_kernel.runtime.events.tree import EventTree, Scope, degraded_text, scope_label
from flow_kernel.runtime.events.vocabulary import Event, is_default_label, scope_name, scope_of
from flow_kernel.short_text import shorten
from flow_kernel.terminal_text import terminal_safe

_MARK = {"completed": "✓", "failed": "✗", "started": "▸"}
_PLAIN = {"completed": "ok", "failed": "FAIL", "started": ">"}
WRITING_EVERY = 1.0  # seconds between two lines of one call's streamed text
# What a run's log shows when no person watches: why calls wait on their providers.
NOTICES = frozenset({"provider.waiting", "provider.resumed", "provider.breaker"})


class TerminalProgress:
    """An event sink writing a line per event worth one; `only`: the kinds to write (None:
    every kind it knows how to show)."""

    def __init__(self, stream: TextIO, *, color: bool = False, unicode: bool = True,
                 clock: Callable[[], float] = time.monotonic, only: Collection[str] | None = None) -> None:
        self.stream = stream
        self.only = only
        self.color = color
        self.marks = _MARK if unicode else _PLAIN
        self.tree: EventTree[Scope] = EventTree(Scope)
        self.clock = clock
        self.writing: dict[str, tuple[float, int]] = {}  # call -> (when its text was last shown, its length)

    def __call__(self, event: Event) -> None:
        line = self.line(event)
        if line is not None and (self.only is None or event.get("type") in self.only):
            self.stream.write(line + "\n")
            self.stream.flush()

    def line(self, event: Event) -> str | None:
        kind: str = event.get("type", "")
        # Event data is model replies, tool results and program text: shown, never obeyed by
        # the terminal (the colours below are the only escapes this view writes).
        data: dict[str, Any] = _safe(event.get("data") or {})
        if not isinstance(data, dict):
            return None
        span = event.get("span") or {}
        self.tree.add(event)
        scope = scope_of(kind)
        if scope is not None:
            return self._scoped(*scope, data, span)
        indent = "  " * (self._depth(span.get("id")) + 1)
        if kind == "progress":
            done, total = data.get("done"), data.get("total")
            bar = _bar(done, total) if isinstance(done, int | float) and isinstance(total, int | float) and total else ""
            count = f"{done}/{total}" if total is not None else str(done if done is not None else "")
            return f"{indent}{bar}{count} {data.get('message') or ''}".rstrip()
        if kind == "log":
            return f"{indent}· {data.get('text', '')}"
        if kind == "verify.evaluated":
            mark = self._paint("✓" if data.get("passed") else "✗", "32" if data.get("passed") else "33")
            return f"{indent}{mark} verify {data.get('message')}"
        if kind == "require.failed":
            return f"{indent}{self._paint('✗', '31')} require {data.get('message')}"
        if kind == "approval.requested":
            return f"{indent}? {data.get('question')}"
        if kind == "approval.resolved":
            answer = data.get("error") or ("yes" if data.get("answer") is True else "no" if data.get("answer") is False
                                           else data.get("answer"))
            return f"{indent}  → {answer} ({data.get('by', 'unanswered')})"
        if kind == "model.degraded":
            return f"{indent}↓ {degraded_text(data)}"
        if kind == "artifact.published":
            return f"{indent}⇪ published {data.get('name')}" + (" (primary)" if data.get("primary") is True else "")
        if kind == "agent.delta":
            return self._writing(str(span.get("id")), data, indent)
        if kind == "provider.waiting":
            wait = _millis(data.get("wait_ms"))
            how_long = f" ~{wait / 1000:.1f} s" if wait is not None else ""
            return f"{indent}⏸ waiting{how_long} for {data.get('provider')} ({data.get('reason')}){_until(event, wait)}"
        if kind == "provider.resumed":
            waited = _millis(data.get("waited_ms"))
            after = f" after {waited / 1000:.1f} s" if waited is not None else ""
            return f"{indent}▶ resumed{after} ({data.get('provider')}, {data.get('reason')})"
        if kind == "provider.breaker":
            state = data.get("state")
            why = f" after {data.get('failures')} failures" if state == "open" and data.get("failures") else ""
            until = _until(event, _millis(data.get("pause_ms"))) if state == "open" else ""
            return f"{indent}⚡ {data.get('provider')}'s circuit breaker is {state}{why}{until}"
        return None

    def _writing(self, call: str, data: dict[str, Any], indent: str) -> str | None:
        """A call's streamed text, at most once a second per call: how far it got and its tail
        (a terminal log cannot redraw a card, so it shows progress instead)."""
        now = self.clock()
        last, _ = self.writing.get(call, (float("-inf"), 0))
        length = data.get("length")
        if now - last < WRITING_EVERY or not isinstance(length, int):
            return None
        self.writing[call] = (now, length)
        tail = str(data.get("text") or "").replace("\n", " ")
        return f"{indent}✎ {length} chars …{shorten(tail, 60, first_line=True)}"

    def _scoped(self, head: str, phase: str, data: dict[str, Any], span: dict[str, Any]) -> str:
        depth = self._depth(span.get("id"))
        title = scope_label(head, scope_name(head, data))
        if head == "agent" and data.get("label") and not is_default_label(data["label"]):
            title += f" [{data['label']}]"
        mark = self.marks[phase]
        if phase == "completed":
            mark = self._paint(mark, "32")
        elif phase == "failed":
            mark = self._paint(mark, "31")
        extra = ""
        if head == "agent" and phase == "started" and isinstance(data.get("prompt"), str):
            extra += f": {shorten(data['prompt'], 60, first_line=True)}"
        if head == "agent" and phase != "started":
            attempts = data.get("attempts") or []
            if len(attempts) > 1:
                extra += f" ({len(attempts)} attempts)"
            if data.get("latency_ms") is not None:
                extra += f" {data['latency_ms']} ms"
        if phase == "failed":
            extra += f": {data.get('code')}" + (f" {shorten(data['message'], 120, first_line=True)}" if data.get("message") else "")
        return f"{'  ' * depth}{mark} {title}{extra}"

    def _depth(self, scope_id: object) -> int:
        """How deep a scope is in the run's tree; 0 for one that never started (its end is
        all the terminal saw of it) or is unknown."""
        scope = self.tree.scope(scope_id)
        return scope.depth if scope is not None and scope.opened else 0

    def _paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text


def _millis(value: Any) -> float | None:
    """A duration of the event's data in milliseconds; None when it is not one."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e12
    return float(value) if ok else None


def _until(event: Event, millis: float | None) -> str:
    """` until HH:MM:SS UTC`: the event's time plus `millis`; empty when either is unknown."""
    ts = event.get("ts")
    if millis is None or not isinstance(ts, str):
        return ""
    try:
        moment = datetime.datetime.fromisoformat(ts) + datetime.timedelta(milliseconds=millis)
    except (ValueError, OverflowError):
        return ""
    if moment.tzinfo is None:
        return f" until {moment:%H:%M:%S}"
    return f" until {moment.astimezone(datetime.UTC):%H:%M:%S} UTC"


def _safe(value: Any) -> Any:
    """`value` with every string in it made terminal-safe, keys included."""
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, list | tuple):
        return [_safe(v) for v in value]
    if isinstance(value, dict):
        return {terminal_safe(str(k)): _safe(v) for k, v in value.items()}
    return value


def _bar(done: float, total: float, width: int = 20) -> str:
    filled = max(0, min(width, round(width * done / total)))
    return "[" + "#" * filled + "." * (width - filled) + "] "


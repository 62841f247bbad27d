"""Streaming replies: what a provider reports while the model writes, and how the pipeline
turns it into `agent.delta` events.

A streaming provider calls `request.on_delta(Delta(...))` for each piece the API sends: the
answer's text, or the arguments of a tool call as the model writes them. `DeltaMerger`
(one per agent call) merges those pieces and passes them on at most every `interval`
seconds (20 per second by default), so that a fast model writing one token per SSE event
costs a run view a few updates a second, not hundreds. For a structured contract each
update also carries the partial value parsed so far (`jiter`'s partial mode: an unfinished
string or array is kept as far as it goes), so a card can fill field by field.

`agent.delta` events are live only (events/vocabulary.py, `Kind.live`): sinks see them as they happen
(the run view, the terminal), but they are not kept in the run's events or journal, not
part of the canonical sequence and not in cassettes — the final output is, in
`agent.completed`. A stream cut mid-way still leaves its text: `DeltaMerger.text` is what
arrived, which the trace keeps (`partial`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

INTERVAL = 0.05  # seconds between two delta events of one call: at most ~20 per second


@dataclass(frozen=True)
class Delta:
    """One piece of a streamed reply. `round` counts the provider's requests within the
    attempt (a tool loop makes several); text and tool arguments start over each round."""

    text: str = ""               # appended to the answer's text
    tool: str | None = None      # the tool whose call is being written…
    tool_index: int = 0          # …its place among the round's tool calls
    arguments: str = ""          # …and the argument text appended
    round: int = 1


DeltaSink = Callable[[Delta], None]


def partial_value(text: str) -> Any:
    """The value a partial JSON document holds so far, or None when it holds none yet (or
    is not JSON: a model that answers in prose)."""
    import jiter

    stripped = text.lstrip()
    if not stripped or stripped[0] not in "{[\"-0123456789tfn":
        return None
    try:
        return jiter.from_json(stripped.encode(), partial_mode="trailing-strings")
    except ValueError:
        return None


@dataclass
class _Tool:
    name: str
    arguments: str = ""


@dataclass
class DeltaMerger:
    """Merges one agent call's deltas into throttled `agent.delta` event data.

    `emit(data)` receives `{"attempt", "round", "text", "length", "value"?, "tools"?}`:
    `text` is what was appended since the last event (`length` the answer's length so far,
    so a reader can tell it missed one), `value` the partial structured value, `tools` the
    tool calls being written with their partial arguments."""

    emit: Callable[[dict[str, Any]], None]
    structured: bool
    interval: float = INTERVAL
    clock: Callable[[], float] = time.monotonic
    attempt: int = 1
    round: int = 1
    text: str = ""               # the current round's answer so far
    _pending: str = ""
    _dirty: bool = False
    _tools: dict[int, _Tool] = field(default_factory=dict)
    _last: float = float("-inf")
    _timer: asyncio.TimerHandle | None = None
    events: int = 0

    def start_attempt(self, attempt: int) -> None:
        """A new attempt (a repair or a retry) writes its answer from the start."""
        self.flush()
        self.attempt, self.round, self.text, self._tools = attempt, 1, "", {}

    def __call__(self, delta: Delta) -> None:
        if delta.round != self.round:
            self.flush()
            self.round, self.text, self._tools = delta.round, "", {}
        if delta.text:
            self.text += delta.text
            self._pending += delta.text
            self._dirty = True
        if delta.tool is not None or delta.arguments:
            tool = self._tools.setdefault(delta.tool_index, _Tool(delta.tool or ""))
            if delta.tool and not tool.name:
                tool.name = delta.tool
            tool.arguments += delta.arguments
            self._dirty = True
        if not self._dirty:
            return
        wait = self._last + self.interval - self.clock()
        if wait <= 0:
            self.flush()
        elif self._timer is None:
            # What is held back goes out when the interval ends, even if no more comes; with no
            # loop (a synchronous caller), the next delta or flush sends it.
            with contextlib.suppress(RuntimeError):
                self._timer = asyncio.get_running_loop().call_later(wait, self._flush_timer)

    def _flush_timer(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        """Send what is held back now (the end of a round, an attempt or the call)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._dirty:
            return
        data: dict[str, Any] = {"attempt": self.attempt, "round": self.round, "text": self._pending,
                                "length": len(self.text)}
        if self.structured and self.text:
            value = partial_value(self.text)
            if value is not None:
                data["value"] = value
        if self._tools:
            data["tools"] = [{"tool": t.name, "arguments": partial_value(t.arguments) or {}}
                             for _, t in sorted(self._tools.items())]
        self._pending, self._dirty = "", False
        self._last = self.clock()
        self.events += 1
        self.emit(data)

    def close(self) -> None:
        self.flush()

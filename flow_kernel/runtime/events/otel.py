"""An optional OpenTelemetry exporter for run events (runtime.md §7).

`OpenTelemetrySink` is an event sink: pass it in `sinks=[...]` and each run becomes a
trace whose spans mirror the run's tree. Every `workflow`, `pipeline`, `stage` and
`agent` frame is a span; the point events (`log`, `print`, `progress`,
`verify.evaluated`, `require.failed`, `approval.*`, `artifact.published`) are span
events on the nearest open span up the run's event tree (`tree.py`). The kinds, which
scope each opens or closes, and their data are the vocabulary's (`vocabulary.py`): a new
point kind becomes a span event here without a change.

How the run's events map onto spans. A frame's `*.started` event and its matching
`*.completed` / `*.failed` carry the same `span.id` (`s<n>` for workflow, pipeline and
stage frames, `c<n>` for agent calls) and the same `span.parent`: the id of the
enclosing frame, `null` for the top-level workflow (the `<cell>` of a module run, or the
workflow a run was started with). Point events carry the id of the frame they happen in
as `span.id` (and usually `span.parent: null`; a tool approval names the agent call as
its id and the call's frame as its parent). Ids are unique within one run, so spans are
keyed by `(run, span.id)`.

The sink is best-effort and never raises: unknown event types are ignored, events
with missing or malformed fields are skipped or handled with defaults, an end without
a start becomes a zero-length span, and when the top-level workflow ends every span of
that run still open is ended with status ERROR "not completed". Prompts, outputs and
artifact contents are only recorded with `include_payloads=True`.

OpenTelemetry is an optional dependency (`pip install 'flow-kernel[otel]'`); it is
imported when a sink is constructed, never when this module is imported.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib
import json
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from flow_kernel.runtime.events.tree import EventTree, Scope
from flow_kernel.runtime.events.vocabulary import Event, kind_of, scope_name
from flow_kernel.short_text import shorten

Attributes = dict[str, str | int | float | bool]

_log = logging.getLogger(__name__)

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
# data keys handled by name, or payloads: never copied generically into attributes
_PAYLOAD_KEYS = frozenset({"prompt", "output", "json", "details", "arguments", "errors", "tool_calls"})
_HANDLED_KEYS = frozenset({"name", "frame", "parent", "limits", "agent", "label", "attempts", "latency_ms",
                           "usage", "tools", "code", "message", "span"})
_MAX_JSON = 1024      # a structure encoded longer than this is left out
_MAX_TEXT = 8193      # longer strings are cut to this many characters, "…" included
_MAX_FINISHED = 256   # finished runs whose top-level span is remembered (for a late `workflow.failed`)


@dataclass
class _Frame:
    span: Any                 # an opentelemetry.trace.Span
    kind: str
    name: str


class OpenTelemetrySink:
    """An event sink that turns a run's events into OpenTelemetry spans.

    `tracer_provider` defaults to the global one (`opentelemetry.trace.get_tracer_provider()`).
    A span whose parent frame is not known to the sink (the top-level workflow) starts in
    the caller's current OpenTelemetry context, so a run inside an instrumented request is
    part of that request's trace."""

    def __init__(self, tracer_provider: Any = None, *, include_payloads: bool = False,
                 instrumentation_name: str = "flow_kernel") -> None:
        try:
            trace = importlib.import_module("opentelemetry.trace")
        except ImportError as exc:
            raise ImportError("OpenTelemetrySink needs the OpenTelemetry API, which is not installed; "
                              "install it with: pip install 'flow-kernel[otel]'") from exc
        self._trace: Any = trace
        provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        self._tracer: Any = provider.get_tracer(instrumentation_name)
        self.include_payloads = include_payloads
        self._lock = threading.RLock()
        self._open: dict[tuple[str, str], _Frame] = {}        # in start order
        self._ended: dict[tuple[str, str], _Frame] = {}       # ended spans of runs still going
        self._finished: OrderedDict[tuple[str, str], _Frame] = OrderedDict()  # top-level spans of ended runs
        self._trees: dict[str, EventTree[Scope]] = {}  # the event tree of each run still going

    # -- the sink ---------------------------------------------------------------------------
    def __call__(self, event: Event) -> None:
        try:
            with self._lock:
                self._handle(event)
        except Exception:  # a sink must never break a run
            _log.debug("OpenTelemetrySink: event skipped", exc_info=True)

    @property
    def open_spans(self) -> int:
        """How many spans are started and not yet ended."""
        return len(self._open)

    def close(self) -> None:
        """End every span still open (status ERROR "not completed"), e.g. after a run was killed
        before its top-level workflow ended. Never raises."""
        try:
            with self._lock:
                for key in reversed(list(self._open)):
                    self._abandon(key, None)
                self._ended.clear()
                self._trees.clear()
        except Exception:
            _log.debug("OpenTelemetrySink: close failed", exc_info=True)

    # -- dispatch ---------------------------------------------------------------------------
    def _handle(self, event: Event) -> None:
        if not isinstance(event, dict):
            return
        kind = kind_of(event.get("type"))
        if kind is None:
            return
        self._trees.setdefault(_ids(event)[0], EventTree(Scope)).add(event)
        if kind.scope is None:
            self._point(event)
        elif kind.opens:
            self._start(event, kind.scope)
        else:
            self._end(event, kind.scope, kind.phase == "failed")

    def _start(self, event: Event, kind: str) -> None:
        run, span_id, parent_id = _ids(event)
        data = _data(event)
        if span_id is None:
            return
        name = _name(kind, data)
        attributes = self._base_attributes(event, kind, span_id, parent_id)
        attributes.update(self._start_attributes(kind, data))
        span = self._tracer.start_span(f"{kind} {name}" if name else kind, context=self._context(run, parent_id),
                                       attributes=attributes, start_time=_ns(event.get("ts")))
        key = (run, span_id)
        stale = self._open.pop(key, None)
        if stale is not None:  # the same id started twice: the first one never ended
            self._close_span(stale.span, None, "not completed", None)
        self._ended.pop(key, None)
        self._open[key] = _Frame(span, kind, name)

    def _end(self, event: Event, kind: str, failed: bool) -> None:
        run, span_id, parent_id = _ids(event)
        data = _data(event)
        ts = _ns(event.get("ts"))
        key = (run, span_id) if span_id is not None else None
        frame = self._open.pop(key, None) if key is not None else None
        record = frame is not None or (key is not None and key not in self._ended and key not in self._finished)
        top = kind == "workflow" and parent_id is None
        if top:  # the run is over: its children first, deepest (latest started) first
            for other in reversed([k for k in self._open if k[0] == run]):
                self._abandon(other, ts)
        if frame is None:
            # an end without a start (a failure before the run began, an agent that could not be
            # resolved), or a failure after the end (a result that fails validation after
            # `workflow.completed`): a zero-length span, under the ended span when there is one
            earlier = (self._ended.get(key) or self._finished.get(key)) if key is not None else None
            if earlier is not None and not failed:
                return  # a second `completed` says nothing new
            name = _name(kind, data) or (earlier.name if earlier is not None else "")
            attributes = self._base_attributes(event, kind, span_id, parent_id)
            attributes.update(self._start_attributes(kind, data))
            if earlier is not None:
                attributes["flow.after_end"] = True
            context = (self._trace.set_span_in_context(earlier.span) if earlier is not None
                       else self._context(run, parent_id))
            span = self._tracer.start_span(f"{kind} {name}" if name else kind, context=context,
                                           attributes=attributes, start_time=ts)
            frame = _Frame(span, kind, name)
        frame.span.set_attributes(self._end_attributes(kind, data))
        if failed:
            code = _text(data.get("code")) or "error"
            message = _text(data.get("message"))
            self._close_span(frame.span, code, message, ts)
        else:
            self._close_span(frame.span, None, None, ts, ok=True)
        if key is not None and record:  # else the first span stays the one late events refer to
            self._ended[key] = frame
        if top:
            self._forget(run, key)

    def _point(self, event: Event) -> None:
        run, span_id, parent_id = _ids(event)
        frame = self._nearest_open(run, span_id, parent_id)
        if frame is None:
            return
        data = _data(event)
        attributes: Attributes = {"flow.run": run, "flow.type": str(event.get("type"))}
        seq = event.get("seq")
        if isinstance(seq, int) and not isinstance(seq, bool):
            attributes["flow.seq"] = seq
        stage = event.get("stage")
        if isinstance(stage, str):
            attributes["flow.stage"] = stage
        if span_id is not None:
            attributes["flow.span"] = span_id
        payloads = _PAYLOAD_KEYS | ({"text"} if event.get("type") == "artifact.published" else set())
        for key, value in data.items():
            if key in payloads and not self.include_payloads:
                continue
            _put(attributes, f"flow.{key}", value, limit=None if key in payloads else _MAX_JSON)
        frame.span.add_event(str(event.get("type")), attributes=attributes, timestamp=_ns(event.get("ts")))

    # -- spans ------------------------------------------------------------------------------
    def _context(self, run: str, parent_id: str | None) -> Any:
        """The OpenTelemetry context for a child of the run's span `parent_id`: that span's,
        or the current context when the sink does not know it."""
        if parent_id is None:
            return None
        frame = self._open.get((run, parent_id)) or self._ended.get((run, parent_id)) \
            or self._finished.get((run, parent_id))
        return self._trace.set_span_in_context(frame.span) if frame is not None else None

    def _nearest_open(self, run: str, span_id: str | None, parent_id: str | None) -> _Frame | None:
        """The span a point event belongs to: its own frame when open, else the nearest open
        ancestor in the run's event tree, else the latest span of the run still open."""
        tree = self._trees.get(run)
        scope = (tree.scope(span_id) or tree.scope(parent_id)) if tree is not None else None
        for above in reversed(tree.path(scope)) if tree is not None and scope is not None else ():
            frame = self._open.get((run, above.id))
            if frame is not None:
                return frame
        for key in reversed(list(self._open)):
            if key[0] == run:
                return self._open[key]
        return None

    def _abandon(self, key: tuple[str, str], ts: int | None) -> None:
        frame = self._open.pop(key)
        frame.span.set_attribute("flow.completed", False)
        self._close_span(frame.span, None, "not completed", ts)
        self._ended[key] = frame

    def _close_span(self, span: Any, code: str | None, message: str | None, ts: int | None,
                    ok: bool = False) -> None:
        status_code = self._trace.StatusCode
        if ok:
            span.set_status(self._trace.Status(status_code.OK))
        else:
            if code is not None:
                span.set_attribute("error.type", code)
                span.set_attribute("flow.error.code", code)
            if message:
                span.set_attribute("flow.error.message", message)
            description = f"{code}: {message}" if code and message else (code or message or "failed")
            span.set_status(self._trace.Status(status_code.ERROR, description))
        span.end(end_time=ts)

    def _forget(self, run: str, key: tuple[str, str] | None) -> None:
        """After the top-level workflow ended: drop the run's spans, keep its top-level span."""
        top = self._ended.get(key) if key is not None else None
        self._trees.pop(run, None)
        for other in [k for k in self._ended if k[0] == run]:
            del self._ended[other]
        if key is not None and top is not None:
            self._finished[key] = top
            self._finished.move_to_end(key)
            while len(self._finished) > _MAX_FINISHED:
                self._finished.popitem(last=False)

    # -- attributes -------------------------------------------------------------------------
    @staticmethod
    def _base_attributes(event: Event, kind: str, span_id: str | None, parent_id: str | None) -> Attributes:
        attributes: Attributes = {"flow.run": _ids(event)[0], "flow.type": kind}
        if span_id is not None:
            attributes["flow.span"] = span_id
        if parent_id is not None:
            attributes["flow.parent"] = parent_id
        stage = event.get("stage")
        if isinstance(stage, str):
            attributes["flow.stage"] = stage
        return attributes

    def _start_attributes(self, kind: str, data: dict[str, Any]) -> Attributes:
        attributes: Attributes = {}
        if kind == "agent":
            for key in ("agent", "label", "provider", "model"):
                _put(attributes, f"flow.{key}", data.get(key))
            _put(attributes, "flow.tools", data.get("tools"))
            if self.include_payloads:
                _put(attributes, "flow.prompt", data.get("prompt"), limit=None)
        else:
            _put(attributes, "flow.name", data.get("name"))
        limits = data.get("limits")
        if isinstance(limits, dict):
            for key, value in limits.items():
                _put(attributes, f"flow.limits.{key}", value)
        return attributes

    def _end_attributes(self, kind: str, data: dict[str, Any]) -> Attributes:
        attributes: Attributes = {}
        if kind == "agent":
            log = data.get("attempts")
            if isinstance(log, list | tuple):
                entries = [e for e in log if isinstance(e, dict)]
                attempts = {e.get("attempt") for e in entries if e.get("kind") in ("attempt", "repair")}
                attributes["flow.attempts"] = len(attempts)
                attributes["flow.calls"] = sum(1 for e in entries if e.get("kind") in ("attempt", "repair"))
                attributes["flow.repairs"] = sum(1 for e in entries if e.get("kind") == "repair")
                attributes["flow.invalid_outputs"] = sum(1 for e in entries if e.get("invalid"))
            usage = data.get("usage")
            if isinstance(usage, dict):
                for key, value in usage.items():
                    _put(attributes, f"flow.usage.{key}", value)
            calls = data.get("tool_calls")
            if isinstance(calls, list):
                attributes["flow.tool_calls"] = len(calls)
            if self.include_payloads and "output" in data:
                _put(attributes, "flow.output", data.get("output"), limit=None)
        _put(attributes, "flow.latency_ms", data.get("latency_ms"))
        _put(attributes, "flow.error.source", data.get("span"))  # the Flow source span of a failure
        for key, value in data.items():  # other scalar facts (`by`, a team member, ...)
            if key not in _HANDLED_KEYS and key not in _PAYLOAD_KEYS and _scalar(value):
                _put(attributes, f"flow.{key}", value)
        return attributes


# -- helpers ----------------------------------------------------------------------------------
def _ids(event: Event) -> tuple[str, str | None, str | None]:
    span = event.get("span")
    span = span if isinstance(span, dict) else {}
    span_id, parent = span.get("id"), span.get("parent")
    return (str(event.get("run") or ""), str(span_id) if span_id is not None else None,
            str(parent) if parent is not None else None)


def _data(event: Event) -> dict[str, Any]:
    data = event.get("data")
    return data if isinstance(data, dict) else {}


def _name(kind: str, data: dict[str, Any]) -> str:
    value = scope_name(kind, data)
    if value is None and kind == "agent":
        value = data.get("label")
    return _text(value) or ""


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return shorten(value if isinstance(value, str) else str(value), _MAX_TEXT)


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _put(attributes: Attributes, key: str, value: Any, limit: int | None = _MAX_JSON) -> None:
    """Set an attribute from a JSON value: scalars as they are (strings cut at `_MAX_TEXT`),
    structures JSON-encoded and left out past `limit` characters, nulls left out. With `limit`
    None (a payload the caller asked for) nothing is cut: the SDK's span limits apply."""
    if value is None:
        return
    if isinstance(value, str):
        attributes[key] = value if limit is None else _text(value) or ""
    elif isinstance(value, bool | int | float):
        attributes[key] = value
    else:
        with contextlib.suppress(TypeError, ValueError):
            encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
            if limit is None or len(encoded) <= limit:
                attributes[key] = encoded


def _ns(ts: Any) -> int | None:
    """An ISO-8601 timestamp in nanoseconds since the epoch (None: let OpenTelemetry use now)."""
    if not isinstance(ts, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(ts)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return ((moment - _EPOCH) // datetime.timedelta(microseconds=1)) * 1000


__all__ = ["OpenTelemetrySink"]

"""The one event tree: a run's scopes (workflow → pipeline → stage → agent) with the point
events that happened inside each, built from the events as they arrive or all at once.

Every reader of a run's shape goes through it: the run view's model (`views/run_model.py`),
the failure report's call path, the terminal view's indentation and OpenTelemetry's
parent links. The kinds and which scope each opens or closes are the vocabulary's
(`vocabulary.py`); this module says how the events fit together:

- `<scope>.started` opens a `Scope` under its `span.parent`; an end without a start (a call
  that failed before it began) still makes one, marked `opened=False`.
- A point event lands in the scope named by its `span.id`, else in the latest top-level
  scope (a forged or late event is shown somewhere rather than lost). Live kinds (streamed
  deltas) are placed but not kept: the tree holds what the run keeps.
- Ids are compared as text; a parent the tree does not know makes a new root.

`EventTree` is generic in its scope class, so a reader that keeps more per scope (the run
view's partial text, a parallelMap item) subclasses `Scope` and passes its class in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

from flow_kernel.runtime.events.vocabulary import OPENS, Event, is_live, kind_of, scope_name

SCOPE_KINDS_WRITTEN_QUOTED = ("pipeline", "stage")  # the source names these with a string literal


@dataclass(eq=False)
class Point:
    """A point event in its scope: its `type`, its data (the event's own, not a copy) and
    the scope it landed in (None when the run had no scope yet)."""

    kind: str
    data: dict[str, Any]
    scope: Scope | None = None


@dataclass(eq=False)
class Scope:
    """One workflow, pipeline, stage or agent call of a run."""

    kind: str                      # workflow | pipeline | stage | agent
    id: str
    parent: str | None             # the enclosing scope's id, as the events name it
    name: str                      # the workflow, pipeline or stage name; an agent call's agent
    order: Any = None              # the first event's `order` (vocabulary.py: where it ran)
    started: str | None = None     # the first event's timestamp
    ended: str | None = None       # the end's timestamp
    state: str = "running"         # running | completed | failed (a reader may add cancelled)
    opened: bool = False           # a `<scope>.started` was seen (else only its end came)
    depth: int = 0                 # 0 for a root, its parent's depth + 1 below it
    data: dict[str, Any] = field(default_factory=dict)  # the start's data, updated by the end's
    children: list[Scope | Point] = field(default_factory=list)


S = TypeVar("S", bound=Scope)


class Placed(NamedTuple, Generic[S]):
    """What `EventTree.add` did with an event: the scope it opened or closed (`new` when the
    event made it) or the point it placed."""

    node: S | Point
    new: bool


class EventTree(Generic[S]):
    """A run's scopes by id, its roots in order, and the scopes that failed in order."""

    def __init__(self, make: Callable[..., S]) -> None:
        self._make = make
        self.scopes: dict[str, S] = {}
        self.roots: list[S] = []
        self.failures: list[S] = []  # each `<scope>.failed` in arrival order (a scope may fail twice)

    @staticmethod
    def of(events: Iterable[Event]) -> EventTree[Scope]:
        """The tree of `events` taken in the order given (`vocabulary.canonical` first for
        the same tree on every run)."""
        tree: EventTree[Scope] = EventTree(Scope)
        for event in events:
            tree.add(event)
        return tree

    # -- building ----------------------------------------------------------------------------
    def add(self, event: Event) -> Placed[S] | None:
        """Fold one event in; None for an event that is not a run event (unknown type)."""
        kind = kind_of(event.get("type"))
        if kind is None:
            return None
        raw = event.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        raw_span = event.get("span")
        span: dict[str, Any] = raw_span if isinstance(raw_span, dict) else {}
        ts = event.get("ts")
        stamp = ts if isinstance(ts, str) else None
        if kind.scope is None:
            point = Point(kind.name, data, self.container(span.get("id")))
            if point.scope is not None and not is_live(event):
                point.scope.children.append(point)
            return Placed(point, True)
        scope_id = str(span.get("id"))
        parent = span.get("parent")
        scope = self.scopes.get(scope_id)
        new = scope is None
        if scope is None:
            above = self.scopes.get(str(parent)) if parent is not None else None
            scope = self._make(kind.scope, scope_id, str(parent) if parent is not None else None,
                               str(scope_name(kind.scope, data)), order=event.get("order"), started=stamp,
                               depth=above.depth + 1 if above is not None else 0)
            self.scopes[scope_id] = scope
            (above.children if above is not None else self.roots).append(scope)
        scope.data.update(data)
        if kind.phase == OPENS:
            scope.opened = True
        else:
            scope.state = str(kind.phase)
            scope.ended = stamp
            if kind.phase == "failed":
                self.failures.append(scope)
        return Placed(scope, new)

    def container(self, scope_id: Any) -> S | None:
        """The scope a point event with this `span.id` happens in: that scope, else the
        latest root."""
        found = self.scopes.get(str(scope_id))
        if found is not None:
            return found
        return self.roots[-1] if self.roots else None

    def scope(self, scope_id: Any) -> S | None:
        """The scope of this id, or None."""
        return self.scopes.get(str(scope_id)) if scope_id is not None else None

    # -- reading -----------------------------------------------------------------------------
    def walk(self) -> Iterator[S]:
        """Every scope, depth first in the order they opened (a parent before its children)."""
        todo = list(reversed(self.roots))
        while todo:
            scope = todo.pop()
            yield scope
            todo.extend(reversed([c for c in scope.children if isinstance(c, Scope)]))  # type: ignore[misc]

    def path(self, scope: S) -> list[S]:
        """The scopes from the run's top down to `scope` (a forged loop of parents stops)."""
        path: list[S] = []
        seen: set[str] = set()
        current: S | None = scope
        while current is not None and current.id not in seen:
            seen.add(current.id)
            path.append(current)
            current = self.scopes.get(current.parent) if current.parent is not None else None
        return path[::-1]

    def failed_path(self) -> list[S]:
        """The path to the innermost scope that failed: the latest started scope to fail
        that is not the parent of another failed one; empty when nothing failed."""
        failed = [s for s in self.failures if s.opened]
        parents = {s.parent for s in failed}
        innermost = next((s for s in reversed(failed) if s.id not in parents), None)
        if innermost is None:
            return []
        path = self.path(innermost)
        top = len(path)
        while top > 0 and path[top - 1].opened:  # the path stops below an ancestor that never started
            top -= 1
        return path[top:]


def scope_label(kind: str, name: Any, *, as_written: bool = False) -> str:
    """A scope in words: `workflow triage`, `stage "check"`, `agent writer`. The views quote
    a stage's name only; `as_written` quotes what the source writes as a string literal
    (pipelines too), as a call path shows it."""
    quoted = SCOPE_KINDS_WRITTEN_QUOTED if as_written else ("stage",)
    return f'{kind} "{name}"' if kind in quoted else f"{kind} {name}"


def degraded_text(data: dict[str, Any]) -> str:
    """A `model.degraded` point in words, as the summary, the card and the terminal say it:
    which purpose had no model, and the session's model the call used instead."""
    return f"for:{data.get('purpose')} has no model configured: used the session's model {data.get('model')}"

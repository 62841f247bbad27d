"""The one event tree (runtime/events/tree.py): scopes nest by `span.parent`, points land in
their scope, the path to a failure, a scope's label; the same tree whether built event by
event or at once."""

from __future__ import annotations

from typing import Any

from flow_kernel.runtime.events.tree import EventTree, Point, Scope, scope_label


def ev(kind: str, span: str | None, parent: str | None = None, **data: Any) -> dict[str, Any]:
    return {"type": kind, "run": "r1", "span": {"id": span, "parent": parent}, "data": data,
            "ts": f"2026-01-01T00:00:0{len(data) % 10}+00:00"}


RUN = [
    ev("workflow.started", "s1", None, name="<cell>", limits={}),
    ev("pipeline.started", "s2", "s1", name="month-end"),
    ev("stage.started", "s3", "s2", name="check"),
    ev("agent.started", "c1", "s3", agent="checker", label=None, prompt="check"),
    ev("log", "s3", text="checking"),
    ev("agent.delta", "c1", "s3", agent="checker", label=None, text="par"),
    ev("agent.failed", "c1", "s3", agent="checker", label=None, code="agent-invocation", message="down"),
    ev("stage.failed", "s3", "s2", name="check", code="agent-invocation", message="down"),
    ev("pipeline.failed", "s2", "s1", name="month-end", code="agent-invocation", message="down"),
    ev("workflow.failed", "s1", None, name="<cell>", code="agent-invocation", message="down"),
]


def shape(tree: EventTree[Scope]) -> list[tuple[str, str, int, str, list[str]]]:
    return [(s.kind, s.name, s.depth, s.state,
             [c.id if isinstance(c, Scope) else c.kind for c in s.children]) for s in tree.walk()]


def test_built_event_by_event_it_is_the_tree_built_at_once() -> None:
    live: EventTree[Scope] = EventTree(Scope)
    for event in RUN:
        live.add(event)
    assert shape(live) == shape(EventTree.of(RUN)) == [
        ("workflow", "<cell>", 0, "failed", ["s2"]),
        ("pipeline", "month-end", 1, "failed", ["s3"]),
        ("stage", "check", 2, "failed", ["c1", "log"]),  # the streamed delta is placed, not kept
        ("agent", "checker", 3, "failed", []),
    ]


def test_the_path_to_a_failure_ends_at_the_innermost_scope_that_failed() -> None:
    tree = EventTree.of(RUN)
    assert [scope_label(s.kind, s.name, as_written=True) for s in tree.failed_path()] == [
        "workflow <cell>", 'pipeline "month-end"', 'stage "check"', "agent checker"]
    assert [s.id for s in tree.path(tree.scopes["s3"])] == ["s1", "s2", "s3"]


def test_a_call_that_failed_before_it_started_is_a_scope_but_not_on_the_path() -> None:
    events = [RUN[0], RUN[1], RUN[2],
              ev("agent.failed", "c9", "s3", agent=None, label=None, code="agent-invocation", message="no member"),
              ev("stage.failed", "s3", "s2", name="check", code="agent-invocation", message="no member")]
    tree = EventTree.of(events)
    call = tree.scopes["c9"]
    assert (call.opened, call.state, call.depth, call.name) == (False, "failed", 3, "None")
    assert [s.id for s in tree.failed_path()] == ["s1", "s2", "s3"]


def test_nothing_failed_no_path() -> None:
    assert EventTree.of(RUN[:5]).failed_path() == []


def test_a_point_lands_in_its_scope_else_in_the_latest_root() -> None:
    tree: EventTree[Scope] = EventTree(Scope)
    early = tree.add(ev("log", "s1", text="before any scope"))
    assert early is not None and isinstance(early.node, Point) and early.node.scope is None
    tree.add(RUN[0])
    placed = tree.add(ev("log", "nowhere", text="late"))
    assert placed is not None and isinstance(placed.node, Point) and placed.node.scope is tree.scopes["s1"]
    assert [c.kind for c in tree.scopes["s1"].children if isinstance(c, Point)] == ["log"]


def test_an_unknown_kind_is_not_placed_and_a_forged_loop_of_parents_ends() -> None:
    tree = EventTree.of([ev("agent.anything", "c1"), ev("stage.started", "a", "b", name="a"),
                         ev("stage.started", "b", "a", name="b")])
    assert set(tree.scopes) == {"a", "b"}
    assert [s.id for s in tree.path(tree.scopes["b"])] == ["a", "b"]


def test_a_scope_is_labelled_one_way_in_views_and_as_written_in_a_path() -> None:
    assert scope_label("stage", "check") == 'stage "check"'
    assert scope_label("pipeline", "month-end") == "pipeline month-end"
    assert scope_label("pipeline", "month-end", as_written=True) == 'pipeline "month-end"'
    assert scope_label("agent", "writer", as_written=True) == "agent writer"

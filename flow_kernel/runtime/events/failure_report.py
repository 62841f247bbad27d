"""A failed run in words (runtime.md §5): the code, the message, where in the Flow
source, in which stage — and, from the run's events, the call path that failed and the
effects already made (for the terminal; a notebook's run view shows both as its tree)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flow_kernel.errors import FlowError
from flow_kernel.runtime.events.tree import EventTree, scope_label
from flow_kernel.runtime.events.vocabulary import Event


def describe_error(error: FlowError, source_line: Callable[[str, int], str | None],
                   events: list[Event] | None = None) -> list[str]:
    """Lines: `error[code]: message`, then `--> file:line:col`, the source line with a
    caret under the span, and the stage; with `events`, the failed call path and what
    was done before the failure. `source_line(file, line)` gives a line's text."""
    lines = [f"error[{error.code}]: {error.message}"]
    span: dict[str, Any] | None = error.span
    if span:
        lines.append(f"  --> {span['file']}:{span['line']}:{span['column']}")
        text = source_line(str(span["file"]), int(span["line"]))
        if text is not None:
            column = int(span["column"])
            same_line = span.get("end_line") == span["line"]
            width = max(1, int(span["end_column"]) - column if same_line else len(text) - column + 1)
            lines.append(f"   | {text}")
            lines.append("   | " + " " * (column - 1) + "^" * width)
    place = where_text(error.details, span)
    if place:
        lines.append(f"   = failed in {place}")
    if error.stage:
        lines.append(f'   = in stage "{error.stage}"')
    if events:
        path = failed_path(events)
        if len(path) > 1:
            lines.append(f"   = call path: {' → '.join(path)}")
        done = effects(events)
        if done:
            lines.append(f"   = done before the failure: {'; '.join(done)}")
    return lines


WHERE_FRAMES = 16  # a `where` deeper than this is shown with its outermost frames cut
WHERE_NAME = 60  # characters of a task or branch name shown


def where_text(details: Any, span: Any = None) -> str | None:
    """`details.where` of a sandbox error — the `parallelMap` items, `parallel` branches
    and tasks it escaped, outermost first — in words, innermost first as people say it:
    `item 3 of parallelMap in task backend at line 12`. The DTO comes from the sandbox, so
    anything not of the expected shape is left out and names are clipped (callers still
    escape the text for their medium); None when there is nothing to say."""
    where = details.get("where") if isinstance(details, dict) else None
    if not isinstance(where, list):
        return None
    parts = [text for frame in where[-WHERE_FRAMES:] if (text := _frame_text(frame))]
    if not parts:
        return None
    if len(where) > WHERE_FRAMES:
        parts.insert(0, "…")
    text = " in ".join(reversed(parts))
    line = span.get("line") if isinstance(span, dict) else None
    if isinstance(line, int) and not isinstance(line, bool) and line > 0:
        text += f" at line {line}"
    return text


def _frame_text(frame: Any) -> str | None:
    if not isinstance(frame, dict):
        return None
    item, task, branch = frame.get("item"), frame.get("task"), frame.get("branch")
    if isinstance(item, int) and not isinstance(item, bool) and 0 < item < 10**12:
        return f"item {item} of parallelMap"
    if isinstance(task, str):
        return f"task {_name(task)}"
    if isinstance(branch, str):
        return f"branch {_name(branch)} of parallel"
    return None


def _name(text: str) -> str:
    return text if len(text) <= WHERE_NAME else text[:WHERE_NAME - 1] + "…"


def failed_path(events: list[Event]) -> list[str]:
    """The scopes from the run's top to the innermost one that failed, e.g.
    `workflow triage_all`, `stage "escalate"`, `agent writer`."""
    return [scope_label(s.kind, s.name, as_written=True) for s in EventTree.of(events).failed_path()]


def effects(events: list[Event]) -> list[str]:
    """What the run had done that stays done: agent answers, approvals given, artifacts."""
    answered = sum(1 for e in events if e.get("type") == "agent.completed")
    done = [f"{answered} agent call{'s' if answered != 1 else ''} answered"] if answered else []
    for event in events:
        data = event.get("data") or {}
        if event.get("type") == "approval.resolved" and data.get("error") is None:
            raw = data.get("answer")
            answer = "yes" if raw is True else "no" if raw is False else raw
            done.append(f'"{data.get("question")}" answered {answer}')
        elif event.get("type") == "artifact.published":
            done.append(f"published {data.get('name')}")
    return done

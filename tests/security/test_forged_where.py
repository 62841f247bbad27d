"""A forged `details.where` (issue 17 item 5): the error DTO comes from the sandbox, and a
bypassed sandbox can put anything there — markup and terminal escapes in task names,
strings or huge numbers as item numbers, thousands of frames, frames of the wrong type.
The host reads it as data: only frames of the expected shape are shown, names and depth
are clipped, the view escapes it and the terminal shows control characters visibly;
nothing raises. The reopened door (the view's escaping undone) lets the markup through."""

from __future__ import annotations

from typing import Any

import pytest

from flow_kernel.errors import FlowError
from flow_kernel.runtime.events.failure_report import (
    WHERE_FRAMES,
    WHERE_NAME,
    describe_error,
    where_text,
)
from flow_kernel.terminal_text import terminal_safe
from flow_kernel.views import run_html
from flow_kernel.views.run_html import STYLE, render_html
from flow_kernel.views.run_model import RunModel
from tests.security.markup_check import live_markup, view_policy

POLICY = view_policy(STYLE)
MARKUP = '"><img src=x onerror=alert(1)></div><script>alert(1)</script>'
ESCAPES = "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07\x1b[2J\u202e"
SPAN = {"file": "<cell 1>", "line": 2, "column": 1, "end_line": 2, "end_column": 3}

FORGED: list[Any] = [
    [{"task": MARKUP}, {"branch": MARKUP + ESCAPES, "of": MARKUP}],
    [{"task": ESCAPES * 1000}],
    [{"item": "3"}, {"item": True}, {"item": -1}, {"item": 10**40}, {"item": 2.5}, {"task": 7}, "x", None, [1]],
    [{"item": 1, "of": "parallelMap"}] * 100_000,
    {"task": MARKUP},
    MARKUP,
]


def error_of(where: Any) -> FlowError:
    return FlowError.from_dto({"code": "evaluation", "message": "m", "span": SPAN, "details": {"where": where}})


def view_html(error: FlowError) -> str:
    model = RunModel()
    model.finish(error={"code": error.code, "message": error.message, "stage": None, "span": error.span,
                        "details": error.details})
    return render_html(model, live=False)


@pytest.mark.parametrize("where", FORGED, ids=range(len(FORGED)))
def test_a_forged_where_is_shown_as_inert_clipped_text(where: Any) -> None:
    error = error_of(where)
    report = terminal_safe("\n".join(describe_error(error, lambda file, line: "x = 1")))
    assert not any(c in report for c in "\x1b\x07\u202e")
    place = where_text(error.details, error.span)
    assert place is None or len(place) < (WHERE_NAME + 40) * (WHERE_FRAMES + 1)
    assert live_markup(view_html(error), POLICY) == []


def test_only_well_formed_frames_are_named() -> None:
    assert where_text(error_of(FORGED[2]).details) is None
    clipped = where_text(error_of([{"task": "a" * 500}]).details)
    assert clipped == "task " + "a" * (WHERE_NAME - 1) + "…"
    deep = where_text(error_of(FORGED[3]).details, SPAN)
    assert deep is not None and deep.endswith("in … at line 2") and deep.count("item 1") == WHERE_FRAMES


def test_the_reopened_door_lets_markup_through_but_the_where_is_not_the_views(monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary does not say where a run failed (the cell's error output does, through
    `describe_error` above): with the view's escaping undone, the forged message's markup
    goes live, and the forged `where` is not in it at all."""
    monkeypatch.setattr(run_html, "_e", lambda value: "" if value is None else str(value))
    forged = FlowError.from_dto({"code": "evaluation", "message": MARKUP, "span": SPAN, "details": {"where": FORGED[0]}})
    page = view_html(forged)
    assert live_markup(page, POLICY)
    assert "task" not in page and "branch" not in page

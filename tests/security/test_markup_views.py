"""Every field of every view escaped, forged ones included (issue 15, item 2).

A bypassed sandbox can send any event `data`: markup in names, ids, labels, stage names,
codes, messages; strings where numbers are expected (progress, tokens, latency, attempt
numbers, span lines and columns); objects where strings are expected. Here a run's worth
of events — every kind the run model reads, every field it shows — is poisoned leaf by
leaf with attribute- and element-breaking payloads, folded into the run model (live, one
event at a time, and rebuilt in canonical order as a finished cell is) and rendered; an
HTML parser then checks that no element, attribute or style outside the view's own
appears. The approval prompt gets the same treatment. The reopened door (the escape
helper swapped for `str`) shows that the check sees the attack.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import pytest

from flow_kernel.runtime.events.vocabulary import POINTS, SCOPES
from flow_kernel.views import prompts as prompts_module
from flow_kernel.views import run_html
from flow_kernel.views.run_html import STYLE, render_html
from flow_kernel.views.run_model import RunModel
from tests.security.markup_check import live_markup, view_policy

POLICY = view_policy(STYLE)

PAYLOADS = [
    '"><img src=x onerror=alert(1)>',
    "'><svg onload=alert(1)>",
    "</style><script>alert(1)</script><style>",
    '" onmouseover="alert(1)" x="',
    "</pre></code></summary></details><iframe src=javascript:alert(1)></iframe>",
    "<a href=javascript:alert(1)>click</a>",
]

W, P, S, A1, A2 = "w1", "p1", "s1", "a1", "a2"


def _event(kind: str, span_id: str | None, parent: str | None, data: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "run": "r1", "ts": "2026-01-01T00:00:00.000+00:00", "stage": "write",
            "span": {"id": span_id, "parent": parent}, "data": data, "order": [[0]]}


def run_events() -> list[dict[str, Any]]:
    """One run with every event kind and every field the run view shows."""
    attempts = [
        {"kind": "call", "attempt": 1, "ok": False, "invalid": True, "errors": ["the field \"id\" is required"],
         "output": {"x": 1}},
        {"kind": "retry", "attempt": 2, "ok": False, "error": "provider-error", "message": "timed out"},
        {"kind": "repair", "attempt": 3, "ok": True},
    ]
    summary = {"attempts": attempts, "usage": {"input_tokens": 120, "output_tokens": 30}, "latency_ms": 812,
               "provider": "openai", "model": "gpt-x",
               "tool_calls": [{"tool": "lookup", "arguments": {"q": "x"}, "result": ["a", "b"]}]}
    return [
        _event("workflow.started", W, None, {"name": "report", "frame": "f1", "parent": None,
                                             "limits": {"agent_runs": 5, "steps": 100}}),
        _event("pipeline.started", P, W, {"name": "reviews"}),
        _event("stage.started", S, P, {"name": "rate"}),
        _event("agent.started", A1, S, {"agent": "rater", "label": "rate one", "prompt": "Rate this",
                                        "provider": "openai", "model": "gpt-x", "tools": ["lookup"]}),
        _event("model.degraded", A1, None, {"agent": "rater", "label": "rate one", "purpose": "deep-judgement",
                                            "model": "openai/gpt-x"}),
        _event("approval.requested", A1, None, {"kind": "tool", "question": "Run lookup?", "details": {"q": "x"}}),
        _event("approval.resolved", A1, None, {"kind": "tool", "question": "Run lookup?", "answer": True,
                                               "by": "interactive"}),
        _event("provider.waiting", A1, None, {"provider": "openai", "reason": "rpm", "wait_ms": 1200}),
        _event("provider.resumed", A1, None, {"provider": "openai", "reason": "rpm", "waited_ms": 1200}),
        _event("provider.breaker", A1, None, {"provider": "openai", "state": "open", "failures": 5,
                                              "pause_ms": 30000}),
        _event("agent.delta", A1, None, {"agent": "rater", "label": "rate one", "attempt": 1, "round": 1,
                                         "text": "{\"mood\": \"hap", "length": 13, "value": {"mood": "hap"},
                                         "tools": [{"tool": "lookup", "arguments": "{\"q\": \"x"}]}),
        _event("agent.completed", A1, S, {"agent": "rater", "label": "rate one", "output": {"mood": "happy"},
                                          **summary}),
        _event("agent.started", A2, S, {"agent": "writer", "label": "write", "prompt": "Write"}),
        _event("agent.failed", A2, S, {"agent": "writer", "label": "write", "code": "output-validation",
                                       "message": "bad output", **summary}),
        _event("log", S, None, {"text": "rated 3 reviews"}),
        _event("print", S, None, {"text": "hello"}),
        _event("verify.evaluated", S, None, {"passed": False, "message": "all rated", "condition": "n == 3"}),
        _event("require.failed", S, None, {"message": "one each", "condition": "len(r) == 3"}),
        _event("progress", S, None, {"done": 2, "total": 3, "message": "reviews rated"}),
        _event("artifact.published", S, None, {"name": "report.md", "text": "# Report"}),
        _event("artifact.published", S, None, {"name": "data.json", "json": {"n": 3}}),
        _event("panel.started", S, None, {"panel": "review", "label": "essay", "rounds": 2, "spread": 1,
                                          "experts": [{"agent": "rater", "domain": "history"}],
                                          "criteria": [{"id": "accuracy", "weight": 3, "low": 1, "high": 5}]}),
        _event("panel.verdict", S, None, {"panel": "review", "label": "essay", "round": 1, "expert": "rater",
                                          "domain": "history", "scores": {"accuracy": 4}, "rationale": "fine"}),
        _event("panel.round", S, None, {"panel": "review", "label": "essay", "round": 1, "status": "converged",
                                        "scores": {"accuracy": 4}, "aggregate": 0.75, "spread": 0}),
        _event("panel.completed", S, None, {"panel": "review", "label": "essay", "status": "converged", "rounds": 1,
                                            "aggregate": 0.75, "spread": 0}),
        _event("approval.requested", S, None, {"kind": "ask", "question": "Which?", "choice": ["a", "b"]}),
        _event("approval.resolved", S, None, {"kind": "ask", "question": "Which?", "answer": "a", "by": "answers"}),
        _event("approval.requested", S, None, {"kind": "approve", "question": "Ship?", "details": [1, 2]}),
        _event("approval.resolved", S, None, {"kind": "approve", "question": "Ship?", "error": "operator-unavailable"}),
        _event("stage.failed", S, P, {"name": "rate", "code": "assertion", "message": "one each"}),
        _event("pipeline.failed", P, W, {"name": "reviews", "code": "assertion", "message": "one each"}),
        _event("workflow.failed", W, None, {"name": "report", "code": "assertion", "message": "one each",
                                            "span": {"file": "<cell 1>", "line": 3, "column": 5, "end_line": 3,
                                                     "end_column": 9}}),
    ]


def test_the_run_covers_every_event_kind() -> None:
    kinds = {e["type"] for e in run_events()}
    scoped = {f"{s}.{p}" for s in SCOPES for p in ("started", "completed", "failed")}
    assert set(POINTS) <= kinds
    assert scoped - kinds <= {"workflow.completed", "pipeline.completed", "stage.completed"}  # a failing run


def _leaves(value: Any, replace: Callable[[Any], Any]) -> Any:
    if isinstance(value, dict):
        return {k: _leaves(v, replace) for k, v in value.items()}
    if isinstance(value, list):
        return [_leaves(v, replace) for v in value] or [replace(None)]
    return replace(value)


def forged(payload: str, shape: str) -> list[dict[str, Any]]:
    """The run's events with every data leaf (and, for "all", every envelope field but the
    type, the order key too) replaced: "text" puts the payload where any value was — strings where numbers,
    booleans and lists are expected; "object" puts an object holding it (its key too)."""
    replace: Callable[[Any], Any] = (lambda _v: payload) if shape != "object" else (lambda _v: {payload: [payload]})
    events = []
    for i, event in enumerate(run_events()):
        event = copy.deepcopy(event)
        event["data"] = _leaves(event["data"], replace)
        if shape == "all":
            event["run"], event["ts"], event["stage"] = payload, payload, payload
            # order keys of mixed types (the canonical sort must not raise on them)
            event["order"] = [[[payload], [i]], [[i]], payload, [[{payload: i}]]][i % 4]
            event["span"] = {"id": f"{payload}{event['span']['id']}", "parent": event["span"]["parent"] and
                             f"{payload}{event['span']['parent']}"}
        events.append(event)
    return events


def _renders(events: list[dict[str, Any]], payload: str) -> list[str]:
    """The HTML the person sees: the live view after each event, the finished summary."""
    live = RunModel(payload, payload)
    pages = []
    for event in events:
        live.apply(event)
        pages.append(render_html(live, live=True))
    final = RunModel.from_events(events, title=payload)
    final.finish(result={payload: [payload, 1]}, steps=7,
                 error={"code": payload, "message": payload, "stage": payload,
                        "span": {"file": payload, "line": payload, "column": payload, "end_line": payload,
                                 "end_column": payload}})
    pages += [render_html(final, live=True), render_html(final, live=False)]
    assert payload in final.text() or "{" in final.text()  # the text form is plain text, never HTML
    return pages


@pytest.mark.parametrize("shape", ["text", "object", "all"])
@pytest.mark.parametrize("payload", PAYLOADS)
def test_forged_events_leave_nothing_live_in_the_run_view(payload: str, shape: str) -> None:
    for page in _renders(forged(payload, shape), payload):
        assert live_markup(page, POLICY) == [], page


def test_a_completed_run_with_forged_numbers() -> None:
    payload = PAYLOADS[0]
    events = [e for e in forged(payload, "text") if not e["type"].endswith(".failed")]
    for event in events[:3]:
        if event["type"].endswith(".started"):
            events.append({**event, "type": event["type"].replace("started", "completed")})
    model = RunModel.from_events(events)
    model.finish(result=payload, steps=3)
    assert model.status == "completed"
    assert live_markup(render_html(model, live=True), POLICY) == []


def test_the_reopened_door_lets_the_forged_fields_through(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same events with the view's escaping undone: the check finds live markup."""
    monkeypatch.setattr(run_html, "_e", lambda value: "" if value is None else str(value))
    for payload in PAYLOADS:
        if payload.startswith('" on'):
            continue  # attribute-only: no text field sits in an attribute (next test)
        findings = [f for page in _renders(forged(payload, "text"), payload) for f in live_markup(page, POLICY)]
        assert findings, payload


def test_the_reopened_progress_door(monkeypatch: pytest.MonkeyPatch) -> None:
    """A progress event's counts make the width of the summary's bar, an inline style (it
    once went into `max="…"` as it came): only a number computed here gets there."""
    payload = '" onmouseover="alert(1)" x="'
    events = [e for e in forged(payload, "text") if e["type"] in ("workflow.started", "progress")]
    events[1]["data"]["done"] = 2
    model = RunModel.from_events(events)
    assert live_markup(render_html(model), POLICY) == []
    events[1]["data"].update(done=payload, total=1)
    model = RunModel.from_events(events)
    assert live_markup(render_html(model), POLICY) == []
    # Reopened: the counts unchecked, the style written from what came.
    monkeypatch.setattr(run_html, "progress_fraction", lambda done, total: done)
    monkeypatch.setattr(run_html, "fill_style", lambda fraction, colour: f"width:{fraction}")
    assert "event handler onmouseover= on <span>" in live_markup(render_html(model), POLICY)


# --- the approval prompt ------------------------------------------------------------------------


def _prompt_html(request: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The HTML widgets and the button labels of the prompt `request` shows."""

    async def show() -> tuple[list[str], list[str]]:
        box = prompts_module.Prompts()
        task = asyncio.ensure_future(box.ask(request))
        await asyncio.sleep(0)
        (prompt,) = box.box.children
        html = [w.value for w in prompt.children if hasattr(w, "value") and type(w).__name__ == "HTML"]
        labels = [b.description for b in prompt.children[-1].children if type(b).__name__ == "Button"]
        box.answer(None)
        await task
        box.close()
        return html, labels

    return asyncio.run(show())


@pytest.mark.parametrize("payload", PAYLOADS)
def test_forged_prompts_leave_nothing_live(payload: str) -> None:
    for request in ({"kind": "approve", "question": payload, "details": {payload: [payload]}},
                    {"kind": "ask", "question": payload, "choice": [payload, payload + "2"]},
                    {"kind": "ask", "question": {payload: payload}, "details": payload}):
        html, labels = _prompt_html(request)
        assert html and all(live_markup(h, POLICY) == [] for h in html), html
        # Button labels are set as text by ipywidgets (`createTextNode`), never parsed as HTML.
        assert labels in (["Approve", "Deny"], [payload, payload + "2"], ["Answer"]), labels


def test_the_reopened_prompt_door(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prompts_module, "escape", lambda value: "" if value is None else str(value))
    html, _ = _prompt_html({"kind": "approve", "question": PAYLOADS[0], "details": None})
    assert live_markup(html[0], POLICY)


def test_a_forged_error_span_is_no_span() -> None:
    """An error's span from the sandbox feeds carets and source lines (the view, `flow run`,
    the kernel): anything but a Flow location is dropped, not trusted."""
    from flow_kernel.errors import FlowError
    from flow_kernel.runtime.events.failure_report import describe_error

    good = {"file": "<cell 1>", "line": 2, "column": 3, "end_line": 2, "end_column": 5}
    assert FlowError.from_dto({"code": "assertion", "message": "m", "span": good}).span == good
    for span in ({**good, "line": PAYLOADS[0]}, {**good, "column": 10**12}, {"file": PAYLOADS[0]},
                 {**good, "file": {"x": 1}}, {**good, "end_column": True}, PAYLOADS[0]):
        error = FlowError.from_dto({"code": "assertion", "message": PAYLOADS[0], "span": span})
        assert error.span is None, span
        assert describe_error(error, lambda file, line: "x")  # the report is written, nothing raised

"""Purposes that degrade: `model: "for:<purpose> else default"` uses the session's model when
the configuration sets none for the purpose, and the run records it (a `model.degraded`
event, a line of the summary); plain `for:<purpose>` still fails closed."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from flow_kernel import Session
from flow_kernel.lang import check
from flow_kernel.lang.purposes import by_purpose, degrades, purpose_of
from flow_kernel.runtime.config import parse_config
from flow_kernel.runtime.events.terminal import TerminalProgress
from flow_kernel.source import SourceFile
from flow_kernel.views.run_html import render_html
from flow_kernel.views.run_model import RunModel

DEGRADING = 'agent judge { model: "for:deep-judgement else default" }\njudge("Is this sound?")\n'
PLAIN = 'agent judge { model: "for:deep-judgement" }\njudge("Is this sound?")\n'


def test_a_model_string_names_its_purpose_and_whether_it_degrades() -> None:
    assert purpose_of("for:deep-judgement else default") == purpose_of("for:deep-judgement") == "deep-judgement"
    assert degrades("for:deep-judgement else default") and not degrades("for:deep-judgement")
    models = {"deep-judgement": "openai/gpt-4o"}
    assert by_purpose("for:deep-judgement else default", models, "mock") == ("openai/gpt-4o", False)
    assert by_purpose("for:deep-judgement else default", {}, "mock") == ("mock", True)
    assert by_purpose("for:deep-judgement else default", {}, None) == (None, False)
    assert by_purpose("for:deep-judgement", {}, "mock") == (None, False)


def test_in_a_file_only_the_plain_form_needs_the_purpose_configured() -> None:
    def codes(source: str) -> list[str]:
        return [d.code for d in check(SourceFile("m.flow", source), models={}).diagnostics if d.is_error]

    assert codes(PLAIN) == ["F4026"]
    assert codes(DEGRADING) == []
    found = check(SourceFile("m.flow", DEGRADING.replace("else default", "else session")), models={}).diagnostics
    assert [d.code for d in found] == ["F4025"]
    assert found[0].hints == ("a purpose falls back to the session's model with `else default`: "
                              "`for:deep-judgement else default`",)
    assert [d.code for d in check(SourceFile("m.flow", DEGRADING.replace("deep-judgement", "deep")),
                                  models={}).diagnostics] == ["F4025"]


def _run(tmp_path: Path, source: str, config: dict[str, Any]) -> Any:
    session = Session(directory=tmp_path, config=parse_config(config), operator="none", sandbox=False, journal_dir=None)
    return session.run(source)


def test_with_no_model_for_the_purpose_the_call_uses_the_sessions_and_says_so(tmp_path: Path) -> None:
    outcome = _run(tmp_path, DEGRADING, {"default_model": "mock"})
    assert outcome.error is None, outcome.error
    (started,) = [e for e in outcome.events if e["type"] == "agent.started"]
    (degraded,) = [e for e in outcome.events if e["type"] == "model.degraded"]
    assert started["data"]["model"] == "mock"
    assert degraded["data"] == {"agent": "judge", "label": started["data"]["label"], "purpose": "deep-judgement",
                                "model": "mock"}
    assert degraded["span"]["id"] == started["span"]["id"]  # a point of the call
    model = RunModel.from_events(outcome.events)
    line = "for:deep-judgement has no model configured: used the session's model mock"
    assert f"      {line}" in model.text().splitlines()  # under the call's line
    assert line.replace("'", "&#x27;") in render_html(model)
    terminal = io.StringIO()
    progress = TerminalProgress(terminal)
    for event in outcome.events:
        progress(event)
    assert f"    ↓ {line}" in terminal.getvalue().splitlines()  # `flow run`'s view, inside the call


def test_a_configured_purpose_is_used_and_nothing_is_recorded(tmp_path: Path) -> None:
    outcome = _run(tmp_path, DEGRADING, {"default_model": "scripted",
                                                                       "models": {"deep-judgement": "mock"}})
    assert outcome.error is None, outcome.error
    assert [e["data"]["model"] for e in outcome.events if e["type"] == "agent.started"] == ["mock"]
    assert not [e for e in outcome.events if e["type"] == "model.degraded"]


def test_the_plain_form_still_fails_closed(tmp_path: Path) -> None:
    outcome = _run(tmp_path, PLAIN, {"default_model": "mock"})
    assert outcome.error is not None and outcome.error.code == "agent-invocation"
    assert "no model is configured for the purpose `deep-judgement`" in outcome.error.message
    assert "fall back" not in outcome.error.message


def test_degrading_with_no_session_model_either_fails_naming_both(tmp_path: Path) -> None:
    outcome = _run(tmp_path, DEGRADING, {})
    assert outcome.error is not None and outcome.error.code == "agent-invocation"
    message = outcome.error.message
    assert "`deep-judgement = \"provider/model\"`" in message and "set `default_model`" in message
    assert not [e for e in outcome.events if e["type"] == "model.degraded"]

"""The live run view's front end (widgets/src) draws a call's live state as text: streamed
model text, a provider's name and reason of a wait, a breaker's state, the purpose and model of a
call that fell back to the session's model — each poisoned with
element- and attribute-breaking payloads, made into wire records by the host's Compactor,
folded by the browser's reducer and drawn by its renderer in Node; an HTML parser then finds
nothing live outside the view's own markup. The reopened door (the card's streamed text drawn
without escaping, in a copy of the sources) shows that the check sees the attack."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.sandbox.node import find_node
from flow_kernel.views.run_stream import Compactor
from tests.security.markup_check import Policy, live_markup
from tests.security.test_markup_views import PAYLOADS

ROOT = Path(__file__).resolve().parents[2]
# What the live view draws itself: its elements, classes, data attributes for its clicks.
WIDGET = Policy(
    tags=frozenset({"div", "header", "span", "strong", "small", "label", "input", "select", "option", "button",
                    "pre", "code", "details", "summary"}),
    attributes={"*": frozenset({"class", "style", "data-act", "data-id", "data-group", "data-to", "aria-label",
                                "role", "title", "type", "value", "selected", "checked", "disabled"})},
    classes=True,
    inline_styles=True,
)
SCRIPT = """
import { readFileSync } from "node:fs";
const src = process.argv[1];
const { applyMessage, emptyState } = await import(src + "/reducer.js");
const { emptyUi, renderRun } = await import(src + "/render.js");
const records = JSON.parse(readFileSync(0, "utf8"));
const state = applyMessage(emptyState(), { t: "batch", from: 0, ev: records });
process.stdout.write(renderRun(state, emptyUi(), "run", 1000));
"""


def ev(type_: str, span: str, parent: str | None, **data: Any) -> dict[str, Any]:
    return {"type": type_, "span": {"id": span, "parent": parent}, "data": data, "ts": "2026-01-01T00:00:00+00:00"}


def records(payload: str) -> list[dict[str, Any]]:
    compact = Compactor()
    events = [
        ev("workflow.started", "w", None, name="main"),
        ev("agent.started", "c1", "w", agent="a", label="one", prompt="p"),
        ev("agent.started", "c2", "w", agent="a", label="two", prompt="p"),
        ev("agent.delta", "c1", "w", agent=payload, label=payload, attempt=1, round=1, text=payload,
           length=len(payload)),
        ev("agent.delta", "c1", "w", agent="a", label=None, attempt=1, round=1, text=payload * 40,
           length=len(payload) * 41),
        ev("provider.waiting", "c2", "w", provider=payload, reason=payload, wait_ms=1000),
        ev("provider.breaker", "c2", "w", provider=payload, state=payload, failures=5, pause_ms=30_000),
        ev("model.degraded", "c2", "w", agent=payload, label=payload, purpose=payload, model=payload),
    ]
    return [r for r in map(compact, events) if r is not None]


def draw(payload: str, src: Path = ROOT / "widgets" / "src") -> str:
    done = subprocess.run([find_node().path, "--input-type=module", "-e", SCRIPT, src.as_uri()],
                          input=json.dumps(records(payload)), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_calls_live_state_is_drawn_as_text(payload: str) -> None:
    html = draw(payload)
    assert 'class="fr-stream"' in html and "fr-waiting" in html and "fr-breaker" in html  # all of it drawn
    assert 'class="fr-degraded"' in html
    assert live_markup(html, WIDGET) == []


def test_the_reopened_door_lets_streamed_markup_through(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(ROOT / "widgets" / "src", src)
    render = src / "render.js"
    text = render.read_text(encoding="utf-8")
    assert "${esc(call.stream.text)}" in text
    render.write_text(text.replace("${esc(call.stream.text)}", "${call.stream.text}"), encoding="utf-8")
    assert live_markup(draw(PAYLOADS[0], src), WIDGET) != []

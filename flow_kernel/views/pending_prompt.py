"""A waiting run's open request as a prompt (docs/durability.md): what `%resume RUN` shows
before the run goes on, in whichever kernel opens the run. The prompt itself is the run
view's prompt machinery (views/prompts.py: Approve / Deny, an `ask`'s choices, a text
box); this module only says what it asks and how a typed answer reads."""

from __future__ import annotations

import json
from typing import Any


def pending_request(run_id: str, pending: dict[str, Any]) -> dict[str, Any]:
    """The prompt for one pending request (`kind`, `question`, `details`, `choice`)."""
    kind = "approve" if pending.get("kind") in ("approve", "tool") else "ask"
    question = f"Run {run_id} waits: {pending.get('question')}"
    choices = pending.get("choices") if isinstance(pending.get("choices"), list) else None
    hint = " [y/n] " if kind == "approve" else f" ({'/'.join(map(str, choices))}) " if choices else " "
    return {"kind": kind, "question": question, "details": pending.get("details"), "choice": choices,
            "run": run_id, "prompt": question + hint}


def typed_answer(pending: dict[str, Any], text: str) -> Any:
    """A typed answer: y/yes for an approval (anything else is no), else the text (JSON strings unquoted)."""
    if pending.get("kind") in ("approve", "tool"):
        return text.strip().lower() in ("y", "yes", "true")
    try:
        value = json.loads(text)
    except ValueError:
        return text.strip()
    return value if isinstance(value, str) else text.strip()

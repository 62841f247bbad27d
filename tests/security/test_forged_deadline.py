"""A forged deadline on `approve`/`ask` (issue 17, item 4): the host answers an unanswered
question with the default the request carries, in a host-only event (`approval.resolved`,
`by: "timeout"`) and the journal — the run's trusted record of what was decided. The
bootstrap sends a positive `timeout_ms` and a default of the answer's type; a bypassed
sandbox that sends anything else gets `capability-violation`, and no decision is recorded.
Sent from raw Python inside a real sandbox; the reopened door records the forged answer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.runtime.durable.deadlines import PromptDeadline
from flow_kernel.runtime.policy.operator import Operator
from tests.sandbox.sandbox_helpers import Sandbox, sandbox
from tests.security.test_flow_doors import ask_host, host_for

__all__ = ["sandbox"]

FORGED: list[tuple[str, Any]] = [
    ("approve", {"question": "Refund everyone?", "timeout_ms": 1, "default": "yes"}),
    ("approve", {"question": "Refund everyone?", "timeout_ms": 1, "default": {"answer": True}}),
    ("ask", {"question": "Which?", "choice": ["keep", "drop"], "timeout_ms": 1, "default": "rm -rf"}),
    ("approve", {"question": "Refund everyone?", "timeout_ms": -1, "default": False}),
    ("approve", {"question": "Refund everyone?", "timeout_ms": 10**30, "default": False}),
]


async def nobody(request: dict[str, Any]) -> Any:
    await asyncio.Event().wait()


def forge(box: Sandbox, tmp_path: Path, requests: list[tuple[str, Any]] = FORGED) -> tuple[list[Any], list[dict[str, Any]]]:
    target = host_for("1", tmp_path, operator=Operator("interactive", callback=nobody))
    results = ask_host(box, target, requests)
    return results, [e["data"] for e in target.events if e["type"] == "approval.resolved"]


def test_forged_deadlines_are_refused_and_nothing_is_decided(sandbox: Sandbox, tmp_path: Path) -> None:
    results, resolved = forge(sandbox, tmp_path)
    assert [r[:2] for r in results] == [["error", "capability-violation"]] * len(FORGED), results
    assert resolved == []  # no decision recorded for any of them
    honest = ask_host(sandbox, host_for("1", tmp_path, operator=Operator("interactive", callback=nobody)),
                      [("approve", {"question": "Refund everyone?", "timeout_ms": 1, "default": False})])
    assert honest == [["ok", False]]


def test_the_reopened_door_records_the_forged_answer(sandbox: Sandbox, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # Without the check: whatever the request carries is the deadline and the default.
    def unchecked(payload: dict[str, Any], kind: str, choice: list[str] | None = None) -> PromptDeadline | None:
        if "timeout_ms" not in payload:
            return None
        return PromptDeadline(payload["timeout_ms"], payload.get("default"))

    monkeypatch.setattr(PromptDeadline, "of", staticmethod(unchecked))
    results, resolved = forge(sandbox, tmp_path, FORGED[:4])  # (the last would wait for ever: nobody answers)
    assert results[2] == ["ok", "rm -rf"], results  # an answer that is none of the choices
    assert {"answer": "yes", "by": "timeout"}.items() <= resolved[0].items()  # the trusted record says so
    assert {"answer": "rm -rf", "by": "timeout"}.items() <= resolved[2].items()

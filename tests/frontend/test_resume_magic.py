"""`%resume` with a person at the front end (frontend/resume_magic.py) and the deadlines it
respects (runtime/durable/deadlines.py `still_open`, `before_due`): a waiting request whose
deadline has passed is not asked, its default is taken `by: "timeout"`; one still open is
asked, and the answer journaled; a prompt left unanswered past the deadline is cancelled."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

from flow_kernel.frontend import CellEnd, CellRunner
from flow_kernel.runtime.durable.deadlines import before_due, still_open, utc_now
from flow_kernel.runtime.durable.journal import read_checkpoint
from tests.frontend.test_cell import NotebookPort, runner  # noqa: F401  (the fixture)

SOON = '%operator defer\nlet ok = approve "Ship tonight?" timeout 10ms else false\nok ? "tonight" : "next train"'
LATER = '%operator defer\nlet ok = approve "Ship tonight?" timeout 2h else false\nok ? "tonight" : "next train"'


def defer_then_resume(runner: CellRunner, code: str, person: NotebookPort) -> tuple[CellEnd, CellEnd]:  # noqa: F811
    async def go() -> tuple[CellEnd, CellEnd]:
        try:
            waiting = await runner.run_cell(code, NotebookPort())
            await asyncio.sleep(0.05)  # past a 10 ms deadline
            return waiting, await runner.run_cell("%resume last", person)
        finally:
            await runner.session.aclose()
    return asyncio.run(go())


def test_a_request_past_its_deadline_is_not_asked_and_takes_its_default(runner: CellRunner) -> None:  # noqa: F811
    person = NotebookPort(answers=["yes"])
    waiting, resumed = defer_then_resume(runner, SOON, person)
    assert waiting.waiting and waiting.outcome is not None
    assert resumed.error is None and resumed.value == "next train"
    assert person.asked == [] and person.answers == ["yes"]  # nobody was asked
    checkpoint = read_checkpoint(runner.session.journal_dir / f"{waiting.outcome.run_id}.jsonl")
    assert checkpoint.status == "completed" and checkpoint.answers == {}
    assert [e.get("by") for e in checkpoint.effects.values()] == ["timeout"]


def test_a_request_still_open_is_asked_and_the_answer_journaled(runner: CellRunner) -> None:  # noqa: F811
    person = NotebookPort(answers=["yes"])
    waiting, resumed = defer_then_resume(runner, LATER, person)
    assert waiting.outcome is not None
    assert resumed.error is None and resumed.value == "tonight"
    assert len(person.asked) == 1 and "Ship tonight?" in person.asked[0]
    checkpoint = read_checkpoint(runner.session.journal_dir / f"{waiting.outcome.run_id}.jsonl")
    [answer] = checkpoint.answers.values()
    assert answer["by"] == "stdin" and answer["value"] is True


def test_still_open_keeps_requests_before_their_deadline_and_those_without_one() -> None:
    now = utc_now()
    past, future = (now - datetime.timedelta(seconds=1)).isoformat(), (now + datetime.timedelta(hours=1)).isoformat()
    requests = [{"id": "a", "due": past}, {"id": "b", "due": future}, {"id": "c"}]
    assert [r["id"] for r in still_open(requests, now)] == ["b", "c"]


def test_before_due_gives_the_answer_in_time_and_cancels_a_prompt_past_the_deadline() -> None:
    cancelled: list[str] = []

    async def person(answer: Any, wait: float) -> tuple[Any, str]:
        try:
            await asyncio.sleep(wait)
        except asyncio.CancelledError:
            cancelled.append(str(answer))
            raise
        return answer, "widget"

    async def go() -> list[Any]:
        soon = (utc_now() + datetime.timedelta(milliseconds=30)).isoformat()
        later = (utc_now() + datetime.timedelta(hours=1)).isoformat()
        past = (utc_now() - datetime.timedelta(seconds=1)).isoformat()
        return [await before_due(later, person(True, 0)), await before_due(None, person(False, 0)),
                await before_due(soon, person("never", 3600)), await before_due(past, person("late", 3600))]

    assert asyncio.run(go()) == [(True, "widget"), (False, "widget"), None, None]
    assert cancelled == ["never", "late"]

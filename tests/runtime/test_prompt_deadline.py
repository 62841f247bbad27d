"""Deadlines on the person (issue 17, item 4): `approve … timeout T else V` and `ask …
timeout T else V`. When nobody answers within T, V is the answer, `by: "timeout"` in the
events and the journal; policies that answer at once answer as before; with nobody able to
answer at all, the run still fails closed. Short deadlines (100 ms), no long sleeps."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from flow_kernel import Session, SourceFile
from flow_kernel.errors import CapabilityViolationError
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable.deadlines import PromptDeadline, expired
from flow_kernel.runtime.host import HostServices
from flow_kernel.runtime.policy import operator as operator_module
from flow_kernel.runtime.policy.operator import Operator
from flow_kernel.runtime.run import RunOutcome, run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor

PROGRAM = '''let ship = approve "Ship?" details { version: "2.4" } timeout 100ms else false
let tone = ask "Which tone?" choice ["formal", "friendly"] timeout 100ms else "friendly"
[ship, tone]'''


def run(source: str, operator: Operator, **settings: Any) -> RunOutcome:
    compiled = compile_source(SourceFile("deadline.flow", source))
    assert compiled.ok, [d.message for d in compiled.check.diagnostics]
    return asyncio.run(run_compiled(compiled, InProcessExecutor(), RunContext(operator=operator, **settings)))


def resolved(outcome: RunOutcome) -> list[tuple[Any, Any]]:
    return [(e["data"].get("answer"), e["data"].get("by") or e["data"].get("error"))
            for e in outcome.events if e["type"] == "approval.resolved"]


def test_nobody_answers_in_time_the_default_is_the_answer_by_timeout(tmp_path: Path) -> None:
    asked: list[dict[str, Any]] = []
    closed: list[str] = []

    async def nobody(request: dict[str, Any]) -> Any:  # a prompt nobody clicks
        asked.append(request)
        try:
            await asyncio.Event().wait()
        finally:
            closed.append(request["question"])  # the prompt is closed once the deadline passed

    outcome = run(PROGRAM, Operator("interactive", callback=nobody), journal_dir=tmp_path)
    assert outcome.error is None, outcome.to_json()
    assert outcome.result == [False, "friendly"]
    assert resolved(outcome) == [(False, "timeout"), ("friendly", "timeout")]
    assert closed == ["Ship?", "Which tone?"]
    # The prompt and the requested event carry the deadline and the default (a view shows them).
    assert [(r["timeout_ms"], r["default"]) for r in asked] == [(100, False), (100, "friendly")]
    requested = [e["data"] for e in outcome.events if e["type"] == "approval.requested"]
    assert [(d["timeout_ms"], d["default"]) for d in requested] == [(100, False), (100, "friendly")]
    # …and the journal holds the decision as it was made.
    assert outcome.journal is not None
    journal = [json.loads(line) for line in outcome.journal.read_text(encoding="utf-8").splitlines()]
    assert [(e["data"]["answer"], e["data"]["by"]) for e in journal if e.get("type") == "approval.resolved"] == \
        [(False, "timeout"), ("friendly", "timeout")]


def test_an_answer_within_the_deadline_wins() -> None:
    async def quick(request: dict[str, Any]) -> Any:
        await asyncio.sleep(0)
        return True if request["kind"] == "approve" else "formal"

    outcome = run(PROGRAM.replace("100ms", "30s"), Operator("interactive", callback=quick))
    assert outcome.result == [True, "formal"]
    assert resolved(outcome) == [(True, "interactive"), ("formal", "interactive")]


@pytest.mark.parametrize(("policy", "expected"), [("auto-approve", [True, "formal"]), ("auto-deny", [False, "formal"])])
def test_policies_that_answer_at_once_are_not_overridden(policy: str, expected: list[Any]) -> None:
    outcome = run(PROGRAM.replace("100ms", "30s"), Operator(policy))
    assert outcome.result == expected
    assert [by for _, by in resolved(outcome)] == [policy, policy]


def test_answers_file_answers_and_unlisted_questions_still_fail_closed() -> None:
    listed = run(PROGRAM.replace("100ms", "30s"), Operator("answers", {"Ship?": True, "Which tone?": "formal"}))
    assert listed.result == [True, "formal"]
    unlisted = run(PROGRAM.replace("100ms", "30s"), Operator("answers", {}))
    assert unlisted.error is not None and unlisted.error.code == "operator-unavailable"


def test_with_nobody_able_to_answer_a_deadline_does_not_answer_for_them() -> None:
    """`none` (and a headless `interactive`) fail closed at once: the default stands in for a
    person who could have answered, not for a missing operator. Were the host to wait the
    deadline out instead, this run would end with `false` after 30 s, not with the error."""
    outcome = run(PROGRAM.replace("100ms", "30s"), Operator("none"))
    assert outcome.error is not None and outcome.error.code == "operator-unavailable"
    assert resolved(outcome) == [(None, "operator-unavailable")]


def test_the_terminal_prompt_shows_the_deadline_and_a_late_line_answers_the_next_question(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The terminal operator reads stdin in one thread: the read left by the prompt whose
    deadline passed is the one the next prompt waits on."""
    read_fd, write_fd = os.pipe()
    stdin = os.fdopen(read_fd, "r")
    shown: list[str] = []

    class Stderr:
        def write(self, text: str) -> None:
            shown.append(text)
            if text.startswith("Really?"):  # the person types only once the second question shows
                threading.Timer(0.05, lambda: os.write(write_fd, b"y\n")).start()

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stderr", Stderr())
    monkeypatch.setattr(operator_module, "_pending_line", None)
    try:
        outcome = run('let a = approve "Ship?" timeout 100ms else false\nlet b = approve "Really?"\n[a, b]',
                      Operator("interactive"))
    finally:
        os.close(write_fd)
    assert outcome.result == [False, True]
    assert resolved(outcome) == [(False, "timeout"), (True, "terminal")]
    assert shown[0] == "Ship? [y/n] (no answer in 100ms: no) "


def test_in_the_real_sandbox_and_bounded_by_the_runs_duration(tmp_path: Path) -> None:
    """The same in the Pyodide sandbox, where the run's `duration` still ends a wait that is
    longer than it (F5023 warns about that when the program is checked)."""
    async def nobody(request: dict[str, Any]) -> Any:
        await asyncio.Event().wait()

    source = '''workflow w() -> bool {
  limits { duration: 300ms }
  return approve "Ship?" timeout 1h else true
}'''
    assert [d.code for d in compile_source(SourceFile("w.flow", source)).check.diagnostics] == ["F5023"]

    async def both() -> tuple[RunOutcome, RunOutcome]:
        async with Session(directory=tmp_path, operator=Operator("interactive", callback=nobody), journal_dir=None) as session:
            timed = await session.run_async(PROGRAM)
            await session.run_async(source)
            return timed, await session.run_async("", workflow="w")

    timed, cut = asyncio.run(both())
    assert timed.error is None, timed.to_json()
    assert timed.result == [False, "friendly"] and resolved(timed) == [(False, "timeout"), ("friendly", "timeout")]
    assert cut.error is not None and cut.error.code == "workflow-timeout"


def test_a_forged_deadline_is_refused_not_answered() -> None:
    """Only the bootstrap sends deadlines, with a positive `timeout_ms` and a default of the
    answer's type; anything else came from a bypassed sandbox."""
    compiled = compile_source(SourceFile("a.flow", "1"))
    host = HostServices(compiled.check, RunContext(run_id="r000000000001", operator=Operator("auto-approve")))
    forged = [{"question": "Ship?", "timeout_ms": -5, "default": False},
              {"question": "Ship?", "timeout_ms": True, "default": False},
              {"question": "Ship?", "timeout_ms": 10**15, "default": False},
              {"question": "Ship?", "timeout_ms": 100, "default": "yes"}]
    for payload in forged:
        with pytest.raises(CapabilityViolationError):
            asyncio.run(host.approve(payload))
    with pytest.raises(CapabilityViolationError):
        asyncio.run(host.ask({"question": "Which?", "choice": ["a", "b"], "timeout_ms": 100, "default": "c"}))
    assert asyncio.run(host.approve({"question": "Ship?", "timeout_ms": 100, "default": False})) is True


def test_a_waiting_requests_deadline_is_a_wall_clock_time() -> None:
    """For a run that stops while it waits (`defer`): the deadline is kept as a time, and is
    checked when the request is answered or the run resumed (a fake clock here)."""
    asked = datetime.datetime(2026, 12, 3, 9, 0, tzinfo=datetime.UTC)
    due = PromptDeadline(2 * 3_600_000, False).due(asked)
    assert due == "2026-12-03T11:00:00.000+00:00"
    assert not expired(due, asked + datetime.timedelta(hours=1, minutes=59))
    assert expired(due, asked + datetime.timedelta(hours=2))
    assert not expired(None, asked) and not expired("not a time", asked)
    assert PromptDeadline(90_000, "formal").describe() == "no answer in 90s: 'formal'"


def test_a_deferred_question_keeps_its_deadline_and_it_is_checked_on_resume(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--operator defer`: the pending record holds when the deadline falls (`due`) and the
    default; resumed before it with no answer, the run waits again; an answer given before
    it stands; past it — no answer, or one given too late — the default is the answer,
    `by: "timeout"`, and answering then is refused. The clock is moved, nothing sleeps."""
    from flow_kernel.runtime.durable import deadlines as prompt_deadline
    from flow_kernel.runtime.durable import resume
    from flow_kernel.runtime.durable.journal import read_checkpoint

    program = 'let ship = approve "Ship?" timeout 2h else false\nship'
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=3)

    def deferred(folder: Path) -> tuple[Session, Any]:
        folder.mkdir()
        s = Session(directory=folder, operator="defer", sandbox=False)
        outcome = s.run(program)
        assert outcome.status == "waiting", outcome.to_json()
        return s, outcome

    # Resumed in time with no answer: still waiting; answered in time: the answer stands.
    s, outcome = deferred(tmp_path / "in-time")
    (record,) = read_checkpoint(outcome.journal).pending.values()
    assert record["default"] is False and expired(record["due"], later) and not expired(record["due"])
    assert outcome.pending[0]["due"] == record["due"] and outcome.pending[0]["default"] is False  # shown to whoever answers
    again = Session(directory=tmp_path / "in-time", operator="defer", sandbox=False).resume(outcome.run_id)
    assert again.status == "waiting" and again.pending[0]["due"] == record["due"]  # the deadline did not move
    (listed,) = resume.list_runs(tmp_path / "in-time" / ".flow" / "runs", waiting=True)
    assert listed.pending[0]["due"] == record["due"]
    assert f"(no answer by {record['due'][:19]}Z: false)" in resume.runs_table([listed])
    pid = outcome.pending[0]["id"]
    s.answer(outcome.run_id, pid, True, by="test")
    answered = Session(directory=tmp_path / "in-time", operator="defer", sandbox=False).resume(outcome.run_id)
    assert answered.result is True and resolved(answered)[-1] == (True, "test")

    # Past the deadline with no answer: the default, by timeout.
    s, outcome = deferred(tmp_path / "late")
    monkeypatch.setattr(prompt_deadline, "utc_now", lambda: later)
    timed_out = Session(directory=tmp_path / "late", operator="defer", sandbox=False).resume(outcome.run_id)
    assert timed_out.result is False and resolved(timed_out)[-1] == (False, "timeout")
    monkeypatch.undo()

    # An answer after the deadline is refused, saying what a resume will do.
    s, outcome = deferred(tmp_path / "refused")
    monkeypatch.setattr(prompt_deadline, "utc_now", lambda: later)
    with pytest.raises(resume.ResumeRefused) as refused:
        s.answer(outcome.run_id, outcome.pending[0]["id"], True, by="test")
    assert refused.value.code == "deadline-passed"
    assert "answers it with its default (false, by timeout)" in str(refused.value)
    monkeypatch.undo()

    # An answer the journal holds with a time past the deadline (given just before it, say,
    # by a clock that ran ahead) counts as late too: the default, by timeout.
    s, outcome = deferred(tmp_path / "too-late")
    monkeypatch.setattr(resume, "now_text", lambda: later.isoformat(timespec="milliseconds"))
    s.answer(outcome.run_id, outcome.pending[0]["id"], True, by="test")
    monkeypatch.undo()
    too_late = Session(directory=tmp_path / "too-late", operator="defer", sandbox=False).resume(outcome.run_id)
    assert too_late.result is False and resolved(too_late)[-1] == (False, "timeout")


def test_from_the_command_line_a_waiting_question_shows_its_deadline(tmp_path: Path) -> None:
    """`flow run --operator defer --format json` (exit 3) and `flow runs --waiting` show when
    the default takes over; `flow answer` in time, then `flow resume`, goes on with the answer."""
    import subprocess

    def flow(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "flow_kernel.cli", *args], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120)

    (tmp_path / "ship.flow").write_text('let ship = approve "Ship?" timeout 2h else false\nship ? "shipped" : "kept"\n',
                                        encoding="utf-8")
    waiting = flow("run", "ship.flow", "--operator", "defer", "--format", "json")
    assert waiting.returncode == 3, waiting.stdout + waiting.stderr
    report = json.loads(waiting.stdout)
    (pending,) = report["pending"]
    assert pending["default"] is False and not expired(pending["due"])
    assert expired(pending["due"], datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=2, seconds=1))
    listed = flow("runs", "--waiting")
    assert f"(no answer by {pending['due'][:19]}Z: false)" in listed.stdout, listed.stdout
    assert flow("answer", report["run"], pending["id"], "true").returncode == 0
    resumed = flow("resume", report["run"], "--format", "json")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout)["result"] == "shipped"

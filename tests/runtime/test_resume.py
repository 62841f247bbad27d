"""The journal as a checkpoint (docs/durability.md): effects answered from it on a resume,
the `defer` operator, answers with who gave them, refusals with codes, stable pending ids,
the header's hashes naming what changed. Against the real sandbox where it matters (the
order keys come from the bootstrap), in-process for the rest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable.journal import read_checkpoint, read_journal
from flow_kernel.runtime.durable.resume import ResumeRefused, list_runs
from flow_kernel.runtime.providers.base import ProviderReply, ProviderRequest
from flow_kernel.runtime.session import Session


class Counting:
    """A provider that answers `ans:<prompt>` and counts what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def attempt(self, request: ProviderRequest) -> ProviderReply:
        self.asked.append(request.prompt)
        return ProviderReply(f"ans:{request.prompt}", {"input_tokens": 1, "output_tokens": 1})


AGENT = 'agent a { model: "counting/m" }\n'
LOOP_OF_APPROVALS = AGENT + '''var got = []
for i in range(3) {
  let x = a("item ${i}")
  let ok = approve "Ship ${x}?"
  got = got + [ok ? x : "held"]
}
let t = now()
let u = uuid()
{got: got, t: t, u: u}
'''


def session(tmp_path: Path, provider: Counting, operator: str = "defer", sandbox: bool = False) -> Session:
    return Session(directory=tmp_path, operator=operator, sandbox=sandbox,
                   context=RunContext(providers={"counting": provider}))


def write(tmp_path: Path, text: str, name: str = "prog.flow") -> str:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return text


def run_file(s: Session, tmp_path: Path, name: str = "prog.flow") -> Any:
    return s.run((tmp_path / name).read_text(encoding="utf-8"), name=str(tmp_path / name))


def test_defer_waits_answers_resume_and_nothing_is_asked_twice(tmp_path: Path) -> None:
    provider = Counting()
    write(tmp_path, LOOP_OF_APPROVALS)
    outcome = run_file(session(tmp_path, provider), tmp_path)
    assert outcome.status == "waiting" and outcome.ok is False and outcome.error is None
    first = outcome.to_json()
    assert first["ok"] is None and first["status"] == "waiting" and first["run"] == outcome.run_id
    (pending,) = first["pending"]
    assert pending["kind"] == "approve" and pending["question"] == "Ship ans:item 0?" and pending["choices"] is None
    ids = [pending["id"]]
    answers = [True, False, True]
    for step, answer in enumerate(answers):
        s = session(tmp_path, provider)
        s.answer(outcome.run_id, ids[-1], answer, by="test")
        outcome = s.resume(outcome.run_id)
        if step < 2:
            assert outcome.status == "waiting", outcome.to_json()
            ids.append(outcome.pending[0]["id"])
    assert outcome.ok, outcome.to_json()
    assert outcome.result["got"] == ["ans:item 0", "held", "ans:item 2"]
    assert len(set(ids)) == 3  # one id per approval of the loop
    assert provider.asked == ["item 0", "item 1", "item 2"]  # each call once, over four executions
    checkpoint = read_checkpoint(outcome.journal)
    assert checkpoint.executions == 4 and checkpoint.status == "completed"
    assert [a["by"] for a in checkpoint.answers.values()] == ["test"] * 3
    # the same run again from its journal is refused: it has ended
    with pytest.raises(ResumeRefused) as refused:
        session(tmp_path, provider).resume(outcome.run_id)
    assert refused.value.code == "run-ended"


def test_pending_ids_are_stable_across_resumes(tmp_path: Path) -> None:
    write(tmp_path, LOOP_OF_APPROVALS)
    provider = Counting()
    outcome = run_file(session(tmp_path, provider), tmp_path)
    again = session(tmp_path, provider).resume(outcome.run_id)  # not answered: waits at the same request
    assert again.pending == outcome.pending
    assert list_runs(tmp_path / ".flow" / "runs", waiting=True)[0].pending == outcome.pending


def test_now_and_uuid_keep_their_journaled_values(tmp_path: Path) -> None:
    write(tmp_path, AGENT + 'let t = now()\nlet u = uuid()\nlet ok = approve "go?"\n{t: t, u: u}')
    provider = Counting()
    waiting = run_file(session(tmp_path, provider), tmp_path)
    effects = read_checkpoint(waiting.journal).effects
    journaled = {key.split(":")[0]: record["result"] for key, record in effects.items()}
    s = session(tmp_path, provider)
    s.answer(waiting.run_id, waiting.pending[0]["id"], True, by="test")
    done = s.resume(waiting.run_id)
    assert done.result == {"t": journaled["now"], "u": journaled["uuid"]}


def test_answers_are_refused_clearly(tmp_path: Path) -> None:
    write(tmp_path, AGENT + 'let which = ask "Which?" choice ["A", "B"]\nwhich')
    provider = Counting()
    s = session(tmp_path, provider)
    waiting = run_file(s, tmp_path)
    pid = waiting.pending[0]["id"]
    assert waiting.pending[0]["choices"] == ["A", "B"]

    def code(run: str, pending: str, value: Any) -> str:
        with pytest.raises(ResumeRefused) as refused:
            s.answer(run, pending, value)
        return refused.value.code

    assert code("r000000000000", pid, "A") == "unknown-run"
    assert code("../../etc/passwd", pid, "A") == "unknown-run"
    assert code(waiting.run_id, "pnope", "A") == "unknown-pending"
    assert code(waiting.run_id, pid, "C") == "bad-answer"
    assert code(waiting.run_id, pid, True) == "bad-answer"
    record = s.answer(waiting.run_id, pid, "B", by="%answer")
    assert record["by"] == "%answer" and record["user"]
    assert code(waiting.run_id, pid, "A") == "already-answered"
    done = s.resume(waiting.run_id)
    assert done.result == "B"
    assert code(waiting.run_id, pid, "A") == "run-ended"


def test_resume_after_editing_the_source_names_what_changed(tmp_path: Path) -> None:
    provider = Counting()
    write(tmp_path, 'agent a { model: "counting/m", role: "writer" }\ntype T = { n: int }\n'
                    'let x = a("one")\nlet ok = approve "go?"\nx')
    waiting = run_file(session(tmp_path, provider), tmp_path)
    write(tmp_path, 'agent a { model: "counting/m", role: "editor" }\ntype T = { n: int }\n'
                    'let x = a("one")\nlet ok = approve "go?"\nx')
    with pytest.raises(ResumeRefused) as refused:
        session(tmp_path, provider).resume(waiting.run_id)
    assert refused.value.code == "source-changed"
    assert "the declaration `a` changed" in refused.value.message and "`T`" not in refused.value.message
    write(tmp_path, 'agent a { model: "counting/m", role: "writer" }\ntype T = { n: int }\n'
                    'let x = a("one!")\nlet ok = approve "go?"\nx')
    with pytest.raises(ResumeRefused) as refused:
        session(tmp_path, provider).resume(waiting.run_id)
    assert refused.value.code == "source-changed" and "the statements of prog.flow changed" in refused.value.message
    assert provider.asked == ["one"]  # nothing ran on a refusal


def test_resume_refuses_another_input(tmp_path: Path) -> None:
    provider = Counting()
    source = AGENT + 'workflow w(n: int) -> string {\n  let ok = approve "go ${n}?"\n  return a("n ${n}")\n}\n'
    s = session(tmp_path, provider)
    write(tmp_path, source, "w.flow")
    outcome = s.run(source, name=str(tmp_path / "w.flow"), workflow="w", input={"n": 1})
    assert outcome.status == "waiting"
    with pytest.raises(ResumeRefused) as refused:
        session(tmp_path, provider).resume(outcome.run_id, input={"n": 2})
    assert refused.value.code == "input-changed" and "the input" in refused.value.message
    s2 = session(tmp_path, provider)
    s2.answer(outcome.run_id, outcome.pending[0]["id"], True)
    assert s2.resume(outcome.run_id).result == "ans:n 1"  # the journaled input


def test_an_interrupted_run_resumes_from_its_last_effect_in_the_sandbox(tmp_path: Path) -> None:
    """Against the real sandbox: the effects' positions come from the bootstrap. The journal
    is cut after the second agent effect (what a kill there leaves); the resume answers two
    calls from it and asks the provider for the rest, parallel branches included."""
    provider = Counting()
    write(tmp_path, AGENT + 'let head = [a("x"), a("y")]\nlet rest = parallelMap(["p", "q", "r"], s => a(s), '
                            'concurrency: 3)\nhead + rest')
    complete = run_file(session(tmp_path, provider, "none", sandbox=True), tmp_path)
    assert complete.ok, complete.to_json()
    lines = complete.journal.read_text(encoding="utf-8").splitlines()
    effects = [i for i, line in enumerate(lines) if json.loads(line).get("journal") == "effect"]
    cut = tmp_path / ".flow" / "runs" / "r0123456789ab.jsonl"
    kept = [line.replace(complete.run_id, "r0123456789ab") for line in lines[:effects[1] + 1]]
    # A journal can only be resumed under its own id: its seals say so. Re-seal for the copy.
    cut.write_text("", encoding="utf-8")
    from flow_kernel.runtime.durable.journal import Journal

    journal = Journal(tmp_path / ".flow" / "runs", "r0123456789ab", append=True)
    for line in kept:
        record = json.loads(line)
        if "journal" in record:
            kind = record.pop("journal")
            record.pop("run"), record.pop("mac")
            journal.record(kind, record)
        else:
            journal(record)
    journal.close()
    provider.asked.clear()
    resumed = session(tmp_path, provider, "none", sandbox=True).resume("r0123456789ab")
    assert resumed.result == complete.result
    assert sorted(provider.asked) == ["p", "q", "r"]
    assert read_checkpoint(cut).executions == 2
    assert [e["type"] for e in read_journal(cut)][-1] == "workflow.completed"


def test_runs_are_listed_with_their_status(tmp_path: Path) -> None:
    from flow_kernel.runtime.durable.journal import Journal

    provider = Counting()
    s = session(tmp_path, provider, operator="none")
    completed = s.run(AGENT + 'a("x")')
    failed = s.run(AGENT + 'let ok = approve "go?"\nok')  # operator `none`: operator-unavailable
    waiting = session(tmp_path, provider).run(AGENT + 'let ok = approve "go?"\nok')
    runs = tmp_path / ".flow" / "runs"
    interrupted = Journal(runs, "r00000000000a")
    interrupted.record("header", {"program": {"kind": "cell", "name": "<cell>", "text": "1"}})
    interrupted.close()  # a header and no end: what a kill leaves
    running = Journal(runs, "r00000000000b")  # held open (and locked) by this process
    running.record("header", {"program": {"kind": "cell", "name": "<cell>", "text": "1"}})
    try:
        statuses = {info.run: (info.status, info.error) for info in list_runs(runs)}
        assert statuses[completed.run_id] == ("completed", None)
        assert statuses[failed.run_id] == ("failed", "operator-unavailable")
        assert statuses[waiting.run_id][0] == "waiting"
        assert statuses["r00000000000a"][0] == "interrupted"
        assert statuses["r00000000000b"][0] == "running"
        assert [info.run for info in list_runs(runs, waiting=True)] == [waiting.run_id]
        with pytest.raises(ResumeRefused) as refused:
            session(tmp_path, provider).answer("r00000000000b", "p0", True)
        assert refused.value.code == "run-going-on"
    finally:
        running.close()


def test_a_cell_resumes_in_a_new_session_with_the_declarations_it_used(tmp_path: Path) -> None:
    """A notebook after a restart: the cell's text comes from the journal, the declarations
    of earlier cells from the new session — more of them is fine, a changed one refuses, and
    one the new session lacks comes from the journal (test_resume_declarations.py)."""
    provider = Counting()
    declare = 'agent a { model: "counting/m", role: "scout" }'
    first = session(tmp_path, provider)
    first.run(declare)
    waiting = first.run('let x = a("look")\nlet ok = approve "go ${x}?"\nok ? x : "no"')
    assert waiting.status == "waiting"
    first.answer(waiting.run_id, waiting.pending[0]["id"], True)

    changed = session(tmp_path, provider)
    changed.run(declare.replace("scout", "spy"))
    with pytest.raises(ResumeRefused) as refused:
        changed.resume(waiting.run_id)
    assert refused.value.code == "source-changed" and "`a` changed" in refused.value.message

    empty = session(tmp_path, provider)
    assert empty.prepare_resume(waiting.run_id).compiled.ok  # `a` as the journal holds it
    assert "a" in empty.scope.decls

    again = session(tmp_path, provider)
    again.run('type Other = { n: int }')  # another cell run since: no matter
    again.run(declare)
    assert again.resume(waiting.run_id).result == "ans:look"
    assert provider.asked == ["look"]


class ToolUser(Counting):
    """Asks for `refund` (approval-gated) once per attempt, then answers with what it got."""

    async def attempt(self, request: ProviderRequest) -> ProviderReply:
        self.asked.append(request.prompt)
        assert request.call_tool is not None
        got = await request.call_tool("refund", {"order": "A1"})
        return ProviderReply(f"refund: {json.dumps(got)}", {})


def test_an_approval_gated_tool_defers_and_runs_once_after_the_answer(tmp_path: Path) -> None:
    source = ('tool refund(order: string) -> { ok: bool } requires approval\n'
              'agent clerk { model: "counting/m", tools: [refund] }\nclerk("refund A1")')
    refunds: list[str] = []
    provider = ToolUser()

    def make() -> Session:
        s = session(tmp_path, provider)
        s.tool(lambda order: refunds.append(order) or {"ok": True}, name="refund")
        return s

    waiting = make().run(source)
    (pending,) = waiting.pending
    assert pending["kind"] == "tool" and pending["details"] == {"tool": "refund", "arguments": {"order": "A1"}}
    assert refunds == []
    again = make().resume(waiting.run_id)  # not answered yet: the same request, the same id
    assert again.pending == waiting.pending and refunds == []
    s = make()
    s.answer(waiting.run_id, pending["id"], True, by="test")
    done = s.resume(waiting.run_id)
    assert done.result == 'refund: {"ok": true}', done.to_json()
    assert refunds == ["A1"]  # the tool ran once
    # The attempt stopped at the approval was made again on each execution (it had not completed).
    assert len(provider.asked) == 3

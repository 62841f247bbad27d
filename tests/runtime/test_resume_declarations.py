"""A cell run resumed in a new session (a new kernel) whose declarations came from earlier
cells: the journal header holds their text, so the run resumes with what it ran with
(no F2007, no `source-changed`); a declaration the person changed still refuses the resume."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow_kernel.runtime.durable.journal import read_checkpoint
from flow_kernel.runtime.durable.resume import ResumeRefused, journaled_declarations
from flow_kernel.runtime.session import Session

DECLARATIONS = '''type Triage = { id: string, severity: "low" | "high" }
agent t { model: "scripted", output: Triage, script: [when("triage", { id: "I-1", severity: "high" })] }'''
CELL = '''let found = t("triage")
let ok = approve "Page the on-call for ${found.id}?"
ok ? "paged for ${found.severity}" : "kept"'''


def waiting_run(folder: Path, declarations: str = DECLARATIONS, cell: str = CELL) -> str:
    """A cell that uses an earlier cell's declarations, left waiting for an approval (then
    approved: the answer waits in the journal for the resume)."""
    first = Session(directory=folder, operator="defer", sandbox=False)
    assert first.run(declarations).status == "completed"
    outcome = first.run(cell)
    assert outcome.status == "waiting", outcome.to_json()
    first.answer(outcome.run_id, outcome.pending[0]["id"], True, by="test")
    return outcome.run_id


def test_a_new_session_resumes_with_the_journaled_declarations(tmp_path: Path) -> None:
    run = waiting_run(tmp_path)
    header = read_checkpoint(tmp_path / ".flow" / "runs" / f"{run}.jsonl").header
    assert header is not None and set(header["session_sources"]) == {"Triage", "t"}
    fresh = Session(directory=tmp_path, operator="defer", sandbox=False)
    assert "Triage" not in fresh.scope.decls
    outcome = fresh.resume(run)
    assert outcome.status == "completed", outcome.to_json()
    assert outcome.result == "paged for high"
    assert "Triage" in fresh.scope.decls  # the session has them now, as the run had them


def test_a_declaration_changed_since_still_refuses(tmp_path: Path) -> None:
    run = waiting_run(tmp_path)
    changed = Session(directory=tmp_path, operator="defer", sandbox=False)
    assert changed.run(DECLARATIONS.replace('"low" | "high"', '"low" | "medium" | "high"')).status == "completed"
    with pytest.raises(ResumeRefused) as refused:
        changed.prepare_resume(run)
    assert refused.value.code == "source-changed" and "`Triage` changed" in refused.value.message


def test_only_the_missing_declarations_are_given_back() -> None:
    header = {"session_sources": {"A": "type A = string", "B": "type B = A", "bad": 3}}
    assert journaled_declarations(header, {"A"}) == "type B = A"
    assert journaled_declarations(header, set()) == "type A = string\n\ntype B = A"
    assert journaled_declarations({}, set()) == ""  # a journal written before the header held them

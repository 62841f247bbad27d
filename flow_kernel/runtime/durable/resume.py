"""What makes a run resumable, and who may answer it (docs/durability.md).

- `program_header`: the journal's first record — the program (a file's path, or a cell's
  text: a cell has no file to read it again from), hashes of its source, of each
  declaration and `use`d file it ran with, of its input and of the session values it read,
  and the text of the declarations a cell took from earlier cells (`journaled_declarations`:
  a new kernel declares them again to resume the run).
- `check_unchanged`: a resume re-checks the program as it is now and refuses (`ResumeRefused`,
  code `source-changed` / `input-changed`) when any of those hashes differ, naming what.
- `load_checkpoint` / `resumable`: the run's journal, verified, and whether it can go on
  (`unknown-run`, `journal-forged`, `not-resumable`, `run-ended`, `run-going-on`).
- `record_answer`: `flow answer`, `%answer` and the widget write a pending request's
  answer, with who gave it (`unknown-pending`, `already-answered`, `bad-answer`).
- `list_runs`: every journal with its status, for `flow runs` and `%runs`; `last_run`: the
  newest with a given status (`%resume last` in a kernel that left no run waiting).

Nothing here grants anything: a resumed run gets the capabilities of whoever resumes it
(their flags, their session), never any the journal names.
"""

from __future__ import annotations

import getpass
import json
import re
from collections.abc import Container
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flow_kernel.lang.check_result import CheckResult
from flow_kernel.runtime.durable.deadlines import expired
from flow_kernel.runtime.durable.journal import (
    FORMAT,
    Checkpoint,
    JournalForged,
    RunLocked,
    append_record,
    digest,
    is_locked,
    journal_path,
    locked_for_append,
    now_text,
    read_checkpoint,
    read_journal,
)
from flow_kernel.runtime.durable.nofollow import LinkRefused

CANCELLERS = ("flow cancel", "%cancel", "another process")  # who a journal may say cancelled a run
STATUSES = ("completed", "failed", "cancelled", "waiting", "interrupted", "running")
ENDED = ("completed", "failed", "cancelled")  # final: nothing to resume, answer or cancel


class ResumeRefused(Exception):
    """A resume or an answer that cannot be done; `code` says which refusal, the message why."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


# -- the header -------------------------------------------------------------------------------
def decl_digests(check: CheckResult) -> dict[str, str]:
    """A hash of each declaration the program ran with (its kind and its text)."""
    return {name: digest(f"{entry.kind}\n{_decl_text(entry)}") for name, entry in check.decls.items()}


def _decl_text(entry: Any) -> str:
    span = entry.node.span
    return str(span.source.text[span.start:span.end])


def journaled_declarations(header: dict[str, Any], known: Container[str]) -> str:
    """The text of the declarations a cell run took from earlier cells (as its header
    holds them) that are not `known` now, one after another: what a new kernel declares
    again to resume the run with what it ran with. Empty when none is missing."""
    sources = header.get("session_sources")
    if not isinstance(sources, dict):
        return ""
    return "\n\n".join(str(text) for name, text in sources.items() if name not in known and isinstance(text, str))


def is_cell(name: str) -> bool:
    return name.startswith("<")


def program_header(check: CheckResult, workflow: str | None, input: dict[str, Any] | None,
                   session_values: dict[str, Any] | None, operator: str) -> dict[str, Any]:
    source = check.source
    program: dict[str, Any] = ({"kind": "cell", "name": source.name, "text": source.text} if is_cell(source.name)
                               else {"kind": "file", "path": str(Path(source.name).resolve())})
    values = {name: digest(value) for name, value in (session_values or {}).items()
              if re.search(rf"\b{re.escape(name)}\b", source.text)}  # those the cell may read
    return {"format": FORMAT, "program": program, "source": digest(source.text), "workflow": workflow,
            "input": input, "input_digest": digest(input or {}), "decls": decl_digests(check),
            "session_decls": sorted(n for n, e in check.decls.items() if e.origin == "session"),
            "session_sources": {n: _decl_text(e) for n, e in check.decls.items() if e.origin == "session"},
            "files": {f.name: digest(f.text) for f in check.used_files}, "values": values,
            "operator": operator if operator == "defer" else None, "at": now_text()}


def check_unchanged(header: dict[str, Any], check: CheckResult, input: dict[str, Any] | None,
                    session_values: dict[str, Any]) -> None:
    """Refuse the resume when what the run started with changed, naming each change."""
    run = str(header.get("run"))
    changes: list[str] = []
    then: dict[str, Any] = header.get("decls") or {}
    now = decl_digests(check)
    # A notebook's earlier cells: the session may hold more or fewer declarations than when
    # the cell ran (a new kernel, other cells run since); the cell compiled without those
    # missing, and does not name those added. One it ran with that differs now refuses.
    came_from_session = set(header.get("session_decls") or [])
    in_session_now = {n for n, e in check.decls.items() if e.origin == "session"}
    for name in sorted(set(then) | set(now)):
        if name not in now:
            if name not in came_from_session:
                changes.append(f"the declaration `{name}` was removed")
        elif name not in then:
            if name not in in_session_now:
                changes.append(f"the declaration `{name}` was added")
        elif then[name] != now[name]:
            changes.append(f"the declaration `{name}` changed")
    if header.get("source") != digest(check.source.text) and not changes:
        changes.append(f"the statements of {Path(check.source.name).name} changed")
    files_then: dict[str, Any] = header.get("files") or {}
    files_now = {f.name: digest(f.text) for f in check.used_files}
    changes += [f"the used file {Path(name).name} changed" for name in sorted(files_then)
                if files_now.get(name) != files_then[name]]
    if changes:
        raise ResumeRefused("source-changed", f"run {run} cannot resume: {'; '.join(changes)} since it started. "
                            "A resume re-executes the program it journaled; start a new run for the new one",
                            {"changed": changes})
    if input is not None and digest(input) != header.get("input_digest"):
        raise ResumeRefused("input-changed", f"run {run} cannot resume: the input differs from the one it started with",
                            {"changed": ["the input"]})
    values: dict[str, Any] = header.get("values") or {}
    changed = [name for name in sorted(values) if name not in session_values or digest(session_values[name]) != values[name]]
    if changed:
        raise ResumeRefused("input-changed", f"run {run} cannot resume: the session value(s) "
                            f"{', '.join(f'`{n}`' for n in changed)} it read are missing or differ now "
                            "(run the cells that make them as they were)", {"changed": [f"the session value `{n}`" for n in changed]})


# -- the journal of a run ----------------------------------------------------------------------
def load_checkpoint(journal_dir: Path | None, run_id: str) -> Checkpoint:
    if journal_dir is None:
        raise ResumeRefused("unknown-run", "this session keeps no journal (journal_dir=None): nothing to resume")
    try:
        path = journal_path(journal_dir, run_id)
    except ValueError as exc:
        raise ResumeRefused("unknown-run", str(exc)) from None
    if not path.is_file() or path.is_symlink():
        raise ResumeRefused("unknown-run", f"no run {run_id} in {journal_dir} (see `flow runs`)", {"run": run_id})
    try:
        checkpoint = read_checkpoint(path)
    except (JournalForged, LinkRefused) as exc:
        raise ResumeRefused("journal-forged", str(exc), {"run": run_id}) from None
    if checkpoint.header is None:
        raise ResumeRefused("not-resumable", f"run {run_id} has no checkpoint header (it was journaled by an older "
                            "Flow): it cannot resume", {"run": run_id})
    return checkpoint


def resumable(checkpoint: Checkpoint) -> None:
    """A run can go on when it is waiting or was interrupted, and no process is running it."""
    if checkpoint.status in ENDED:
        raise ResumeRefused("run-ended", f"run {checkpoint.run} has ended ({ended_as(checkpoint)}): there is nothing to "
                            "resume", {"run": checkpoint.run, "status": checkpoint.status})
    if is_locked(checkpoint.path):
        raise ResumeRefused("run-going-on", f"run {checkpoint.run} is going on in another process",
                            {"run": checkpoint.run})


def ended_as(checkpoint: Checkpoint) -> str:
    """How a run ended, as its refusals say it: `completed`, `failed`, `cancelled by flow cancel`."""
    by = checkpoint.ends[-1].get("by") if checkpoint.status == "cancelled" and checkpoint.ends else None
    return f"cancelled by {by}" if isinstance(by, str) and by in CANCELLERS else checkpoint.status


def answer_problem(pending: dict[str, Any], value: Any) -> str | None:
    kind, choices = pending.get("kind"), pending.get("choices")
    if kind in ("approve", "tool"):
        return None if isinstance(value, bool) else "an approval takes true or false"
    if not isinstance(value, str):
        return "a question takes a string"
    if isinstance(choices, list) and value not in choices:
        return f"the answer must be one of {', '.join(map(str, choices))}"
    return None


def record_answer(journal_dir: Path | None, run_id: str, pending: str, value: Any, by: str) -> dict[str, Any]:
    """Write the answer to a waiting run's pending request, with who gave it (`by`, and the
    user account). Refused: an unknown run or request, a run not waiting, a second answer."""
    checkpoint = load_checkpoint(journal_dir, run_id)
    assert journal_dir is not None
    try:
        with locked_for_append(journal_dir, run_id) as fd:
            checkpoint = read_checkpoint(checkpoint.path)  # as it is now that nobody else writes it
            request = checkpoint.pending.get(pending)
            if checkpoint.status in ENDED:
                raise ResumeRefused("run-ended", f"run {run_id} has ended ({ended_as(checkpoint)}): its requests can no "
                                    "longer be answered", {"run": run_id, "status": checkpoint.status})
            if request is None:
                known = ", ".join(checkpoint.pending) or "none"
                raise ResumeRefused("unknown-pending", f"run {run_id} has no pending request {pending[:40]!r} "
                                    f"(its requests: {known})", {"run": run_id, "pending": pending})
            done = checkpoint.answers.get(pending) or next(
                (e for e in checkpoint.effects.values() if e.get("pending") == pending or e.get("key") == request.get("key")), None)
            if done is not None:
                raise ResumeRefused("already-answered", f"request {pending} of run {run_id} was answered already "
                                    f"({done.get('by')}): an answer is given once", {"run": run_id, "pending": pending})
            problem = answer_problem(request, value)
            if problem is not None:
                raise ResumeRefused("bad-answer", f"{problem} (request {pending}: {request.get('question')!r})",
                                    {"run": run_id, "pending": pending})
            if expired(request.get("due")):  # `timeout T else V` (deadlines.py): too late to answer
                raise ResumeRefused("deadline-passed", f"the deadline of request {pending} ({request.get('question')!r}) "
                                    f"passed at {request.get('due')}: resuming run {run_id} answers it with its default "
                                    f"({json.dumps(request.get('default'))}, by timeout)",
                                    {"run": run_id, "pending": pending, "due": request.get("due")})
            return append_record(fd, run_id, checkpoint.last_mac, "answer",
                                 {"id": pending, "value": value, "by": by, "user": user_name(), "at": now_text()})
    except RunLocked:
        raise ResumeRefused("run-going-on", f"run {run_id} is going on in another process: answer it there",
                            {"run": run_id}) from None
    except JournalForged as exc:
        raise ResumeRefused("journal-forged", str(exc), {"run": run_id}) from None


def user_name() -> str:
    """The account answering or cancelling, as journaled with what it did."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return "unknown"


# -- every run ----------------------------------------------------------------------------------
@dataclass
class RunInfo:
    run: str
    status: str
    started: str = ""
    program: str = ""
    events: int = 0
    pending: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None  # the failure's code, or why the journal cannot be read
    cost: float | None = None  # what its priced agent calls cost; None: none was priced
    shown: str = ""  # the status as the table says it, when more than `status` (`cancelled by flow cancel`)

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "status": self.status, "started": self.started, "program": self.program,
                "pending": self.pending, **({"error": self.error} if self.error else {}),
                **({"cost": self.cost} if self.cost is not None else {}),
                **({"ended": self.shown} if self.shown else {})}


def run_info(path: Path) -> RunInfo:
    """One journal's run and its status (`running` while a process writes it)."""
    run = path.stem
    try:
        checkpoint = read_checkpoint(path)
        events = read_journal(path)
    except (JournalForged, LinkRefused, OSError, UnicodeDecodeError) as exc:
        return RunInfo(run, "unreadable", error=str(exc)[:200])
    header = checkpoint.header
    if header is None:  # an older journal: its events say how it ended
        return RunInfo(run, "running" if is_locked(path) else _ending(events), events=len(events))
    program = header.get("program") or {}
    info = RunInfo(run, "running" if is_locked(path) else checkpoint.status, str(header.get("at") or ""),
                   str(program.get("path") or program.get("name") or ""), len(events))
    if info.status == "waiting":
        info.pending = [{k: p.get(k) for k in ("id", "kind", "question", "details", "choices", "due", "default")
                         if k in p or k not in ("due", "default")}  # `due`: the question's deadline, if any
                        for p in checkpoint.unanswered()]
    if info.status == "failed" and checkpoint.ends:
        info.error = str(checkpoint.ends[-1].get("error") or "")
    if info.status == "cancelled":
        info.shown = ended_as(checkpoint)
    info.cost = journal_cost(events)
    return info


def journal_cost(events: list[dict[str, Any]]) -> float | None:
    """What a run's priced agent calls cost, from their `agent.completed`/`agent.failed`
    events (`cost`, lang/prices.py); None when no call was priced."""
    costs = [data["cost"] for e in events if e.get("type") in ("agent.completed", "agent.failed")
             and isinstance(data := e.get("data"), dict) and isinstance(data.get("cost"), int | float)
             and not isinstance(data.get("cost"), bool)]
    return round(sum(costs), 6) if costs else None


def list_runs(journal_dir: Path | None, *, waiting: bool = False) -> list[RunInfo]:
    """The runs journaled in `journal_dir`, oldest first (a link is no journal: skipped)."""
    if journal_dir is None or not journal_dir.is_dir():
        return []
    paths = sorted((p for p in journal_dir.glob("r*.jsonl") if not p.is_symlink() and p.is_file()),
                   key=lambda p: p.stat().st_mtime)
    infos = [run_info(p) for p in paths]
    return [i for i in infos if i.status == "waiting"] if waiting else infos


def last_run(journal_dir: Path | None, statuses: tuple[str, ...]) -> str | None:
    """The newest run journaled in `journal_dir` whose status is one of `statuses` (None: none is)."""
    return next((info.run for info in reversed(list_runs(journal_dir)) if info.status in statuses), None)


def runs_table(infos: list[RunInfo]) -> str:
    """One line per run (and one per pending request of a waiting run): `flow runs`, `%runs`."""
    lines = []
    for info in infos:
        status = (info.shown or info.status) + (f": {info.error}" if info.error and info.status in ("failed", "unreadable") else "")
        cost = f"  cost {info.cost:.6f}" if info.cost is not None else ""
        lines.append(f"{info.run:<15} {status:<28} {info.started[:19]:<20} {Path(info.program).name}{cost}")
        for pending in info.pending:
            due = f"  (no answer by {str(pending['due'])[:19]}Z: {json.dumps(pending.get('default'))})" if pending.get("due") else ""
            lines.append(f"    {pending['id']}  {pending['kind']}: {str(pending['question'])[:100]}{due}")
    return "\n".join(lines)


def _ending(events: list[dict[str, Any]]) -> str:
    top = next((e for e in events if e.get("type") == "workflow.started" and (e.get("span") or {}).get("parent") is None), None)
    for event in reversed(events):
        if event.get("type") in ("workflow.completed", "workflow.failed") and \
                (top is None or (event.get("span") or {}).get("id") == (top.get("span") or {}).get("id")):
            return "completed" if event["type"] == "workflow.completed" else "failed"
    return "interrupted"


__all__ = [
    "CANCELLERS",
    "ENDED",
    "STATUSES",
    "ResumeRefused",
    "RunInfo",
    "check_unchanged",
    "ended_as",
    "journaled_declarations",
    "last_run",
    "list_runs",
    "load_checkpoint",
    "program_header",
    "record_answer",
    "resumable",
    "run_info",
    "runs_table",
    "user_name",
]

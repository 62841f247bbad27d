"""How often a run's journal goes to the disk (docs/durability.md, "When it is flushed"):
a run without effects never syncs (its journal is left with the OS, whole); a run with
effects syncs each effect before it goes on, its header is in the file by the first of
those syncs, and its end is synced when it closes (in a background thread, after the
lock is released)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow_kernel.runtime.durable import journal
from flow_kernel.runtime.run import RunOutcome
from flow_kernel.runtime.session import Session


def _count_syncs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bytes]]:
    """Each disk sync of a journal, with what the file held when it was asked."""
    calls: list[tuple[str, bytes]] = []
    real_fdatasync, real_fsync = journal.os.fdatasync, journal.os.fsync

    def seen(name: str, real: object):  # type: ignore[no-untyped-def]
        def sync(fd: int) -> None:
            calls.append((name, Path(journal.os.readlink(f"/proc/self/fd/{fd}")).read_bytes()))
            real(fd)  # type: ignore[operator]
        return sync

    monkeypatch.setattr(journal.os, "fdatasync", seen("fdatasync", real_fdatasync))
    monkeypatch.setattr(journal.os, "fsync", seen("fsync", real_fsync))
    return calls


def _syncs_of(source: str, folder: Path, operator: str, monkeypatch: pytest.MonkeyPatch
              ) -> tuple[RunOutcome, list[tuple[str, bytes]]]:
    """Run `source` in a session whose first run is done (the journal key is made and synced
    then), and the disk syncs of its journal, once the background sync is done."""
    session = Session(directory=folder, sandbox=False, operator=operator)
    session.run("1 + 1")
    journal.wait_for_syncs()
    calls = _count_syncs(monkeypatch)
    outcome = session.run(source)
    journal.wait_for_syncs()  # the closing fsync is a background thread's
    return outcome, calls


def test_a_run_without_effects_leaves_its_journal_with_the_os(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcome, calls = _syncs_of('print "hi"\n1 + 1', tmp_path, "none", monkeypatch)
    assert outcome.result == 2
    assert calls == []  # no effect, nothing a resume would skip: no disk sync (was one fsync, before that three)
    assert outcome.journal is not None
    with outcome.journal.open() as handle:  # closed, unlocked, and whole: what a killed process leaves too
        journal.fcntl.flock(handle.fileno(), journal.fcntl.LOCK_EX | journal.fcntl.LOCK_NB)
        text = handle.read()
    assert '"journal":"header"' in text and '"type":"print"' in text and '"journal":"end"' in text


def test_a_run_with_an_effect_has_its_header_on_the_disk_before_it_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcome, calls = _syncs_of('agent helper { model: "scripted", script: ["ok"] }\nhelper("hi")', tmp_path, "none",
                               monkeypatch)
    assert outcome.error is None and outcome.result == "ok"
    names = [name for name, _ in calls]
    assert names[0] == "fdatasync" and names[-1] == "fsync", names  # its end goes to the disk too
    assert '"journal":"end"' in calls[-1][1].decode()
    first = calls[0][1].decode()
    assert '"journal":"header"' in first and '"journal":"effect"' in first  # one sync put both on the disk


def test_a_run_that_waits_has_its_question_and_its_end_on_the_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcome, calls = _syncs_of('let ok = approve "Ship it?"\nok', tmp_path, "defer", monkeypatch)
    assert outcome.status == "waiting"
    names = [name for name, _ in calls]
    assert names == ["fdatasync", "fsync"], names  # the pending question before the run stops, then its end
    assert '"journal":"pending"' in calls[0][1].decode() and '"journal":"end"' in calls[1][1].decode()

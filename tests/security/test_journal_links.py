"""Journals are never written through a symbolic link (issue 15, item 7). A link planted at
`.flow`, at `.flow/runs` or at `.flow/runs/<run>.jsonl` (a notebook folder someone sent
you, a shared checkout) used to be followed: the run's events were appended to whatever it
pointed at. Now each is entered or created without following a link, and a run whose
journal cannot be written does not start: `capability-violation`, saying which link."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flow_kernel import Session
from flow_kernel.runtime.durable import journal as journal_module
from flow_kernel.runtime.durable.journal import Journal

PROGRAM = 'print("ran")\n1 + 1\n'
PRECIOUS = "the person's own file\n"


@pytest.fixture()
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("elsewhere")
    (folder / "precious.txt").write_text(PRECIOUS, encoding="utf-8")
    return folder


def flow_run(folder: Path) -> subprocess.CompletedProcess[str]:
    (folder / "prog.flow").write_text(PROGRAM, encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "flow_kernel.cli", "run", "prog.flow"],
                          capture_output=True, text=True, cwd=folder, timeout=120)


def untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["precious.txt"]
    assert (outside / "precious.txt").read_text(encoding="utf-8") == PRECIOUS


@pytest.mark.parametrize("planted", [".flow", ".flow/runs"])
def test_flow_run_refuses_a_linked_journal_folder(tmp_path: Path, outside: Path, planted: str) -> None:
    link = tmp_path / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside, target_is_directory=True)
    out = flow_run(tmp_path)
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert out.stdout == ""  # nothing ran: not even the print
    assert "error[capability-violation]: the run's journal cannot be written" in out.stderr
    assert f"{planted} is a symbolic link" in out.stderr
    untouched(outside)


def test_a_link_at_the_runs_file_is_never_written_through(tmp_path: Path, outside: Path) -> None:
    runs = tmp_path / ".flow" / "runs"
    runs.mkdir(parents=True)
    (runs / "rplanted.jsonl").symlink_to(outside / "precious.txt")
    (runs / "rdangling.jsonl").symlink_to(outside / "created.txt")

    async def go(run_id: str) -> object:
        session = Session(directory=tmp_path)
        try:
            return await session.run_async(PROGRAM, run_id=run_id)
        finally:
            await session.aclose()

    for run_id in ("rplanted", "rdangling"):
        outcome = asyncio.run(go(run_id))
        assert outcome.error is not None and outcome.error.code == "capability-violation"  # type: ignore[attr-defined]
        assert f"{run_id}.jsonl is a symbolic link" in outcome.error.message  # type: ignore[attr-defined]
        assert outcome.events == []  # type: ignore[attr-defined]
    untouched(outside)
    ok = asyncio.run(go("rfresh"))
    assert ok.error is None and (runs / "rfresh.jsonl").is_file()  # type: ignore[attr-defined]


def test_an_existing_file_is_not_appended_to(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "rold.jsonl").write_text("old\n", encoding="utf-8")
    with pytest.raises(OSError, match="already exists"):
        Journal(runs, "rold")
    assert (runs / "rold.jsonl").read_text(encoding="utf-8") == "old\n"


def test_the_person_folder_above_may_be_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "project").symlink_to(real, target_is_directory=True)
    journal = Journal(tmp_path / "project" / ".flow" / "runs", "rok")
    journal({"type": "log"})
    journal.close()
    assert (real / ".flow" / "runs" / "rok.jsonl").read_text(encoding="utf-8") == '{"type":"log"}\n'


def test_the_reopened_door_writes_through_the_link(tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The old journal: make the folders as they resolve and append to the path.
    def follow_folder(path: Path, *, own: int) -> int:
        path.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY)

    monkeypatch.setattr(journal_module, "open_folder", follow_folder)
    monkeypatch.setattr(journal_module, "create_new_file",
                        lambda folder, name, where, mode=0o600: os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                                                                        mode, dir_fd=folder))
    (tmp_path / ".flow").symlink_to(outside, target_is_directory=True)
    journal = Journal(tmp_path / ".flow" / "runs", "rleak")
    journal({"type": "log", "data": {"text": "written outside"}})
    journal.close()
    assert "written outside" in (outside / "runs" / "rleak.jsonl").read_text(encoding="utf-8")


def test_a_planted_link_is_not_read_as_a_journal(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    from flow_kernel.runtime.durable.journal import read_journal
    from flow_kernel.runtime.durable.nofollow import LinkRefused

    secret = tmp_path_factory.mktemp("elsewhere") / "secret.json"
    secret.write_text('{"api_key": "sk-not-for-the-notebook"}\n', encoding="utf-8")
    runs = tmp_path / ".flow" / "runs"
    runs.mkdir(parents=True)
    (runs / "rplanted.jsonl").symlink_to(secret)
    with pytest.raises(LinkRefused, match="not a journal"):
        read_journal(runs / "rplanted.jsonl")
    session = Session(directory=tmp_path)  # %runs and %events, through the kernel's magic machinery
    shown = [str(out) for cell in ("%runs", "%events rplanted") for out in _magic_outputs(session, cell)]
    assert "sk-not-for-the-notebook" not in " ".join(shown) and shown, shown


def _magic_outputs(session: Session, cell: str) -> list[object]:
    from flow_kernel.frontend.magics import MagicError, apply_cell, parse_cell

    try:
        return list(apply_cell(parse_cell(cell), session).outputs)
    except MagicError as exc:
        return [str(exc)]


def test_the_reopened_reader_reads_the_planted_file(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    import json

    secret = tmp_path_factory.mktemp("elsewhere") / "secret.json"
    secret.write_text('{"api_key": "sk-not-for-the-notebook"}\n', encoding="utf-8")
    (tmp_path / "rplanted.jsonl").symlink_to(secret)
    # the old reader: the path as it resolves
    old = [json.loads(line) for line in (tmp_path / "rplanted.jsonl").read_text(encoding="utf-8").splitlines()]
    assert old == [{"api_key": "sk-not-for-the-notebook"}]

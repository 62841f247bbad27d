"""A run's file is made in the runs folder its path names now: the folder entered for an
earlier run is used again only while the path still leads to it (journal.py keeps it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flow_kernel.runtime.durable.journal import Journal, read_journal
from flow_kernel.runtime.durable.nofollow import LinkRefused

EVENT = {"type": "print", "seq": 1, "data": {"text": "hi"}}


def _journal(runs: Path, run_id: str) -> Path:
    journal = Journal(runs, run_id)
    try:
        journal(EVENT)
    finally:
        journal.close()
    return journal.path


def test_runs_in_one_folder_land_in_it(tmp_path: Path) -> None:
    runs = tmp_path / ".flow" / "runs"
    paths = [_journal(runs, f"r{n:012x}") for n in range(3)]
    assert sorted(runs.iterdir()) == sorted(paths)
    assert all(read_journal(p) == [EVENT] for p in paths)


def test_a_runs_folder_removed_between_runs_is_made_again(tmp_path: Path) -> None:
    runs = tmp_path / ".flow" / "runs"
    _journal(runs, "r000000000001")
    (runs / "r000000000001.jsonl").unlink()
    runs.rmdir()
    path = _journal(runs, "r000000000002")
    assert path.parent == runs and read_journal(path) == [EVENT]


def test_a_runs_folder_moved_away_is_not_written_to(tmp_path: Path) -> None:
    runs = tmp_path / ".flow" / "runs"
    _journal(runs, "r000000000001")
    runs.rename(tmp_path / ".flow" / "old")
    path = _journal(runs, "r000000000002")
    assert read_journal(path) == [EVENT]
    assert [p.name for p in (tmp_path / ".flow" / "old").iterdir()] == ["r000000000001.jsonl"]


@pytest.mark.parametrize("linked", [".flow", ".flow/runs"])
def test_a_link_planted_after_a_run_is_refused(tmp_path: Path, linked: str) -> None:
    runs = tmp_path / ".flow" / "runs"
    _journal(runs, "r000000000001")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "runs").mkdir(parents=True)
    os.rename(tmp_path / linked, tmp_path / "moved")
    (tmp_path / linked).symlink_to(elsewhere if linked == ".flow" else elsewhere / "runs", target_is_directory=True)
    with pytest.raises(LinkRefused, match="is a symbolic link"):
        Journal(runs, "r000000000002")
    assert list((elsewhere / "runs").iterdir()) == []

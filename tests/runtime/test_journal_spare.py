"""A runs folder's spare file (journal.py `make_spare_journals`): the next run's journal is a
file made ahead, unnamed, and named when the run starts, with the same refusals as a file
created then (nothing replaced, no link followed, the folder its path names now)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from flow_kernel.runtime.durable import journal as journal_module
from flow_kernel.runtime.durable.journal import (
    Journal,
    is_locked,
    make_spare_journals,
    read_journal,
)
from flow_kernel.runtime.durable.nofollow import LinkRefused
from tests.runtime.test_journal_folder import EVENT, _journal

pytestmark = pytest.mark.skipif(not getattr(os, "O_TMPFILE", 0), reason="unnamed files are Linux's")


def _spare(runs: Path) -> int:
    """The spare made for `runs` (its descriptor), after a run there and `make_spare_journals`."""
    made = make_spare_journals()
    if made is not None:
        made.result()
    spare = journal_module._spares.get(str(runs))
    assert spare is not None
    return spare


def test_the_next_run_names_the_spare_and_nothing_shows_before(tmp_path: Path) -> None:
    runs = tmp_path / ".flow" / "runs"
    first = _journal(runs, "r000000000001")
    spare = os.fstat(_spare(runs))
    assert sorted(runs.iterdir()) == [first]  # unnamed: no run is listed for it
    journal = Journal(runs, "r000000000002")
    try:
        assert os.fstat(journal._fd).st_ino == spare.st_ino  # type: ignore[arg-type]
        assert is_locked(journal.path)
        journal(EVENT)
    finally:
        journal.close()
    status = os.stat(journal.path, follow_symlinks=False)
    assert stat.S_ISREG(status.st_mode) and stat.S_IMODE(status.st_mode) == 0o600 & ~_umask()
    assert read_journal(journal.path) == [EVENT]
    assert str(runs) not in journal_module._spares  # taken: the next one is made after this run


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("planted", ["file", "link"])
def test_a_name_already_there_is_refused_as_before(tmp_path: Path, planted: str) -> None:
    runs = tmp_path / ".flow" / "runs"
    _journal(runs, "r000000000001")
    _spare(runs)
    target = tmp_path / "target"
    target.write_text("theirs")
    if planted == "file":
        (runs / "r000000000002.jsonl").write_text("theirs")
    else:
        (runs / "r000000000002.jsonl").symlink_to(target)
    with pytest.raises(LinkRefused, match="is a symbolic link" if planted == "link" else "already exists"):
        Journal(runs, "r000000000002")
    assert target.read_text() == "theirs"
    assert str(runs) not in journal_module._spares  # the spare was closed, not kept for a later run


def test_a_folder_replaced_by_a_link_after_the_spare_was_made_is_refused(tmp_path: Path) -> None:
    runs = tmp_path / ".flow" / "runs"
    _journal(runs, "r000000000001")
    _spare(runs)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.rename(runs, tmp_path / "moved")
    runs.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(LinkRefused, match="is a symbolic link"):
        Journal(runs, "r000000000002")
    assert list(elsewhere.iterdir()) == []
    assert [p.name for p in (tmp_path / "moved").iterdir()] == ["r000000000001.jsonl"]
    assert str(runs) not in journal_module._spares


def test_a_folder_moved_away_after_the_spare_was_made_gets_no_run(tmp_path: Path) -> None:
    runs = tmp_path / ".flow" / "runs"
    _journal(runs, "r000000000001")
    _spare(runs)
    runs.rename(tmp_path / ".flow" / "old")
    path = _journal(runs, "r000000000002")
    assert path.parent == runs and read_journal(path) == [EVENT]
    assert [p.name for p in (tmp_path / ".flow" / "old").iterdir()] == ["r000000000001.jsonl"]


def test_one_spare_a_folder_and_none_without_an_earlier_run(tmp_path: Path) -> None:
    runs = tmp_path / ".flow" / "runs"
    made = make_spare_journals()
    if made is not None:
        made.result()
    assert str(runs) not in journal_module._spares  # never entered: nothing is made there
    _journal(runs, "r000000000001")
    spare = _spare(runs)
    assert _spare(runs) == spare  # made once, until a run takes it
    assert make_spare_journals() is None  # nothing to make: no work for the thread


def test_a_folder_left_while_its_spare_is_made_does_not_keep_it(tmp_path: Path) -> None:
    runs = tmp_path / ".flow" / "runs"
    _journal(runs, "r000000000001")
    go_on = threading.Event()
    journal_module._syncer().submit(go_on.wait, 60)  # the journals' thread is busy until then
    made = make_spare_journals()
    assert made is not None
    with journal_module._runs_folders_lock:
        journal_module._forget_runs_folder(str(runs))
    go_on.set()
    made.result()
    assert str(runs) not in journal_module._spares and not journal_module._spares_coming

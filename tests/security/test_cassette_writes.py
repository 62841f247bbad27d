"""Cassette writes (issue 15, item 1): `%record` / `--record` / `Session.record` never follow a
symbolic link at the cassette's path and never truncate a file that is not a cassette (an
empty file or a cassette is fine). `%record notes.py` used to wipe notes.py and then append
model-controlled lines to it; a link planted at `calls.jsonl` did the same to its target."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flow_kernel import Session
from flow_kernel.runtime.durable import cassette
from flow_kernel.runtime.durable.cassette import CassetteRecorder

PROGRAM = 'agent w { model: "mock", output: { title: string } }\nw("hello").title\n'
PRECIOUS = "def keep_me():\n    return 'the notes of a person'\n"


def flow_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "prog.flow").write_text(PROGRAM, encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "flow_kernel.cli", "run", "prog.flow", *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)


@pytest.fixture()
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A file the person cares about, outside the folder of the program."""
    target = tmp_path_factory.mktemp("elsewhere") / "precious.py"
    target.write_text(PRECIOUS, encoding="utf-8")
    return target


def test_a_link_at_the_cassette_path_is_refused(tmp_path: Path, outside: Path) -> None:
    (tmp_path / "calls.jsonl").symlink_to(outside)
    out = flow_run(tmp_path, "--record", "calls.jsonl")
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "calls.jsonl is a symbolic link" in out.stderr and "never written through a link" in out.stderr
    assert outside.read_text(encoding="utf-8") == PRECIOUS
    with pytest.raises(ValueError, match="symbolic link"):  # the library's recorder, granted or not
        CassetteRecorder(tmp_path / "calls.jsonl")
    assert outside.read_text(encoding="utf-8") == PRECIOUS


def test_a_dangling_link_is_not_created_through(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    target = tmp_path_factory.mktemp("elsewhere") / "planted.jsonl"
    (tmp_path / "calls.jsonl").symlink_to(target)
    with pytest.raises(ValueError, match="symbolic link"):
        CassetteRecorder(tmp_path / "calls.jsonl")
    assert not target.exists()


def test_a_file_that_is_not_a_cassette_is_not_truncated(tmp_path: Path) -> None:
    notes = tmp_path / "notes.py"
    notes.write_text(PRECIOUS, encoding="utf-8")
    out = flow_run(tmp_path, "--record", "notes.py")
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "notes.py: it holds something that is not a cassette" in out.stderr
    assert notes.read_text(encoding="utf-8") == PRECIOUS
    session = Session(directory=tmp_path, journal_dir=None)  # %record's path: inside the folder, no grant needed
    for content in (PRECIOUS, '{"agent": "w"}\n', "\n", b"\xff\xfe\x00".decode("latin-1")):
        notes.write_text(content, encoding="utf-8")
        with pytest.raises(ValueError, match="not a cassette"):
            session.record("notes.py")
        assert notes.read_text(encoding="utf-8") == content


def test_a_fifo_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "calls.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a plain file"):
        CassetteRecorder(fifo)


def test_a_new_an_empty_or_an_old_cassette_is_recorded(tmp_path: Path) -> None:
    out = flow_run(tmp_path, "--record", "calls.jsonl")
    assert out.returncode == 0, out.stderr
    first = (tmp_path / "calls.jsonl").read_text(encoding="utf-8")
    assert json.loads(first.splitlines()[0])["agent"] == "w"
    torn = first + '{"agent":"w","lab'  # a recorder killed mid-line: still a cassette
    (tmp_path / "calls.jsonl").write_text(torn, encoding="utf-8")
    again = flow_run(tmp_path, "--record", "calls.jsonl")
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "calls.jsonl").read_text(encoding="utf-8") == first  # rewritten, not appended
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    assert flow_run(tmp_path, "--record", "empty.jsonl").returncode == 0
    assert (tmp_path / "empty.jsonl").read_text(encoding="utf-8") == first
    assert flow_run(tmp_path, "--replay", "calls.jsonl").stdout == out.stdout


def test_the_reopened_door_truncates_and_writes_through(tmp_path: Path, outside: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # The old recorder: open the path as it resolves and start a new cassette there (no check
    # of what it holds), writing through the path as it resolves.
    def old_open(path: Path) -> int:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        os.ftruncate(fd, 0)
        return fd

    def old_write(path: Path, data: bytes) -> None:
        with open(path, "wb") as f:
            f.write(data)

    monkeypatch.setattr(cassette, "_open_recordable", old_open)
    monkeypatch.setattr(cassette, "_replace_file", old_write)
    (tmp_path / "calls.jsonl").symlink_to(outside)
    recorder = CassetteRecorder(tmp_path / "calls.jsonl")
    recorder.write(("prog.flow", "w", "w@1", 1, 1), "prompt", output="model-controlled line")
    recorder.close()
    assert "model-controlled line" in outside.read_text(encoding="utf-8")
    assert "keep_me" not in outside.read_text(encoding="utf-8")


def test_the_record_magic_refuses_and_says_why(tmp_path: Path) -> None:
    from flow_kernel.frontend.magics import MagicError, apply_cell, parse_cell

    notes = tmp_path / "notes.py"
    notes.write_text(PRECIOUS, encoding="utf-8")
    session = Session(directory=tmp_path, journal_dir=None)
    with pytest.raises(MagicError, match=r"%record: cannot record to .*notes.py: it holds something that is not"):
        apply_cell(parse_cell("%record notes.py\n1"), session)
    assert notes.read_text(encoding="utf-8") == PRECIOUS
    (tmp_path / "link.jsonl").symlink_to(notes)
    with pytest.raises(MagicError, match="symbolic link"):
        apply_cell(parse_cell("%record link.jsonl\n1"), session)
    assert notes.read_text(encoding="utf-8") == PRECIOUS


def test_a_granted_link_is_still_not_written_through(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    # The trust model checks where the path resolves to (granted here); the write itself
    # never follows the link, so a dangling one cannot create a file elsewhere.
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (tmp_path / "calls.jsonl").symlink_to(elsewhere / "autostart.desktop")
    session = Session(directory=tmp_path, journal_dir=None, allow=[f"path:{elsewhere}"])
    with pytest.raises(ValueError, match="symbolic link"):
        session.record("calls.jsonl")
    assert list(elsewhere.iterdir()) == []

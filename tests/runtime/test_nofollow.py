"""The files the host writes for a run are opened without following a link: each opener
of runtime/durable/nofollow.py, on a plain file and on a link planted in its place."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flow_kernel.runtime.durable.nofollow import (
    LinkRefused,
    create_new_file,
    open_existing_file,
    open_file_in_place,
    open_folder,
)


def test_an_existing_file_is_opened_for_appending(tmp_path: Path) -> None:
    (tmp_path / "run.jsonl").write_text("first\n", encoding="utf-8")
    folder = open_folder(tmp_path, own=0)
    try:
        fd = open_existing_file(folder, tmp_path / "run.jsonl")
        os.write(fd, b"second\n")
        os.close(fd)
    finally:
        os.close(folder)
    assert (tmp_path / "run.jsonl").read_text(encoding="utf-8") == "first\nsecond\n"


def test_a_link_in_place_of_an_existing_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("mine\n", encoding="utf-8")
    (tmp_path / "run.jsonl").symlink_to(tmp_path / "precious.txt")
    folder = open_folder(tmp_path, own=0)
    try:
        with pytest.raises(LinkRefused, match=r"run\.jsonl is a symbolic link"):
            open_existing_file(folder, tmp_path / "run.jsonl")
        with pytest.raises(LinkRefused, match="is a symbolic link"):
            create_new_file(folder, "run.jsonl", tmp_path / "run.jsonl")
    finally:
        os.close(folder)
    with pytest.raises(LinkRefused, match="is a symbolic link"):
        open_file_in_place(tmp_path / "run.jsonl")
    assert (tmp_path / "precious.txt").read_text(encoding="utf-8") == "mine\n"


def test_a_missing_file_is_an_ordinary_error(tmp_path: Path) -> None:
    folder = open_folder(tmp_path, own=0)
    try:
        with pytest.raises(FileNotFoundError):
            open_existing_file(folder, tmp_path / "absent.jsonl")
    finally:
        os.close(folder)


def test_a_linked_own_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / ".flow").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(LinkRefused, match=r"\.flow is a symbolic link"):
        open_folder(tmp_path / ".flow" / "runs", own=2)
    assert list((tmp_path / "elsewhere").iterdir()) == []

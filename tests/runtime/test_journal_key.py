"""The journal key is read from its file once while that file stays the same
(journal.py `_seal_key`): a run costs one `lstat` for it, and a key removed or replaced
is read again, so no journal is sealed with a key that is gone."""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.runtime.durable import journal
from flow_kernel.runtime.durable.journal import JournalForged, read_checkpoint
from flow_kernel.runtime.session import Session


def _run(folder: Path) -> Path:
    outcome = Session(directory=folder, sandbox=False, operator="none").run("1 + 1")
    assert outcome.result == 2 and outcome.journal is not None
    return outcome.journal


def test_the_key_file_is_opened_once_while_it_is_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOW_CONFIG_HOME", str(tmp_path / "config"))
    _run(tmp_path)  # the key is made and read
    opened: list[str] = []
    real_open = os.open

    def counting_open(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(journal.os, "open", counting_open)
    for _ in range(3):
        read_checkpoint(_run(tmp_path))
    assert not [path for path in opened if path.endswith(journal.KEY_FILE)]


def test_a_key_removed_is_made_and_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOW_CONFIG_HOME", str(tmp_path / "config"))
    before = _run(tmp_path)
    read_checkpoint(before)
    (tmp_path / "config" / journal.KEY_FILE).unlink()
    after = _run(tmp_path)
    assert read_checkpoint(after).header is not None  # sealed with the new key, not the one removed
    with pytest.raises(JournalForged):
        read_checkpoint(before)


def test_a_key_replaced_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOW_CONFIG_HOME", str(tmp_path / "config"))
    read_checkpoint(_run(tmp_path))
    key = tmp_path / "config" / journal.KEY_FILE
    spare = key.with_name("spare")
    spare.write_text("ab" * 32, encoding="ascii")
    os.replace(spare, key)  # another file at the key's path
    header = read_checkpoint(_run(tmp_path)).header
    assert header is not None
    body = {k: v for k, v in header.items() if k != "mac"}
    expected = hmac.new(b"ab" * 32, journal.canonical(body).encode(), hashlib.sha256).hexdigest()[:32]
    assert header["mac"] == expected  # sealed with the key now in the file

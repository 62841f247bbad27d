"""`FileSystemLoader`: how `flow check` and `use` find Flow files on disk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flow_kernel.files import FileSystemLoader, SourceReadError
from flow_kernel.lang import check


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def test_resolve_relative_to_the_importer_or_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    loader = FileSystemLoader()
    root = os.path.realpath(tmp_path)
    importer = os.path.join(root, "lib", "a.flow")
    assert loader.resolve("b.flow", importer) == os.path.join(root, "lib", "b.flow")
    assert loader.resolve("../c.flow", importer) == os.path.join(root, "c.flow")
    assert loader.resolve("./lib/../main.flow", None) == os.path.join(root, "main.flow")
    assert loader.resolve("/abs/x.flow", importer) == os.path.realpath("/abs/x.flow")
    assert FileSystemLoader(base=importer).resolve("x.flow", None) == os.path.join(
        importer, "x.flow"
    )


def test_loads_by_canonical_name(tmp_path: Path) -> None:
    target = write(tmp_path / "real" / "a.flow", "type A = string\n")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    source = FileSystemLoader(base=str(tmp_path))("link/a.flow", None)
    assert source is not None
    assert source.name == os.path.realpath(target)
    assert source.text == "type A = string\n"


def test_missing_file_or_directory_is_none(tmp_path: Path) -> None:
    loader = FileSystemLoader(base=str(tmp_path))
    (tmp_path / "dir").mkdir()
    assert loader("nope.flow", None) is None
    assert loader("dir", None) is None


def test_line_endings_and_byte_order_mark(tmp_path: Path) -> None:
    write(tmp_path / "crlf.flow", b"\xef\xbb\xbflet x = 1\r\nlet y = 2\rprint x\r\n")
    source = FileSystemLoader(base=str(tmp_path))("crlf.flow", None)
    assert source is not None
    assert source.text == "let x = 1\nlet y = 2\nprint x\n"


def test_undecodable_file_raises_a_clear_error(tmp_path: Path) -> None:
    write(tmp_path / "bad.flow", b'let x = "\xff"\n')
    with pytest.raises(SourceReadError, match="not valid UTF-8"):
        FileSystemLoader(base=str(tmp_path))("bad.flow", None)


def test_use_through_the_loader_finds_files_and_cycles(tmp_path: Path) -> None:
    write(tmp_path / "main.flow", 'use "lib/a.flow"\nworkflow w(x: A) -> A {\n  return x\n}\n')
    write(tmp_path / "lib" / "a.flow", 'use "b.flow"\ntype A = B\n')
    # `../lib/a.flow` is `lib/a.flow` by another route: a cycle, not a second file
    write(tmp_path / "lib" / "b.flow", 'use "../lib/a.flow"\ntype B = string\n')
    loader = FileSystemLoader(base=str(tmp_path))
    source = loader("main.flow", None)
    assert source is not None
    codes = [d.code for d in check(source, loader=loader).diagnostics]
    assert codes == ["F2012"]


def test_use_of_a_missing_file(tmp_path: Path) -> None:
    write(tmp_path / "main.flow", 'use "gone.flow"\n')
    loader = FileSystemLoader(base=str(tmp_path))
    source = loader("main.flow", None)
    assert source is not None
    assert [d.code for d in check(source, loader=loader).diagnostics] == ["F2011"]

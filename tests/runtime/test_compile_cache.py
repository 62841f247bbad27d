"""The session's compiled-cell cache (runtime/compile_cache.py): an unchanged cell compiled
again is a lookup, and nothing that changes the check's answer is ever answered from it —
an edited cell, a changed earlier declaration or binding, a changed file, a reset."""

from __future__ import annotations

from pathlib import Path

from flow_kernel.runtime.session import Session


def session(tmp_path: Path) -> Session:
    return Session(directory=tmp_path, operator="none", sandbox=False)


def codes(compiled: object) -> list[str]:
    return [d.code for d in compiled.check.diagnostics]  # type: ignore[attr-defined]


def test_an_unchanged_cell_is_compiled_once(tmp_path: Path) -> None:
    s = session(tmp_path)
    first = s.compile("let a = 1\na + 1", "<cell a>")
    assert s.compile("let a = 1\na + 1", "<cell a>") is first
    assert (s.compiled_cells.hits, s.compiled_cells.misses) == (1, 1)


def test_an_edited_cell_is_checked_again(tmp_path: Path) -> None:
    s = session(tmp_path)
    assert s.compile("1 + 1", "<cell a>").ok
    edited = s.compile('1 + "x" * true', "<cell a>")
    assert not edited.ok and codes(edited)
    assert s.compiled_cells.hits == 0


def test_a_changed_earlier_declaration_is_seen(tmp_path: Path) -> None:
    s = session(tmp_path)
    s.run('type T = { a: int }', name="<cell types>")
    uses = 'let x: T = { a: 1 }\nx'
    assert s.compile(uses, "<cell uses>").ok
    assert s.compile(uses, "<cell uses>").ok and s.compiled_cells.hits == 1
    s.run('type T = { a: string }', name="<cell types>")  # the earlier cell, edited and run again
    again = s.compile(uses, "<cell uses>")
    assert not again.ok and codes(again), "a stale result for a changed declaration"
    # The same declaration run again (a fresh parse of the same text) still matches.
    s.run('type T = { a: string }', name="<cell types>")
    assert s.compile(uses, "<cell uses>") is again


def test_a_changed_binding_type_or_a_reset_is_seen(tmp_path: Path) -> None:
    s = session(tmp_path)
    s.run("let n = 1", name="<cell n>")
    reads = "n * 2"
    assert s.compile(reads, "<cell reads>").ok
    s.run('let n = "text"', name="<cell n2>")
    assert not s.compile(reads, "<cell reads>").ok, "a stale result for a binding whose type changed"
    s.reset()
    assert not s.compile(reads, "<cell reads>").ok
    assert s.compiled_cells.hits == 0


def test_a_changed_used_file_is_read_again(tmp_path: Path) -> None:
    lib = tmp_path / "lib.flow"
    lib.write_text("workflow inc(x: int) -> int { return x + 1 }\n", encoding="utf-8")
    s = session(tmp_path)
    cell = 'use "lib.flow"\ninc(x: 1)'
    assert s.compile(cell, "<cell use>").ok
    assert s.compile(cell, "<cell use>").ok and s.compiled_cells.hits == 1
    lib.write_text("workflow inc(y: int) -> int { return y + 1 }\n", encoding="utf-8")
    changed = s.compile(cell, "<cell use>")
    assert not changed.ok, "a stale result for a used file that changed"
    lib.unlink()
    assert not s.compile(cell, "<cell use>").ok
    assert s.compiled_cells.hits == 1


def test_a_cell_run_again_hits_from_its_third_run(tmp_path: Path) -> None:
    """Its first run adds its own declaration and binding to the scope it is checked
    against; from then on each run leaves that scope as it found it."""
    s = session(tmp_path)
    cell = 'agent helper { model: "mock" }\nlet words = ["a", "b"]\nlen(words)'
    for _ in range(4):
        assert s.run(cell, name="<cell same>").result == 2
    assert (s.compiled_cells.misses, s.compiled_cells.hits) == (2, 2)


def test_the_cache_is_bounded(tmp_path: Path) -> None:
    s = session(tmp_path)
    for i in range(s.compiled_cells.size + 10):
        s.compile(f"{i} + 1", f"<cell {i}>")
    assert len(s.compiled_cells.entries) == s.compiled_cells.size

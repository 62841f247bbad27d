"""The kernel's history file (kernel/history.py): IPython's access types and layout, a
file that cannot be used moving the history to memory without an error, when a cell's
input and output are handed to the history's thread (`CellHistory`), and the cells that
answered kept and written together (`keep_cell`)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.kernel.history import (
    BATCH_WAIT,
    INPUT_WAIT,
    MEMORY,
    CellHistory,
    KernelHistory,
    default_location,
)


def _history(path: Path | str, warnings: list[str] | None = None) -> KernelHistory:
    said = warnings if warnings is not None else []
    return KernelHistory(str(path), said.append)


def _two_sessions(path: Path) -> tuple[KernelHistory, KernelHistory]:
    first = _history(path)
    first.store_input(1, "let a = 1")
    first.store_input(2, "a + 1")
    first.store_output(2, "2")
    first.close()
    second = _history(path)
    second.store_input(1, 'print "hi"')
    second.store_input(2, "a * 6")
    second.store_output(2, "6")
    second.drain()
    return first, second


def test_sessions_are_numbered_by_the_file_and_tail_spans_them(tmp_path: Path) -> None:
    first, second = _two_sessions(tmp_path / "h.sqlite")
    assert (first.session, second.session) == (1, 2)
    assert second.tail(3, output=False) == [(1, 2, "a + 1"), (2, 1, 'print "hi"'), (2, 2, "a * 6")]
    assert second.tail(2, output=True) == [(2, 1, ('print "hi"', None)), (2, 2, ("a * 6", "6"))]
    assert second.tail(0, output=False) == []


def test_a_new_file_is_the_persons_alone(tmp_path: Path) -> None:
    history = _history(tmp_path / "new" / "h.sqlite")
    history.store_input(1, "let key = \"secret\"")
    history.drain()
    assert not history.in_memory
    for made in (tmp_path / "new").iterdir():  # the file and its WAL files
        assert made.stat().st_mode & 0o077 == 0, made


def test_an_existing_file_others_could_read_becomes_the_persons_alone(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    _two_sessions(path)
    path.chmod(0o644)  # as an older release made it
    third = _history(path)
    third.store_input(1, "a")
    third.drain()
    assert not third.in_memory
    assert path.stat().st_mode & 0o777 == 0o600
    assert third.tail(1, output=False) == [(3, 1, "a")]


def test_range_counts_sessions_back_from_this_one(tmp_path: Path) -> None:
    _, second = _two_sessions(tmp_path / "h.sqlite")
    assert second.range(0, 1, None, output=False) == [(2, 1, 'print "hi"'), (2, 2, "a * 6")]
    assert second.range(-1, 2, 3, output=True) == [(1, 2, ("a + 1", "2"))]
    assert second.range(1, 1, 2, output=False) == [(1, 1, "let a = 1")]
    assert second.range(5, 1, None, output=False) == []


def test_search_globs_the_input_with_n_and_unique(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    history = _history(path)
    for line, code in enumerate(["6 * 7", '"a" + "b"', "6 * 7", "6 * 8", "6 * 7"], start=1):
        history.store_input(line, code)
    assert [e[1] for e in history.search("6 [*] ?", output=False, n=None, unique=False)] == [1, 3, 4, 5]
    assert [e[1] for e in history.search("6 [*] ?", output=False, n=2, unique=False)] == [4, 5]
    assert history.search("6 [*] ?", output=False, n=None, unique=True) == [(1, 4, "6 * 8"), (1, 5, "6 * 7")]
    assert history.search("6 [*] 7", output=False, n=None, unique=True) == [(1, 5, "6 * 7")]
    assert history.search("nothing*", output=True, n=3, unique=False) == []


def test_the_file_is_laid_out_as_ipythons(tmp_path: Path) -> None:
    from IPython.core.history import HistoryAccessor

    path = tmp_path / "h.sqlite"
    _, second = _two_sessions(path)
    second.close()
    accessor = HistoryAccessor(hist_file=str(path))
    assert list(accessor.get_range(1, 1, 3, output=True)) == [(1, 1, ("let a = 1", None)), (1, 2, ("a + 1", "2"))]
    assert [e[2] for e in accessor.search("a *")] == ["a + 1", "a * 6"]
    assert accessor.get_session_info(1)[3] == 2  # num_cmds, written as the session ended


def test_a_corrupt_file_moves_the_history_to_memory_once(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    warnings: list[str] = []
    history = _history(path, warnings)
    history.store_input(1, "let x = 1")
    history.store_input(2, "x")
    history.store_output(2, "1")
    history.drain()
    assert history.in_memory and len(warnings) == 1 and str(path) in warnings[0]
    assert history.tail(5, output=True) == [(1, 1, ("let x = 1", None)), (1, 2, ("x", "1"))]
    assert path.read_bytes() == b"this is not a database" * 100  # the person's file is left as it was


def test_a_file_locked_by_another_kernel_moves_this_sessions_lines_to_memory(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    warnings: list[str] = []
    history = _history(path, warnings)
    history.store_input(1, "let x = 1")  # in the file
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another process holds the write lock and keeps it
    try:
        history.store_input(2, "x + 1")
        history.store_output(2, "2")
        history.store_input(3, "x + 2")
        history.drain()  # written (or not) while the lock is held
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert history.in_memory and len(warnings) == 1
    assert history.range(0, 1, None, output=True) == [
        (1, 1, ("let x = 1", None)), (1, 2, ("x + 1", "2")), (1, 3, ("x + 2", None))]


def test_a_folder_that_cannot_be_made_is_memory_too(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    warnings: list[str] = []
    history = _history(blocker / "sub" / "h.sqlite", warnings)
    history.open()
    history.store_input(1, "1")
    history.drain()
    assert history.in_memory and len(warnings) == 1
    assert history.tail(1, output=False) == [(1, 1, "1")]


def test_memory_by_name_says_nothing(tmp_path: Path) -> None:
    warnings: list[str] = []
    history = _history(MEMORY, warnings)
    history.store_input(1, "1")
    assert history.tail(1, output=False) == [(1, 1, "1")] and warnings == []


@pytest.mark.parametrize(("environ", "expected"), [
    ({"FLOW_HISTORY": "/x/h.sqlite"}, "/x/h.sqlite"),
    ({"FLOW_HISTORY": ":memory:"}, ":memory:"),
    ({"JUPYTER_DATA_DIR": "/data"}, "/data/flow/history.sqlite"),
])
def test_the_location(environ: dict[str, str], expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert default_location(environ if "FLOW_HISTORY" in environ else {}) == expected


def test_memory_that_fails_loses_a_line_not_the_cell() -> None:
    warnings: list[str] = []
    history = _history(MEMORY, warnings)
    history.store_input(1, "1")
    history.drain()
    history._db = sqlite3.connect(":memory:")  # reached into: a database without the tables, as a broken one
    history.store_input(2, "2")
    history.store_output(2, "2")
    assert history.tail(5, output=False) == [] and len(warnings) == 1 and "not kept" in warnings[0]


def test_storing_hands_the_statement_to_the_historys_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`store_input` returns while the history's thread is still opening the file: the cell
    never waits for SQLite; a read waits for what was handed over before it."""
    connect = sqlite3.connect
    gate = threading.Event()
    opened_on: list[tuple[str, bool]] = []

    def held_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened_on.append((threading.current_thread().name, gate.wait(10)))  # False: nobody let it go
        return connect(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", held_connect)
    history = _history(tmp_path / "h.sqlite")
    history.store_input(1, "let a = 1")
    history.store_output(1, "1")
    gate.set()  # only now can the thread's `connect` return
    assert history.tail(1, output=True) == [(1, 1, ("let a = 1", "1"))]
    assert len(opened_on) == 1 and opened_on[0][1] and opened_on[0][0].startswith("flow-history")
    history.close()


class RecordingHistory:
    """A `KernelHistory` stand-in: what was handed over, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def store_input(self, line: int, source: str) -> None:
        self.calls.append(("input", line, source))

    def store_output(self, line: int, output: str) -> None:
        self.calls.append(("output", line, output))

    def keep_cell(self, line: int, source: str, output: str | None, loop: Any) -> None:
        self.calls.append(("cell", line, source, output))


class RecordedTimer:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class RecordingLoop:
    """An event loop's `call_later`, recorded and never run on its own."""

    def __init__(self) -> None:
        self.timers: list[tuple[float, Any, RecordedTimer]] = []

    def call_later(self, delay: float, callback: Any) -> RecordedTimer:
        timer = RecordedTimer()
        self.timers.append((delay, callback, timer))
        return timer


def _cell(source: str = "6 * 7") -> tuple[CellHistory, RecordingHistory, RecordingLoop]:
    history, loop = RecordingHistory(), RecordingLoop()
    cell = CellHistory(history, 3, source, loop)  # type: ignore[arg-type]
    return cell, history, loop


def test_a_quick_cells_input_and_output_are_handed_over_together_once_it_answered() -> None:
    cell, history, loop = _cell()
    [(delay, _callback, timer)] = loop.timers
    assert delay == INPUT_WAIT and history.calls == []  # nothing handed over while the cell runs
    cell.output = "42"
    cell.ended()
    assert history.calls == [("cell", 3, "6 * 7", "42")] and timer.cancelled


def test_a_cell_without_a_result_hands_its_input_over_once() -> None:
    cell, history, _loop = _cell("let a = 1")
    cell.ended()
    assert history.calls == [("cell", 3, "let a = 1", None)]


def test_a_cell_still_running_after_the_wait_has_its_input_handed_over_then() -> None:
    cell, history, loop = _cell()
    [(_delay, callback, _timer)] = loop.timers
    callback()  # the timer fires: the cell runs on
    assert history.calls == [("input", 3, "6 * 7")]
    cell.store_input()  # a shutdown meanwhile: nothing handed over twice
    cell.output = "42"
    cell.ended()
    assert history.calls == [("input", 3, "6 * 7"), ("output", 3, "42")]


def test_a_kept_cell_writes_the_input_and_the_output(tmp_path: Path) -> None:
    history, loop = _history(tmp_path / "h.sqlite"), RecordingLoop()
    history.keep_cell(1, "let a = 1", None, loop)  # type: ignore[arg-type]
    history.keep_cell(2, "a + 1", "2", loop)  # type: ignore[arg-type]
    assert history.tail(2, output=True) == [(1, 1, ("let a = 1", None)), (1, 2, ("a + 1", "2"))]
    history.close()


def test_cells_kept_after_an_early_hand_over_wait_for_the_timer_already_running(tmp_path: Path) -> None:
    # A timer per batch started after each early hand-over would leave one timer a cell in
    # the loop's heap while cells run faster than BATCH_WAIT (a cell that runs past
    # INPUT_WAIT hands the kept cells over with its input).
    history, loop = _history(tmp_path / "h.sqlite"), RecordingLoop()
    history.keep_cell(1, "1", "1", loop)  # type: ignore[arg-type]
    history.store_input(2, "sleep(1)")  # hands cell 1 over
    history.keep_cell(2, "sleep(1)", None, loop)  # type: ignore[arg-type]
    history.keep_cell(3, "3", "3", loop)  # type: ignore[arg-type]
    [(_delay, callback, _timer)] = loop.timers  # still the first one
    callback()
    history.drain()
    assert [line for _session, line, _entry in history.tail(3, output=False)] == [1, 2, 3]
    history.keep_cell(4, "4", "4", loop)  # type: ignore[arg-type]
    assert len(loop.timers) == 2  # once it has fired, the next cell kept starts another
    history.close()


def _file_lines(path: Path) -> list[tuple[int, str, str | None]]:
    """What another connection reads of the file now: (line, input, output)."""
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT history.line, history.source_raw, output_history.output FROM history"
                          " LEFT JOIN output_history USING (session, line) ORDER BY history.line").fetchall()
    return [(int(line), str(source), output) for line, source, output in rows]


def test_the_cells_kept_are_written_together_when_their_timer_fires(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    history, loop = _history(path), RecordingLoop()
    history.open()
    history.drain()  # the file made
    history.keep_cell(1, "let a = 1", None, loop)  # type: ignore[arg-type]
    history.keep_cell(2, "a + 1", "2", loop)  # type: ignore[arg-type]
    [(delay, callback, _timer)] = loop.timers  # one timer, from the first cell kept
    assert delay == BATCH_WAIT
    history.drain()
    assert _file_lines(path) == []  # nothing handed over before the timer
    callback()
    history.drain()
    assert _file_lines(path) == [(1, "let a = 1", None), (2, "a + 1", "2")]
    history.keep_cell(3, "a", "1", loop)  # type: ignore[arg-type]
    assert len(loop.timers) == 2  # the next batch has its own timer
    history.close()
    assert _file_lines(path)[-1] == (3, "a", "1")  # closing writes what is kept


def test_a_read_or_another_store_hands_the_kept_cells_over_first(tmp_path: Path) -> None:
    history, loop = _history(tmp_path / "h.sqlite"), RecordingLoop()
    history.keep_cell(1, "6 * 7", "42", loop)  # type: ignore[arg-type]
    assert history.tail(1, output=True) == [(1, 1, ("6 * 7", "42"))]  # seen by a read, no timer needed
    history.keep_cell(2, "x", "old", loop)  # type: ignore[arg-type]
    history.store_output(2, "new")  # handed over after the kept cell, so it stands
    assert history.tail(1, output=True) == [(1, 2, ("x", "new"))]
    history.close()


def test_kept_cells_that_the_locked_file_refuses_go_to_memory(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    warnings: list[str] = []
    history, loop = _history(path, warnings), RecordingLoop()
    history.store_input(1, "let x = 1")  # in the file
    history.drain()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another process holds the write lock and keeps it
    try:
        history.keep_cell(2, "x + 1", "2", loop)  # type: ignore[arg-type]
        history.keep_cell(3, "x + 2", None, loop)  # type: ignore[arg-type]
        loop.timers[0][1]()  # their timer fires while the lock is held
        history.drain()
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert history.in_memory and len(warnings) == 1
    assert history.range(0, 1, None, output=True) == [
        (1, 1, ("let x = 1", None)), (1, 2, ("x + 1", "2")), (1, 3, ("x + 2", None))]

"""The kernel's input history: what `history_request` answers (docs/kernel.md "History").

The model is IPython's `HistoryManager`, and the file is laid out as IPython's is (tables
`sessions`, `history` and `output_history`), so tools that read IPython's history read this
one. Each kernel is one session, numbered by the file; each stored execute request is one
line, numbered by the kernel's execution count; a result's `text/plain` is its output.

Where: `FLOW_HISTORY` names the SQLite file (`:memory:` keeps it in memory only); unset,
it is `history.sqlite` in the `flow` folder of the Jupyter data directory.

Off the cell's way: every statement runs on one thread of the history's own (as IPython's
history is saved on a thread of its own). Storing an input or an output hands it over and
returns; a cell's input and output are kept together once its reply is sent, or its input
handed over alone while it still runs after `INPUT_WAIT` (`CellHistory`). The cells kept
are handed over together `BATCH_WAIT` after the first of them and written in one
transaction, so cells run one after another (Run All) wake the history's thread and write
the file's pages once, not once a cell, in between their requests. A read, `drain`,
`close` and any other store hand the kept cells over first, so a read sees every cell that
answered before it (`drain` waits only for what was handed over). The file is in WAL mode with `synchronous=NORMAL` (a commit appends to
the log and does not wait for the disk), and it is opened while the person types the
first cell (`open`). A kernel killed outright loses the lines of at most `BATCH_WAIT`.

Never in the way: a file that cannot be opened, is corrupt or stays locked longer than
`LOCK_WAIT` turns the history into an in-memory one for the rest of the kernel (this
session's lines that the file still gives copied over), said once through `warn`; the
person's file is left as it is.

What the kernel keeps in its own memory does not grow with the cells: the lines are in the
file alone (not a copy in a dict as well), and SQLite's page cache for the file is at most
`CACHE_KIB` (its default, 2 MiB, filled up with the pages a long session appends: ~250 KB
over 900 cells, a quarter of the kernel's growth; docs/performance.md, "The kernel's growth
over cells"). Appends touch the last pages only, and a read of the whole file (`search`)
is served by the operating system's cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

# How long a write waits for another kernel's lock before the history moves to memory.
LOCK_WAIT = 0.25
# SQLite's page cache for the history file, at most (its default is 2 MiB).
CACHE_KIB = 64
# How long a running cell's input waits to be handed over with its output (`CellHistory`).
INPUT_WAIT = 0.02
# How long the cells that answered are kept before they are written together (`keep_cell`).
BATCH_WAIT = 0.25
MEMORY = ":memory:"
_LATEST_FIRST = "ORDER BY history.session DESC, history.line DESC"
_INSERT_INPUT = "INSERT OR REPLACE INTO history VALUES (?, ?, ?, ?)"
_INSERT_OUTPUT = "INSERT OR REPLACE INTO output_history VALUES (?, ?, ?)"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sessions (session integer primary key autoincrement, start timestamp,"
    " end timestamp, num_cmds integer, remark text)",
    "CREATE TABLE IF NOT EXISTS history (session integer, line integer, source text, source_raw text,"
    " PRIMARY KEY (session, line))",
    "CREATE TABLE IF NOT EXISTS output_history (session integer, line integer, output text,"
    " PRIMARY KEY (session, line))",
)

def _keep_private(location: str) -> None:
    """An existing history file of this person's, and its WAL files, readable by the person
    alone: group and other bits are taken off. A file someone else owns, a symbolic link or a
    file that cannot be changed is left as it is (it is read as before)."""
    for path in (location, location + "-wal", location + "-shm"):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if info.st_uid == os.getuid() and info.st_mode & 0o077:
                os.fchmod(fd, info.st_mode & 0o700)
        except OSError:
            pass
        finally:
            os.close(fd)


# One history entry as the Jupyter protocol carries it: (session, line, input) or, with
# output, (session, line, (input, output or None)).
Entry = tuple[int, int, Any]


def _line_statements(session: int, line: int, source: str, output: str | None) -> list[tuple[str, tuple[Any, ...]]]:
    """The statements that store one line's input and, when it has one, its output."""
    statements: list[tuple[str, tuple[Any, ...]]] = [(_INSERT_INPUT, (session, line, source, source))]
    if output is not None:
        statements.append((_INSERT_OUTPUT, (session, line, output)))
    return statements


class CellHistory:
    """One running cell's line for the history: its input and its result's text handed to
    the history's thread together once the cell has answered (`ended`), or the input alone
    while it still runs `INPUT_WAIT` seconds after it began, so a quick cell's statements
    do not compete with it for the interpreter's lock, and a long one's input is in the
    history while it runs. `store_input` hands the input over now (a shutdown)."""

    def __init__(self, history: KernelHistory, line: int, source: str, loop: asyncio.AbstractEventLoop) -> None:
        self.history = history
        self.line = line
        self.output: str | None = None  # the result's text, once the cell has one
        self._source: str | None = source  # until handed over
        self._loop = loop
        self._timer = loop.call_later(INPUT_WAIT, self.store_input)

    def store_input(self) -> None:
        """The input to the history now, unless it was handed over already."""
        source, self._source = self._source, None
        if source is not None:
            self.history.store_input(self.line, source)

    def ended(self) -> None:
        """The cell has answered: what the history does not have of it, its input and output
        kept to be written with the next cells' (`keep_cell`)."""
        self._timer.cancel()
        source, self._source = self._source, None
        if source is not None:
            self.history.keep_cell(self.line, source, self.output, self._loop)
        elif self.output is not None:
            self.history.store_output(self.line, self.output)


def default_location(environ: dict[str, str] | None = None) -> str:
    """`FLOW_HISTORY` when set (a path, or `:memory:`), else `flow/history.sqlite` in the
    Jupyter data directory."""
    env = os.environ if environ is None else environ
    chosen = env.get("FLOW_HISTORY")
    if chosen:
        return chosen
    from jupyter_core.paths import jupyter_data_dir

    return str(Path(jupyter_data_dir()) / "flow" / "history.sqlite")


class KernelHistory:
    """One kernel session's history in a shared SQLite file, answering the three kinds of
    `history_request` (tail, range, search) as IPython's kernel does. No method raises a
    database error: the history moves to memory instead. The database is used on the
    history's thread only; `session` and `in_memory` say what it did once `drain` returned."""

    def __init__(self, location: str, warn: Callable[[str], None]) -> None:
        self.location = location
        self.warn = warn
        self.session = 0  # the file's number for this kernel, once open
        self.in_memory = location == MEMORY
        self._db: sqlite3.Connection | None = None
        self._lost = False  # a statement failed in memory too (said once)
        # One worker, so statements run in the order they were handed over.
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flow-history")
        self._kept: list[tuple[int, str, str | None]] = []  # cells that answered, not handed over yet
        self._kept_lock = threading.Lock()  # a shutdown hands them over from the control thread
        self._batch_timer: asyncio.TimerHandle | None = None  # hands the kept cells over (`keep_cell`)

    def _later(self, work: Callable[..., Any], *args: Any) -> None:
        self.hand_over_kept()
        self._thread.submit(work, *args)

    def _wait_for(self, work: Callable[..., Any], *args: Any) -> Any:
        self.hand_over_kept()
        return self._thread.submit(work, *args).result()

    def drain(self) -> None:
        """Return once every statement handed to the history's thread so far has run (the
        cells kept are not handed over by it)."""
        self._thread.submit(lambda: None).result()

    # -- opening ----------------------------------------------------------------------------
    def open(self) -> None:
        """Open the file and start this kernel's session, on the history's thread (once;
        later calls do nothing)."""
        self._later(self._open)

    def _open(self) -> None:
        if self._db is not None:
            return
        if not self.in_memory:
            try:
                self._db = self._connect(self.location)
                return
            except (sqlite3.Error, OSError) as exc:
                self._to_memory(exc)
                return
        self._db = self._connect(MEMORY)

    def _connect(self, location: str) -> sqlite3.Connection:
        if location != MEMORY:
            Path(location).parent.mkdir(parents=True, exist_ok=True)
            # A new file is the person's alone (cells may hold secrets); SQLite's WAL files follow it.
            try:
                os.close(os.open(location, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            except FileExistsError:
                _keep_private(location)
        db = sqlite3.connect(location, timeout=LOCK_WAIT, isolation_level=None, check_same_thread=False)
        try:
            if location != MEMORY:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
            for statement in _SCHEMA:
                db.execute(statement)
            cursor = db.execute("INSERT INTO sessions (start, num_cmds, remark) VALUES (?, 0, '')",
                                (_now(),))
            self.session = int(cursor.lastrowid or 1)
        except BaseException:
            db.close()
            raise
        return db

    def _to_memory(self, problem: BaseException) -> None:
        """The rest of this kernel's history in memory, this session's lines that the file
        still gives kept (a file that cannot be read keeps them itself)."""
        lines = self._session_lines()
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
        self.in_memory = True
        self.warn(f"the kernel's history file {self.location} cannot be used ({problem}); "
                  "this session's history is kept in memory only")
        session = self.session or 1
        self._db = self._connect(MEMORY)
        self._db.execute("UPDATE sessions SET session = ?", (session,))
        self.session = session
        for line, source, output in lines:
            for sql, params in _line_statements(session, line, source, output):
                self._db.execute(sql, params)

    def _session_lines(self) -> list[tuple[int, str, str | None]]:
        """This session's lines (line, input, output) as the open file gives them now; none
        when there is no file open or it cannot be read."""
        if self._db is None or not self.session:
            return []
        try:
            rows = self._db.execute("SELECT history.line, history.source_raw, output_history.output FROM history"
                                    " LEFT JOIN output_history USING (session, line)"
                                    " WHERE history.session = ? ORDER BY history.line", (self.session,)).fetchall()
        except sqlite3.Error:
            return []
        return [(int(line), str(source), None if output is None else str(output)) for line, source, output in rows]

    def _run(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """One statement on the file, or on memory once the file has failed (on the thread)."""
        self._open()
        assert self._db is not None
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            if self.in_memory:  # memory failing too: this statement is lost, the cell is not
                if not self._lost:
                    self.warn(f"the kernel's history in memory failed ({exc}); what fails is not kept")
                self._lost = True
                return []
            self._to_memory(exc)
            return self._db.execute(sql, params).fetchall()

    # -- writing ----------------------------------------------------------------------------
    def store_input(self, line: int, source: str) -> None:
        """Line `line` of this session is `source` (Flow has no transformed source: raw and
        source are the same text). Handed to the history's thread."""
        self._later(self._store_input, line, source)

    def _store_input(self, line: int, source: str) -> None:
        self._run(_INSERT_INPUT, (self._session(), line, source, source))

    def keep_cell(self, line: int, source: str, output: str | None, loop: asyncio.AbstractEventLoop) -> None:
        """Line `line`'s input and its result's text (`None`: no result), kept with the other
        cells that answered and handed over with them at most `BATCH_WAIT` after the first (one
        timer on `loop` at a time), or sooner by any other use."""
        with self._kept_lock:
            self._kept.append((line, source, output))
        if self._batch_timer is None:  # one timer at a time, however often a use hands over early
            self._batch_timer = loop.call_later(BATCH_WAIT, self._batch_due)

    def _batch_due(self) -> None:
        self._batch_timer = None
        self.hand_over_kept()

    def hand_over_kept(self) -> None:
        """The cells kept so far to the history's thread, written there in one transaction."""
        with self._kept_lock:
            kept, self._kept = self._kept, []
        if kept:
            self._thread.submit(self._store_cells, kept)

    def _store_cells(self, cells: list[tuple[int, str, str | None]]) -> None:
        """Cells' inputs and outputs in one transaction; when it fails, statement by statement
        as `_run` runs them (a file that fails moves to memory, these lines with it)."""
        session = self._session()
        statements = [statement for line, source, output in cells
                      for statement in _line_statements(session, line, source, output)]
        db = self._db
        assert db is not None
        try:
            db.execute("BEGIN")
            for sql, params in statements:
                db.execute(sql, params)
            db.execute("COMMIT")
            return
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        for sql, params in statements:
            self._run(sql, params)

    def store_output(self, line: int, output: str) -> None:
        """The result of line `line`, as text. Handed to the history's thread."""
        self._later(self._store_output, line, output)

    def _store_output(self, line: int, output: str) -> None:
        self._run(_INSERT_OUTPUT, (self._session(), line, output))

    def close(self) -> None:
        """End this session once what was handed over is written: its end time and number
        of commands recorded, the file closed."""
        self._wait_for(self._close)

    def _close(self) -> None:
        if self._db is None:
            return
        try:
            self._db.execute("UPDATE sessions SET end = ?, num_cmds = (SELECT COUNT(*) FROM history"
                             " WHERE session = ?) WHERE session = ?", (_now(), self.session, self.session))
            self._db.close()
        except sqlite3.Error:
            pass
        self._db = None

    def _session(self) -> int:
        self._open()
        return self.session

    # -- reading ----------------------------------------------------------------------------
    def tail(self, n: int, output: bool) -> list[Entry]:
        """The last `n` lines of all sessions, oldest first (this one's latest included)."""
        rows = self._wait_for(self._select, _LATEST_FIRST + " LIMIT ?", (max(n, 0),), output)
        return list(reversed(rows))

    def range(self, session: int, start: int, stop: int | None, output: bool) -> list[Entry]:
        """Lines `start` ≤ line < `stop` (to the end without `stop`) of `session`; a session of
        0 or below counts back from this one (0: this session, -1: the one before)."""
        entries: list[Entry] = self._wait_for(self._range, session, start, stop, output)
        return entries

    def _range(self, session: int, start: int, stop: int | None, output: bool) -> list[Entry]:
        if session <= 0:
            session += self._session()
        if stop:
            return self._select("WHERE history.session = ? AND history.line >= ? AND history.line < ?"
                                " ORDER BY history.line", (session, start, stop), output)
        return self._select("WHERE history.session = ? AND history.line >= ? ORDER BY history.line",
                            (session, start), output)

    def search(self, pattern: str, output: bool, n: int | None, unique: bool) -> list[Entry]:
        """Lines whose input matches the glob `pattern` (`*`, `?`, `[…]`), oldest first: the
        last `n` when `n` is given, one line a distinct input when `unique` (its latest)."""
        where = "WHERE history.source_raw GLOB ?"
        if unique:
            where = ("WHERE history.source_raw GLOB ? AND NOT EXISTS (SELECT 1 FROM history AS later"
                     " WHERE later.source_raw = history.source_raw AND (later.session > history.session"
                     " OR (later.session = history.session AND later.line > history.line)))")
        if n is not None:
            rows = self._wait_for(self._select, f"{where} {_LATEST_FIRST} LIMIT ?", (pattern, n), output)
            return list(reversed(rows))
        entries: list[Entry] = self._wait_for(self._select, f"{where} ORDER BY history.session, history.line",
                                         (pattern,), output)
        return entries

    def _select(self, clause: str, params: tuple[Any, ...], output: bool) -> list[Entry]:
        if output:
            sql = ("SELECT history.session, history.line, history.source_raw, output_history.output FROM history"
                   " LEFT JOIN output_history USING (session, line) ")
        else:
            sql = "SELECT history.session, history.line, history.source_raw FROM history "
        return _entries(self._run(sql + clause, params), output)


def _entries(rows: Iterable[tuple[Any, ...]], output: bool) -> list[Entry]:
    if output:
        return [(int(r[0]), int(r[1]), (r[2], r[3])) for r in rows]
    return [(int(r[0]), int(r[1]), r[2]) for r in rows]


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(sep=" ")

"""The journal of a run, `.flow/runs/<run>.jsonl` (runtime.md §7; docs/durability.md): its
events as JSON lines, written and flushed as each event happens, so a failed run, a killed
sandbox or a killed host loses nothing that was already done — and, between them, the
run's *checkpoint records*: lines with a `"journal"` key instead of an event `type`.

- `header` (first line): what the run executed — the program (a file's path, or a cell's
  text), hashes of its source, of each declaration it used and of its input (resume.py);
- `effect`: one completed effect that left the sandbox (a provider attempt, a tool result,
  an approval or answer, a `run` result, `now()`, `uuid()`), keyed by where the program
  asked for it, with a fingerprint of the request;
- `pending`: a question the `defer` operator left for later; `answer`: its answer, with who
  gave it (`flow answer`, `%answer`, the widget);
- `resumed`: a later execution of the same run starts; `end`: an execution ended
  (`completed`, `failed` or `waiting`; `interrupted` when the process was shutting down,
  `process_ending`: a kernel shutdown or restart, and the run can go on; `cancelled`, with
  who asked, by `flow cancel` or `%cancel`: cancel.py).

Checkpoint records are written, flushed and `fdatasync`ed before the run goes on (the
effect is then on the disk, not only with the OS); events are flushed to the OS only
(a killed process keeps them; a power cut may lose the last ones, which a resume makes
again). Each record is sealed with an HMAC chained from the previous record's, under a
key only this user's account holds (`journal.key` in the config folder, 0600): a journal
is content — copied in with a repository, or edited — and one that was not written by this
user's Flow does not verify, so it cannot answer an approval, skip a call or change what
a resume runs (`JournalForged`). Events carry no seal: nothing is decided from them.

While a process writes a journal it holds an exclusive `flock` on it (released by the OS
when the process dies): `flow answer` and `flow runs` tell a run going on from one that
was interrupted by it.

The journal is never written through a symbolic link: `.flow` and `.flow/runs` are made
or entered without following one, and the run's file is created new (its id is fresh)
without following one (`nofollow.py`), or is a file made unnamed ahead of the run in that
same folder and linked to its name, which never replaces or follows what is there
(`make_spare_journals`, called by a kernel between cells). A link planted at any of them
is `LinkRefused`, and the run does not start (run.py): its record would otherwise land in
whatever file the link points at, or be lost without a word."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import fcntl
import functools
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flow_kernel.json_text import encoder
from flow_kernel.runtime.durable.nofollow import (
    LinkRefused,
    create_new_file,
    open_existing_file,
    open_folder,
)

OWN_FOLDERS = 2  # `.flow/runs`: the folders the runtime makes; above them, the person's folder
RECORD = "journal"  # the key of a checkpoint record (an event has `type` instead)
FORMAT = 1
RUN_ID = re.compile(r"^r[0-9a-f]{12}$")  # run.new_run_id: anything else names no journal
KEY_FILE = "journal.key"


class JournalForged(ValueError):
    """A checkpoint record whose seal does not verify: not written by this user's Flow."""


class RunLocked(Exception):
    """Another process is writing this run's journal (the run is going on)."""


def _lock_run(fd: int, run_id: str) -> None:
    """Take the run's journal for this process (closing `fd` when another holds it)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise RunLocked(f"run {run_id} is going on in another process") from None


# A journal line, and the canonical text that seals and digests read: the same text as
# `json.dumps` with these options, from one encoder each (flow_kernel/json_text.py).
_line = encoder(ensure_ascii=False, separators=(",", ":"))
_canonical = encoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def canonical(value: Any) -> str:
    return _canonical(value)


def digest(value: Any) -> str:
    """A short hash of a JSON value (or text) for headers and fingerprints."""
    text = value if isinstance(value, str) else canonical(value)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def now_text() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


# The key last read, with the path and the identity (device, inode, size, modification
# time) of the file it was read from: a run reads it again only when that file changed.
_key_read: tuple[str, tuple[int, int, int, int], bytes] | None = None


def _identity(status: os.stat_result) -> tuple[int, int, int, int]:
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


@functools.lru_cache(maxsize=4)
def _key_file(flow_home: str | None, xdg_home: str | None, home: str | None) -> Path:
    """The key's path in `config_home()` while these three variables (what it reads) are as given."""
    from flow_kernel.runtime.policy.trust import config_home

    return config_home() / KEY_FILE


def _seal_key() -> bytes:
    """This user's journal key, made on first use (0600, never through a link). It lives in
    the person's config folder, never beside the journals it seals. While its file is the
    one read last (one `lstat` says so), the key read then is used: a key removed, replaced
    or edited is read again."""
    global _key_read
    environ = os.environ
    path = _key_file(environ.get("FLOW_CONFIG_HOME"), environ.get("XDG_CONFIG_HOME"), environ.get("HOME"))
    if _key_read is not None and _key_read[0] == str(path):
        with contextlib.suppress(OSError):
            if _identity(os.lstat(path)) == _key_read[1]:
                return _key_read[2]
    home = path.parent
    home.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        # Written aside, then linked into place: two processes making it at once never see a
        # half-written key, and the first link wins (the other's is dropped).
        spare = home / f".{KEY_FILE}.{secrets.token_hex(6)}"
        fd = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(secrets.token_hex(32))
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(spare, path)
        except FileExistsError:
            pass
        finally:
            spare.unlink()
    read = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(read, encoding="ascii") as key_file:
        identity = _identity(os.fstat(key_file.fileno()))
        text = key_file.read().strip()
    if len(text) < 32:
        raise JournalForged(f"{path}: the journal key is unreadable (remove it to make a new one; "
                            "journals sealed with the old key can then no longer be resumed)")
    _key_read = (str(path), identity, text.encode())
    return _key_read[2]


def _mac(key: bytes, previous: str, record: dict[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k != "mac"}
    return hmac.new(key, (previous + canonical(body)).encode(), hashlib.sha256).hexdigest()[:32]


def journal_path(directory: Path | str, run_id: str) -> Path:
    """The journal of `run_id`; ValueError for anything that is not a run id (no path
    tricks: the id becomes a file name)."""
    if not RUN_ID.match(run_id):
        raise ValueError(f"{run_id[:40]!r} is not a run id (they look like r1a2b3c4d5e6f; see `flow runs`)")
    return Path(directory) / f"{run_id}.jsonl"


class Journal:
    """An event sink that appends each event as one line, and the writer of the run's
    checkpoint records (`record`). `append=True` continues an existing journal (a resume):
    a torn last line (the previous writer was killed mid-line) is cut off first."""

    def __init__(self, directory: Path | str, run_id: str, *, append: bool = False, last_mac: str = "") -> None:
        self.run_id = run_id
        directory = directory if isinstance(directory, Path) else Path(directory)
        self.path = directory / f"{run_id}.jsonl"
        if append:
            folder = open_folder(directory, own=OWN_FOLDERS)
            try:
                fd = open_existing_file(folder, self.path)
            finally:
                os.close(folder)
        else:
            fd = _create_in_runs_folder(directory, self.path)
        _lock_run(fd, run_id)
        if append:
            _cut_torn_tail(fd)
        # The file's descriptor itself (O_APPEND): each line is one `write`, with the OS at once.
        self._fd: int | None = fd
        self._key: bytes | None = None
        self._first: tuple[str, Callable[[], dict[str, Any]]] | None = None  # see `record_first`
        self.last_mac = last_mac
        self.synced = False  # a record went to the disk: the run had an effect, waited, or resumed

    def record_first(self, kind: str, fields: Callable[[], dict[str, Any]]) -> None:
        """The journal's first line is this record (not synced), its fields made when it is
        written: by `write_first`, or before any other line or at `close`, whichever comes
        first. A run's header, made while the sandbox starts the run. The key is read now, so
        a journal that cannot be sealed says so here (OSError, ValueError), as `record` would."""
        if self._key is None:
            self._key = _seal_key()
        self._first = (kind, fields)

    def write_first(self) -> None:
        """Write the record `record_first` left, if it is not written yet."""
        if self._first is not None:
            kind, fields = self._first
            self._first = None
            self.record(kind, fields(), sync=False)

    def __call__(self, event: dict[str, Any]) -> None:
        if self._fd is None:
            return
        if self._first is not None:
            self.write_first()
        _write_all(self._fd, (_line(event) + "\n").encode())  # a crash of this process keeps every line written

    def record(self, kind: str, fields: dict[str, Any], *, sync: bool = True) -> dict[str, Any]:
        """Write one sealed checkpoint record and put it on the disk before returning.
        `sync=False` (the header, the end) leaves it with the OS: the next synced record's
        `fdatasync` (the run's first effect) or `close`'s `fsync` puts it on the disk; a
        run with no synced record (no effect) pays no disk sync at all (docs/durability.md)."""
        if self._first is not None:
            self.write_first()
        if self._key is None:
            self._key = _seal_key()
        record = {RECORD: kind, "run": self.run_id, **fields}
        record["mac"] = self.last_mac = _mac(self._key, self.last_mac, record)
        if self._fd is not None:
            _write_all(self._fd, (_line(record) + "\n").encode())
            if sync:
                os.fdatasync(self._fd)
                self.synced = True
        return record

    def close(self) -> None:
        """Everything written goes to the OS and the run's lock is released now. A journal
        that put a record on the disk (an effect, a wait, a resume) is `fsync`ed, with its
        end, by a background thread (`_sync_and_close`), so the run's answer does not wait
        for the disk; every effect was on the disk before the run went past it. A run that
        synced nothing (no effect: a cell that only computes and prints) is left with the
        OS: a killed process keeps it whole, and what a power cut could take is a run
        that did nothing a resume would skip (docs/durability.md)."""
        if self._fd is not None:
            with contextlib.suppress(OSError, ValueError):  # a full disk: the journal lacks its first line, as any other
                self.write_first()
            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)  # `flow runs`/`flow answer` see an ended run at once
            if not self.synced:
                os.close(fd)
                return
            _syncs.append(_syncer().submit(_sync_and_close, fd))
            del _syncs[:-64]


def _write_all(fd: int, data: bytes) -> None:
    """All of `data` to the file (a `write` may take less: a signal, a nearly full disk)."""
    written = os.write(fd, data)
    while written < len(data):
        data = data[written:]
        written = os.write(fd, data)


# The runs folders entered last (`.flow/runs` by its path): a descriptor of each and the
# identity (device, inode) it had. A run's file is created in the folder its path names now:
# while one `lstat` of that path gives the same identity, the folder entered before is the
# one the walk (`open_folder`, never through a link) would enter again.
_runs_folders: dict[str, tuple[int, tuple[int, int]]] = {}
_runs_folders_lock = threading.Lock()  # a kept descriptor is closed only while no file is made in it
RUNS_FOLDERS_KEPT = 4
# A file made ahead in a kept runs folder for its next run (`make_spare_journals`): unnamed
# (`O_TMPFILE`), so nothing shows in the folder, and it is gone with the process if no run
# takes it. A run gives it its name with one `linkat`, which never replaces or follows what
# is at that name: the same refusals as `create_new_file`'s `O_EXCL | O_NOFOLLOW`.
_spares: dict[str, int] = {}  # a kept folder's key -> the descriptor of its spare file
_spares_coming: set[str] = set()  # the folders whose spare the journals' thread is making
_O_TMPFILE = getattr(os, "O_TMPFILE", 0)  # Linux


def _create_in_runs_folder(directory: Path, path: Path) -> int:
    """Create the run's new file `path` in the runs folder `directory` (made if missing, never
    through a link: `open_folder`), entering a folder kept from an earlier run when the path
    still names it (one `lstat` instead of the walk's three opens), and naming its spare file
    when it has one; an error there (the folder was removed meanwhile) is answered by the walk."""
    key = str(directory)
    with _runs_folders_lock:
        kept = _runs_folders.get(key)
        if kept is not None:
            with contextlib.suppress(OSError):
                status = os.stat(key, follow_symlinks=False)
                if (status.st_dev, status.st_ino) == kept[1]:
                    spare = _spares.pop(key, None)
                    named = _name_spare(spare, kept[0], path.name) if spare is not None else None
                    return named if named is not None else create_new_file(kept[0], path.name, path)
            _forget_runs_folder(key)
        folder = open_folder(directory, own=OWN_FOLDERS)
        try:
            fd = create_new_file(folder, path.name, path)
        except BaseException:
            os.close(folder)
            raise
        status = os.fstat(folder)
        while len(_runs_folders) >= RUNS_FOLDERS_KEPT:
            _forget_runs_folder(next(iter(_runs_folders)))
        _runs_folders[key] = (folder, (status.st_dev, status.st_ino))
        return fd


def _forget_runs_folder(key: str) -> None:
    kept = _runs_folders.pop(key, None)
    if kept is not None:
        with contextlib.suppress(OSError):
            os.close(kept[0])
    spare = _spares.pop(key, None)
    if spare is not None:
        with contextlib.suppress(OSError):
            os.close(spare)


def _name_spare(spare: int, folder: int, name: str) -> int | None:
    """The spare file `spare`, now named `name` in `folder`; None (the spare closed) when it
    cannot be: the name exists (`create_new_file` then says what is there), or this system
    cannot link an unnamed file (no `/proc`)."""
    try:
        os.link(f"/proc/self/fd/{spare}", name, dst_dir_fd=folder, follow_symlinks=True)
    except OSError:
        os.close(spare)
        return None
    return spare


def make_spare_journals() -> Future[None] | None:
    """Have the journals' thread make, in each runs folder kept from an earlier run that
    has none, the file its next run's journal will be (unnamed until that run names it),
    and return the future of that work (None: nothing to make). Making a file costs an
    inode, which ext4 without a journal finds by skipping every recently deleted one: from
    tens of microseconds to most of a millisecond of CPU while other processes delete
    files. A kernel asks for it once a cell's reply is sent, so that neither the next
    run's start nor the kernel's thread pays it. Where unnamed files cannot be made, runs
    create their files as before."""
    if not _O_TMPFILE:
        return None
    with _runs_folders_lock:
        wanted = [(key, os.dup(folder), identity) for key, (folder, identity) in _runs_folders.items()
                  if key not in _spares and key not in _spares_coming]
        _spares_coming.update(key for key, _folder, _identity in wanted)
    if not wanted:
        return None
    try:
        return _syncer().submit(_make_spares, wanted)
    except RuntimeError:  # the interpreter is exiting: no new work for the thread
        with _runs_folders_lock:
            for key, folder, _identity in wanted:
                _spares_coming.discard(key)
                os.close(folder)
        return None


def _make_spares(wanted: list[tuple[str, int, tuple[int, int]]]) -> None:
    """On the journals' thread: a spare file in each folder (a descriptor of its own, closed
    here), kept only while that folder is still the one kept for its path."""
    for key, folder, identity in wanted:
        spare: int | None = None
        try:
            spare = os.open(".", os.O_WRONLY | os.O_APPEND | _O_TMPFILE | os.O_CLOEXEC, 0o600, dir_fd=folder)
        except OSError:  # a filesystem without unnamed files: its runs create theirs
            pass
        finally:
            os.close(folder)
        with _runs_folders_lock:
            _spares_coming.discard(key)
            kept = _runs_folders.get(key)
            if spare is not None and kept is not None and kept[1] == identity and key not in _spares:
                _spares[key], spare = spare, None
        if spare is not None:
            os.close(spare)


# One thread puts closed journals on the disk. concurrent.futures joins it when the
# interpreter exits, so a process that ends normally has synced every journal it closed.
# A killed process loses nothing (the lines are with the OS); a power cut before the sync
# may lose the end of a run that had just ended (a resume then says `interrupted` and runs
# it again, answering its effects, which were synced, from the journal).
_pool: ThreadPoolExecutor | None = None
_syncs: list[Future[None]] = []


def _syncer() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flow-journal-sync")
    return _pool


def _sync_and_close(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError:  # a full or failing disk: the outcome stands; the journal may say `interrupted`
        pass
    finally:
        os.close(fd)


# Set once this process is shutting down (a kernel's shutdown or restart): a run it ends
# then did not fail, it was interrupted, and its journal says so (run.py `_record_end`).
_ending = threading.Event()
# The runs waiting for that (`ending_after_interrupt`): each its loop and the future that
# wakes it. `process_ending` may be called on another thread than theirs.
_ending_waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = set()
_ending_lock = threading.Lock()


def process_ending() -> None:
    """Say this process is shutting down: every run that ends from now on without a result
    is journaled `interrupted` (resumable), not `failed`; the runs waiting for it wake."""
    with _ending_lock:
        _ending.set()
        waiters = list(_ending_waiters)
    for loop, woken in waiters:
        with contextlib.suppress(RuntimeError):  # its loop has closed: nothing waits there now
            loop.call_soon_threadsafe(_wake, woken)


def _wake(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


def is_process_ending() -> bool:
    """This process is shutting down (`process_ending` was called)."""
    return _ending.is_set()


# When the kernel last received an interrupt request (monotonic seconds; 0: never).
_interrupt_at = 0.0


def interrupt_requested() -> None:
    """Say an interrupt request came (a kernel's `interrupt_request`): the runs it stops may
    be the first step of a restart (`ending_after_interrupt`)."""
    global _interrupt_at
    _interrupt_at = time.monotonic()


async def ending_after_interrupt(seconds: float) -> bool:
    """Whether this process is shutting down, waiting for it until `seconds` after an
    interrupt request that came in the last `seconds`. A kernel restart sends an interrupt
    and at once a shutdown request (jupyter_client's order, also under Kernel ▸ Restart): a
    run the interrupt stopped journals `interrupted` (its kernel went) rather than `failed:
    cancelled` (the person stopped it) when the shutdown comes in that time. A run stopped
    by anything else (a client's cancel, Ctrl-C) does not wait. It waits on `process_ending`
    waking it, or the deadline, nothing else."""
    remaining = _interrupt_at + seconds - time.monotonic()
    if remaining <= 0 or _ending.is_set():
        return _ending.is_set()
    loop = asyncio.get_running_loop()
    waiter = (loop, loop.create_future())
    with _ending_lock:
        if _ending.is_set():
            return True
        _ending_waiters.add(waiter)
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waiter[1], remaining)
    finally:
        with _ending_lock:
            _ending_waiters.discard(waiter)
    return _ending.is_set()


def wait_for_syncs() -> None:
    """Wait until every journal closed so far is on the disk (tests, tools that copy journals)."""
    for future in list(_syncs):
        future.result()


def _cut_torn_tail(fd: int) -> None:
    """Drop a last line without its newline: it was being written when the writer died."""
    size = os.fstat(fd).st_size
    if size == 0:
        return
    tail = os.pread(fd, min(size, 1 << 20), max(0, size - (1 << 20)))
    if tail.endswith(b"\n"):
        return
    cut = tail.rfind(b"\n")
    os.ftruncate(fd, size - len(tail) + cut + 1 if cut >= 0 else max(0, size - len(tail)))


@contextlib.contextmanager
def locked_for_append(directory: Path | str, run_id: str) -> Any:
    """The journal of a run that no process is writing, held for a short append (an
    answer); `RunLocked` when a process is writing it."""
    path = journal_path(directory, run_id)
    folder = open_folder(Path(directory), own=OWN_FOLDERS)
    try:
        fd = open_existing_file(folder, path)
    finally:
        os.close(folder)
    _lock_run(fd, run_id)
    try:
        yield fd
    finally:
        os.close(fd)


def append_record(fd: int, run_id: str, last_mac: str, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    """One sealed record appended to a journal held by `locked_for_append`, on the disk when it returns."""
    _cut_torn_tail(fd)
    record = {RECORD: kind, "run": run_id, **fields}
    record["mac"] = _mac(_seal_key(), last_mac, record)
    data = (_line(record) + "\n").encode()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fdatasync(fd)
    return record


def is_locked(path: Path) -> bool:
    """Whether a process is writing the journal at `path` now."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _lines(path: Path | str) -> list[dict[str, Any]]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        if Path(path).is_symlink():
            raise LinkRefused(f"{path} is a symbolic link, not a journal: not read") from None
        raise
    with open(fd, encoding="utf-8") as journal:
        text = journal.read()
    lines: list[dict[str, Any]] = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            break  # a torn last line: the writer was killed mid-line
        if isinstance(value, dict):
            lines.append(value)
    return lines


def read_journal(path: Path | str, *, every_execution: bool = False) -> list[dict[str, Any]]:
    """The events of a journal: of its last execution (a resumed run re-executes from the
    start and says everything again), or of all of them. A torn last line is skipped. A
    link is not read (`LinkRefused`): no journal is one, so it was planted, maybe to show
    another file's lines in a notebook's `%events`."""
    events: list[dict[str, Any]] = []
    for line in _lines(path):
        if RECORD in line:
            if line[RECORD] == "resumed" and not every_execution:
                events = []
            continue
        events.append(line)
    return events


@dataclass
class Checkpoint:
    """What a run's journal says was done, verified (`read_checkpoint`)."""

    run: str
    path: Path
    header: dict[str, Any] | None = None
    effects: dict[str, dict[str, Any]] = field(default_factory=dict)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    ends: list[dict[str, Any]] = field(default_factory=list)
    executions: int = 0
    last_mac: str = ""
    ended: bool = False  # the last execution wrote its end

    @property
    def status(self) -> str:
        """`completed`, `failed`, `cancelled`, `waiting`, or `interrupted` (its last execution
        has no end, or ended as its process shut down)."""
        if not self.ended or not self.ends:
            return "interrupted"
        return str(self.ends[-1].get("status"))

    def unanswered(self) -> list[dict[str, Any]]:
        """The pending requests of the last wait that have no answer yet."""
        if self.status != "waiting":
            return []
        ids = self.ends[-1].get("pending") or []
        return [self.pending[i] for i in ids if i in self.pending and i not in self.answers]


def read_checkpoint(path: Path | str) -> Checkpoint:
    """The checkpoint records of a journal, each seal verified in order; `JournalForged`
    names the first that does not verify (or a record of another run)."""
    path = Path(path)
    checkpoint = Checkpoint(path.stem, path)
    key: bytes | None = None
    for number, line in enumerate(_lines(path), 1):
        if RECORD not in line:
            continue
        if key is None:
            key = _seal_key()
        mac = line.get("mac")
        if line.get("run") != checkpoint.run or not isinstance(mac, str) \
                or not hmac.compare_digest(mac, _mac(key, checkpoint.last_mac, line)):
            raise JournalForged(f"{path.name}:{number}: a `{str(line.get(RECORD))[:20]}` record that this user's Flow "
                                "did not write (its seal does not verify): the journal was edited or copied in; "
                                "it is not resumed or answered")
        checkpoint.last_mac = mac
        kind = line[RECORD]
        if kind == "header":
            if checkpoint.header is not None:
                raise JournalForged(f"{path.name}:{number}: a second header")
            checkpoint.header = line
            checkpoint.executions = 1
        elif kind == "resumed":
            checkpoint.executions += 1
            checkpoint.ended = False
        elif kind == "effect":
            checkpoint.effects.setdefault(str(line.get("key")), line)
        elif kind == "pending":
            checkpoint.pending.setdefault(str(line.get("id")), line)
        elif kind == "answer":
            checkpoint.answers.setdefault(str(line.get("id")), line)
        elif kind == "end":
            checkpoint.ends.append(line)
            checkpoint.ended = True
    return checkpoint

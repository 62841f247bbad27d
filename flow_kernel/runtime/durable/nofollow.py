"""Files the host writes for a run (journals, cassettes), opened without following symbolic
links. A link planted where such a file, or a folder the runtime creates for it,
should be (`.flow`, `.flow/runs`, `.flow/runs/<run>.jsonl`, a cassette's path) would turn
the write into a write to any file the user can write: it is refused, never written through.

POSIX only (`O_NOFOLLOW`, `dir_fd`), like the sandbox itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


class LinkRefused(OSError):
    """A symbolic link (or something that is not a plain file or folder) where the host writes."""


def open_folder(path: Path, *, own: int) -> int:
    """A descriptor of folder `path`, made if missing. Its last `own` components are the
    runtime's own folders (`.flow/runs`: 2): each is made or entered without following a
    link. The folders above them are the person's choice (the notebook's folder, the
    working directory) and are taken as they resolve."""
    parts = path.parts
    own = min(own, len(parts) - (1 if path.is_absolute() else 0))
    above = os.path.join(*parts[: len(parts) - own]) if len(parts) > own else "."
    try:  # there already (every run but a folder's first): entered, nothing made
        fd = os.open(above, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        Path(above).mkdir(parents=True, exist_ok=True)
        fd = os.open(above, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for index, name in enumerate(parts[len(parts) - own:]):
            try:
                inner = _enter(fd, name)
            except OSError as exc:
                walked = Path(above, *parts[len(parts) - own:][:index + 1])
                raise _refusal(exc, walked, fd, name) from None
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _enter(fd: int, name: str) -> int:
    """Folder `name` in the folder `fd`, made first when it is missing; a link there is
    never followed (the open fails)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW
    try:
        return os.open(name, flags, dir_fd=fd)
    except FileNotFoundError:
        with contextlib.suppress(FileExistsError):  # made meanwhile by another run: entered below
            os.mkdir(name, 0o777, dir_fd=fd)
        return os.open(name, flags, dir_fd=fd)


def create_new_file(folder: int, name: str, where: Path, mode: int = 0o600) -> int:
    """Create file `name` in the folder `folder` for appending; it must not exist yet (a run's
    id is fresh, so anything there was planted), and a link there is never followed."""
    try:
        return os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode, dir_fd=folder)
    except FileExistsError as exc:
        refusal = _refusal(exc, where, folder, name)  # a link planted there says so
        if isinstance(refusal, LinkRefused):
            raise refusal from None
        raise LinkRefused(f"{where} already exists (a run's file is always new): not written") from None
    except OSError as exc:
        raise _refusal(exc, where, folder, name) from None


def open_existing_file(folder: int, path: Path) -> int:
    """Open the existing file named `path.name` in the folder `folder` for reading and
    appending; a link there is refused, never followed."""
    try:
        return os.open(path.name, os.O_RDWR | os.O_APPEND | _NOFOLLOW, dir_fd=folder)
    except OSError as exc:
        raise _refusal(exc, path, folder, path.name) from None


def open_file_in_place(path: Path) -> int:
    """Open (or create) the plain file at `path` for reading and appending, without following
    a link at `path` itself; a link, a FIFO or a device there is refused."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | _NOFOLLOW, 0o644)
    except OSError as exc:
        raise _refusal(exc, path, None, str(path)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LinkRefused(f"{path} is not a plain file: not written")
    os.set_blocking(fd, True)
    return fd


def _refusal(exc: OSError, where: Path, folder: int | None, name: str) -> OSError | LinkRefused:
    """A link where the host writes is refused in words; any other error is what it is."""
    try:
        mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except OSError:
        return exc
    if stat.S_ISLNK(mode) or exc.errno in (errno.ELOOP, errno.EMLINK):
        return LinkRefused(f"{where} is a symbolic link: files the runtime writes are never written "
                           "through a link (remove it, or choose another path)")
    if not stat.S_ISDIR(mode) and exc.errno == errno.ENOTDIR:
        return LinkRefused(f"{where} is not a folder: not written")
    return exc

"""Flow sources on disk: the host side of `use` and of `flow check FILE`.

`flow_kernel.lang` is pure and never opens a file; it asks a loader, a callable
`(path as written, importer's name or None) -> SourceFile | None`. This module holds
the loader that reads the real file system, for the CLI and the kernel.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from flow_kernel.source import SourceFile, UseRefused


class SourceReadError(Exception):
    """A Flow source exists but cannot be read (permissions, not UTF-8, …)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class FileSystemLoader:
    """Loads `.flow` files for `check(source, loader=...)`.

    A path is resolved relative to the directory of the file that imports it; with no
    importer (the file named on the command line, or a notebook cell) relative to
    `base`, which defaults to the working directory at the time of the call. The
    `SourceFile` is named by the canonical absolute path (`resolve`), so that the same
    file reached by two routes is one file, and import cycles are seen.

    Text is decoded as UTF-8 (a leading byte-order mark is dropped) and line endings
    are normalised to `\\n`, so that lines and columns mean the same on every platform.

    `guard`, when given, is asked about every resolved path before it is read: it returns
    None to allow it, or the reason it is refused (a file outside the notebook's folder
    that the person did not grant, runtime/policy/trust.py), reported as F2011 at the `use`.
    """

    def __init__(self, base: str | None = None, *, guard: Callable[[str], str | None] | None = None) -> None:
        self.base = base
        self.guard = guard

    def resolve(self, path: str, importer: str | None) -> str:
        if importer is not None:
            directory = os.path.dirname(importer) or os.getcwd()
        else:
            directory = self.base if self.base is not None else os.getcwd()
        return os.path.realpath(os.path.join(directory, path))

    def __call__(self, path: str, importer: str | None) -> SourceFile | None:
        name = self.resolve(path, importer)
        refusal = self.guard(name) if self.guard is not None else None
        if refusal is not None:
            raise UseRefused(refusal)
        if not os.path.isfile(name):
            return None
        return SourceFile(name, read_text(name))


def read_text(path: str) -> str:
    """The text of a UTF-8 file with `\\n` line endings; `SourceReadError` if unreadable."""
    try:
        with open(path, encoding="utf-8-sig", newline=None) as f:
            return f.read()
    except UnicodeDecodeError as e:
        raise SourceReadError(path, f"not valid UTF-8 (byte offset {e.start})") from None
    except OSError as e:
        raise SourceReadError(path, e.strerror or str(e)) from None


def write_text(path: str, text: str) -> None:
    """Write `text` as UTF-8 with `\\n` line endings, creating parent directories."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)

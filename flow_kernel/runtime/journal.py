"""The journal of a run: its events as JSON lines in `.flow/runs/<run>.jsonl`
(runtime.md §7), written and flushed as each event happens, so a failed run, a
killed sandbox or a killed host loses nothing that was already done.

The journal is never written through a symbolic link: `.flow` and `.flow/runs` are made
or entered without following one, and the run's file is created new (its id is fresh)
without following one (`nofollow.py`). A link planted at any of them is `LinkRefused`,
and the run does not start (run.py): its record would otherwise land in whatever file
the link points at, or be lost without a word."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

from flow_kernel.runtime.nofollow import LinkRefused, create_new_file, open_folder

OWN_FOLDERS = 2  # `.flow/runs`: the folders the runtime makes; above them, the person's folder


class Journal:
    """An event sink that appends each event as one line."""

    def __init__(self, directory: Path | str, run_id: str) -> None:
        self.path = Path(directory) / f"{run_id}.jsonl"
        folder = open_folder(Path(directory), own=OWN_FOLDERS)
        try:
            fd = create_new_file(folder, self.path.name, self.path)
        finally:
            os.close(folder)
        self._file: TextIO | None = open(fd, "a", encoding="utf-8")  # noqa: SIM115 - open for the run's lifetime

    def __call__(self, event: dict[str, Any]) -> None:
        if self._file is None:
            return
        self._file.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._file.flush()  # to the OS at once: a crash of this process keeps every line written

    def close(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None


def read_journal(path: Path | str) -> list[dict[str, Any]]:
    """The events of a journal; a torn last line (the writer was killed mid-line) is skipped.
    A link is not read (`LinkRefused`): no journal is one, so it was planted, maybe to show
    another file's lines in a notebook's `%events`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        if Path(path).is_symlink():
            raise LinkRefused(f"{path} is a symbolic link, not a journal: not read") from None
        raise
    with open(fd, encoding="utf-8") as journal:
        text = journal.read()
    events: list[dict[str, Any]] = []
    for line in text.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            break
    return events

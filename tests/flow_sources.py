"""The Flow source files of a folder, for the tests that read every example, case or lesson."""

from __future__ import annotations

from pathlib import Path


def flow_files(folder: Path, *, recursive: bool = False) -> list[Path]:
    """The `*.flow` files in `folder` (and below it when `recursive`), sorted; never a
    directory such as the `.flow/` journal folder a run leaves beside its sources."""
    found = folder.rglob("*.flow") if recursive else folder.glob("*.flow")
    return sorted(path for path in found if path.is_file())

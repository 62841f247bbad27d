"""The gallery's lessons as Python data: one module a notebook (`nNN_name.py`, with
`NAME` and `CELLS`). `md(...)` is the lesson's text, `code(...)` a code cell with
optional tags (`raises-exception` for a cell that fails on purpose). notebooks/make.py
turns them into the committed `.ipynb` files."""

from __future__ import annotations

import importlib
import textwrap
from dataclasses import dataclass
from pathlib import Path

RAISES = "raises-exception"


@dataclass(frozen=True)
class Cell:
    kind: str  # "markdown" | "code"
    source: str
    tags: tuple[str, ...] = ()


def md(text: str) -> Cell:
    return Cell("markdown", textwrap.dedent(text).strip("\n"))


def code(text: str, *tags: str) -> Cell:
    return Cell("code", textwrap.dedent(text).strip("\n"), tags)


def load_all() -> dict[str, list[Cell]]:
    """Every lesson by notebook name, in the gallery's order."""
    lessons: dict[str, list[Cell]] = {}
    for path in sorted(Path(__file__).parent.glob("n[0-9][0-9]_*.py")):
        module = importlib.import_module(f"{__name__}.{path.stem}")
        lessons[module.NAME] = module.CELLS
    return lessons

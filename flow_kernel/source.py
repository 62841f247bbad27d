"""Source text and positions: every span in Flow points into a `SourceFile`; and the
`Loader` through which a source reaches the files it `use`s (the host's side of it is
`flow_kernel.files`, the checker's `flow_kernel.lang.check`)."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flow_kernel.native_marks import rebuilt_by_fields


@dataclass(frozen=True)
class Position:
    """A 1-based line and column (columns count characters, not bytes)."""

    line: int
    column: int

    def to_json(self) -> dict[str, int]:
        return {"line": self.line, "column": self.column}

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


class SourceFile:
    """A named piece of Flow source (a file or a notebook cell) with a line index."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text
        # str.find from newline to newline: a loop over the characters took ~60 ms for a
        # 200 KB file (as long as a fifth of checking it).
        starts = [0]
        find, append = text.find, starts.append
        i = find("\n")
        while i >= 0:
            append(i + 1)
            i = find("\n", i + 1)
        self._line_starts = starts

    def __repr__(self) -> str:
        return f"SourceFile({self.name!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return SourceFile, (self.name, self.text)

    def position(self, offset: int) -> Position:
        offset = max(0, min(offset, len(self.text)))
        index = bisect.bisect_right(self._line_starts, offset) - 1
        return Position(index + 1, offset - self._line_starts[index] + 1)

    def offset(self, line: int, column: int) -> int:
        return self._line_starts[line - 1] + column - 1

    def line_text(self, line: int) -> str:
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]

    @property
    def line_count(self) -> int:
        return len(self._line_starts)

    def span(self, start: int, end: int) -> Span:
        return Span(self, start, end)


class Span:
    """A half-open range of character offsets in one source file.

    A plain slotted class rather than a frozen dataclass: the lexer makes one per
    token, and frozen-dataclass construction is several times slower."""

    __slots__ = ("end", "source", "start")

    def __init__(self, source: SourceFile, start: int, end: int) -> None:
        self.source = source
        self.start = start
        self.end = end

    def __reduce__(self) -> tuple[Any, ...]:
        return Span, (self.source, self.start, self.end)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Span) and (self.start, self.end) == (other.start, other.end)

    def __hash__(self) -> int:
        return hash((self.start, self.end))

    @property
    def start_pos(self) -> Position:
        return self.source.position(self.start)

    @property
    def end_pos(self) -> Position:
        return self.source.position(self.end)

    @property
    def text(self) -> str:
        return self.source.text[self.start : self.end]

    def to(self, other: Span) -> Span:
        """The span covering this one through `other`."""
        return Span(self.source, min(self.start, other.start), max(self.end, other.end))

    def to_json(self) -> dict[str, dict[str, int]]:
        return {"start": self.start_pos.to_json(), "end": self.end_pos.to_json()}

    def __repr__(self) -> str:
        p = self.start_pos
        return f"<{self.source.name}:{p.line}:{p.column}+{self.end - self.start}>"


# (path as written, importer's name or None for a cell) -> the file, or None when missing;
# it raises `UseRefused` when the person did not grant the file (outside the folder).
Loader = Callable[[str, "str | None"], "SourceFile | None"]


class UseRefused(Exception):
    """Raised by a loader for a file it will not read; the message (how to grant it) is
    reported as F2011 at the `use`."""

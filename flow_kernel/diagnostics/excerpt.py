"""A source line as a terminal shows it, and where a span's carets go under it: what the
text and the HTML renderers of diagnostics share.

Tabs expand to the next tab stop, East Asian wide characters take two columns, combining
marks none, and control characters appear as their visible Control Pictures (so a stray
`\\r` or NUL cannot garble the output or shift the carets).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

from flow_kernel.source import Span
from flow_kernel.terminal_text import visible_char

TAB_WIDTH = 4

# Maps a SourceFile name (often a canonical absolute path) to what a reader sees.
DisplayName = Callable[[str], str]


def same_name(name: str) -> str:
    """The display name when the caller chose none: the file's name as it is."""
    return name


def char_width(ch: str) -> int:
    """The columns `ch` takes on a terminal: 0 for a combining mark or a zero-width
    character, 2 for an East Asian wide one, else 1."""
    if unicodedata.combining(ch) or ch in "\u200b\u200c\u200d\ufeff":
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_line(text: str) -> tuple[str, list[int]]:
    """The line as shown, and for each character offset the display column it starts
    at (one entry more than characters: the column just past the end)."""
    shown: list[str] = []
    columns: list[int] = []
    col = 0
    for ch in text:
        columns.append(col)
        if ch == "\t":
            width = TAB_WIDTH - col % TAB_WIDTH
            shown.append(" " * width)
        else:
            ch = visible_char(ch)
            width = sum(char_width(c) for c in ch)  # a stand-in such as `\x9b` is several columns
            shown.append(ch)
        col += width
    columns.append(col)
    return "".join(shown), columns


def excerpt(span: Span) -> tuple[int, str, int, int]:
    """(line number, line as shown, caret start column, caret count) for the first line
    of `span`. At least one caret, even for an empty span or one at the end of a line."""
    start = span.start_pos
    end = span.end_pos
    raw = span.source.line_text(start.line)
    if raw.endswith("\r"):  # a CRLF line: the \r is line ending, not content
        raw = raw[:-1]
    shown, columns = display_line(raw)
    first = min(start.column - 1, len(raw))
    last = min(end.column - 1, len(raw)) if end.line == start.line else len(raw)
    caret_start = columns[first]
    width = columns[max(first, last)] - caret_start
    return start.line, shown.rstrip(), caret_start, max(1, width)


def location(span: Span, display_name: DisplayName) -> str:
    """`name:line:column` of the span's start, the name as `display_name` shows it."""
    p = span.start_pos
    return f"{display_name(span.source.name)}:{p.line}:{p.column}"

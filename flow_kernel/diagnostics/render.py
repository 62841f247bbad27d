"""Renderers: the same diagnostics as compiler-shaped text or as JSON (HTML: html.py).

The model (`model.py`) says what is wrong; this module only decides how it looks.
Text looks like this (diagnostics.md):

```
triage.flow:12:7 [F2001] error: undefined name `triagr`
  12 |   let r = triagr("hi")
     |           ^^^^^^
  = note: triage.flow:3:7: similar name declared here
   3 | agent triager {
     |       ^^^^^^^
  = hint: did you mean `triager`?
```

Source lines are shown as a terminal would show them: tabs expand to the next tab
stop, East Asian wide characters take two columns, combining marks none, and control
characters appear as their visible Control Pictures (so a stray `\\r` or NUL cannot
garble the output or shift the carets).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

from flow_kernel.diagnostics.model import Diagnostic, Severity
from flow_kernel.source import Span
from flow_kernel.terminal_text import terminal_safe, visible_char

TAB_WIDTH = 4

# Maps a SourceFile name (often a canonical absolute path) to what a reader sees.
DisplayName = Callable[[str], str]

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_SEVERITY_COLOR = {
    Severity.ERROR: "\x1b[1;31m",
    Severity.WARNING: "\x1b[1;33m",
    Severity.INFO: "\x1b[1;36m",
}
_NOTE_COLOR = "\x1b[1;34m"
_HINT_COLOR = "\x1b[1;32m"
_GUTTER_COLOR = "\x1b[34m"


def _same(name: str) -> str:
    return name


# --- display columns ------------------------------------------------------------------


def _visible(ch: str) -> str:
    """A stand-in for characters that would move the cursor or vanish (terminal_text.py)."""
    return visible_char(ch)


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or ch in "\u200b\u200c\u200d\ufeff":
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _display_line(text: str) -> tuple[str, list[int]]:
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
            ch = _visible(ch)
            width = sum(_char_width(c) for c in ch)  # a stand-in such as `\x9b` is several columns
            shown.append(ch)
        col += width
    columns.append(col)
    return "".join(shown), columns


def _excerpt(span: Span) -> tuple[int, str, int, int]:
    """(line number, line as shown, caret start column, caret count) for the first line
    of `span`. At least one caret, even for an empty span or one at the end of a line."""
    start = span.start_pos
    end = span.end_pos
    raw = span.source.line_text(start.line)
    if raw.endswith("\r"):  # a CRLF line: the \r is line ending, not content
        raw = raw[:-1]
    shown, columns = _display_line(raw)
    first = min(start.column - 1, len(raw))
    last = min(end.column - 1, len(raw)) if end.line == start.line else len(raw)
    caret_start = columns[first]
    width = columns[max(first, last)] - caret_start
    return start.line, shown.rstrip(), caret_start, max(1, width)


# --- text -------------------------------------------------------------------------


def _location(span: Span, display_name: DisplayName) -> str:
    p = span.start_pos
    return f"{display_name(span.source.name)}:{p.line}:{p.column}"


def _safe_location(span: Span, display_name: DisplayName) -> str:
    return terminal_safe(_location(span, display_name))  # a file name may hold anything


def render_text(
    diagnostics: Sequence[Diagnostic],
    *,
    color: bool = False,
    context: bool = True,
    display_name: DisplayName | None = None,
) -> str:
    """Compiler-shaped text, one block per diagnostic; empty for no diagnostics.

    With `context`, each primary and related span is followed by its source line and a
    caret underline; without it, each diagnostic is its header line plus its notes and
    hints. `display_name` maps file names for display (the CLI shows paths relative to
    the working directory)."""
    name = display_name or _same
    blocks = [_render_one(d, color=color, context=context, display_name=name) for d in diagnostics]
    if not blocks:
        return ""
    return ("\n\n" if context else "\n").join(blocks) + "\n"


def _render_one(d: Diagnostic, *, color: bool, context: bool, display_name: DisplayName) -> str:
    def paint(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if color else text

    sev_color = _SEVERITY_COLOR[d.severity]
    spans = [d.span, *(r.span for r in d.related)]
    width = max(len(str(s.start_pos.line)) for s in spans)

    def excerpt(span: Span, caret_color: str) -> list[str]:
        line, shown, caret_col, carets = _excerpt(span)
        gutter = paint(_GUTTER_COLOR, f"  {line:>{width}} |")
        blank = paint(_GUTTER_COLOR, f"  {'':>{width}} |")
        text_line = f"{gutter} {shown}" if shown else gutter
        caret_line = f"{blank} {' ' * caret_col}{paint(caret_color, '^' * carets)}"
        return [text_line, caret_line]

    header = (
        f"{paint(_BOLD, _safe_location(d.span, display_name))} "
        f"{paint(sev_color, f'[{d.code}] {d.severity.value}')}: {terminal_safe(d.message)}"
    )
    lines = [header]
    if context:
        lines += excerpt(d.span, sev_color)
    for rel in d.related:
        lines.append(
            f"  = {paint(_NOTE_COLOR, 'note')}: {_safe_location(rel.span, display_name)}: {terminal_safe(rel.message)}"
        )
        if context:
            lines += excerpt(rel.span, _NOTE_COLOR)
    lines += [f"  = {paint(_HINT_COLOR, 'hint')}: {terminal_safe(hint)}" for hint in d.hints]
    return "\n".join(lines)


# --- JSON -------------------------------------------------------------------------


def diagnostic_json(d: Diagnostic, *, display_name: DisplayName | None = None) -> dict[str, Any]:
    """One diagnostic in the JSON form of diagnostics.md."""
    name = display_name or _same
    return {
        "code": d.code,
        "severity": d.severity.value,
        "message": d.message,
        "file": name(d.file),
        "span": d.span.to_json(),
        "related": [
            {"message": r.message, "file": name(r.span.source.name), "span": r.span.to_json()}
            for r in d.related
        ],
        "hints": list(d.hints),
    }


def render_json(
    diagnostics: Sequence[Diagnostic], *, display_name: DisplayName | None = None
) -> dict[str, Any]:
    """`{"diagnostics": [...]}`, ready for `json.dumps` (what `--format json` prints)."""
    return {"diagnostics": [diagnostic_json(d, display_name=display_name) for d in diagnostics]}

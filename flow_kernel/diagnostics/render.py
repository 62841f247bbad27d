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

Source lines are shown as a terminal would show them (excerpt.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flow_kernel.diagnostics.excerpt import DisplayName, excerpt, location, same_name
from flow_kernel.diagnostics.model import Diagnostic, Severity
from flow_kernel.source import Span
from flow_kernel.terminal_text import terminal_safe

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


def _safe_location(span: Span, display_name: DisplayName) -> str:
    return terminal_safe(location(span, display_name))  # a file name may hold anything


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
    name = display_name or same_name
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

    def excerpt_lines(span: Span, caret_color: str) -> list[str]:
        line, shown, caret_col, carets = excerpt(span)
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
        lines += excerpt_lines(d.span, sev_color)
    for rel in d.related:
        lines.append(
            f"  = {paint(_NOTE_COLOR, 'note')}: {_safe_location(rel.span, display_name)}: {terminal_safe(rel.message)}"
        )
        if context:
            lines += excerpt_lines(rel.span, _NOTE_COLOR)
    lines += [f"  = {paint(_HINT_COLOR, 'hint')}: {terminal_safe(hint)}" for hint in d.hints]
    return "\n".join(lines)


# --- JSON -------------------------------------------------------------------------


def diagnostic_json(d: Diagnostic, *, display_name: DisplayName | None = None) -> dict[str, Any]:
    """One diagnostic in the JSON form of diagnostics.md."""
    name = display_name or same_name
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

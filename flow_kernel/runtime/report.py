"""A failed run in words: the code, the message, where in the Flow source, and in
which stage (runtime.md §5) — for the terminal and for a notebook's error output."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flow_kernel.errors import FlowError


def describe_error(error: FlowError, source_line: Callable[[str, int], str | None]) -> list[str]:
    """Lines: `error[code]: message`, then `--> file:line:col`, the source line with a
    caret under the span, and the stage. `source_line(file, line)` gives a line's text."""
    lines = [f"error[{error.code}]: {error.message}"]
    span: dict[str, Any] | None = error.span
    if span:
        lines.append(f"  --> {span['file']}:{span['line']}:{span['column']}")
        text = source_line(str(span["file"]), int(span["line"]))
        if text is not None:
            column = int(span["column"])
            same_line = span.get("end_line") == span["line"]
            width = max(1, int(span["end_column"]) - column if same_line else len(text) - column + 1)
            lines.append(f"   | {text}")
            lines.append("   | " + " " * (column - 1) + "^" * width)
    if error.stage:
        lines.append(f'   = in stage "{error.stage}"')
    return lines

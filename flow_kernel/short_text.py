"""The one way a value is cut short for display: `shorten`.

Run views, the terminal, `%who`/`%events`, schema error messages, provider errors and
OpenTelemetry attributes all show values that can be arbitrarily long (model replies,
tool results, program data). They cut them the same way: at most `limit` characters, the
last one "…" when something was cut. It sits at the bottom of the package, beside
markup.py and terminal_text.py, so every layer may import it; it makes no text safe for
HTML or a terminal (markup.py and terminal_text.py do that).
"""

from __future__ import annotations

import json
from typing import Any

ELLIPSIS = "…"


def shorten(value: Any, limit: int, *, as_json: bool = False, first_line: bool = False) -> str:
    """`value` as text of at most `limit` characters (`limit` ≥ 1), ending in "…" when cut.

    A string is its own text, anything else its JSON (with `as_json`, a string too, quoted:
    for messages that must tell `"1"` from `1`). With `first_line`, only the text up to
    the first line break is kept."""
    text = value if isinstance(value, str) and not as_json else json.dumps(value, ensure_ascii=False, default=str)
    if first_line:
        text = text.splitlines()[0] if text else ""
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS

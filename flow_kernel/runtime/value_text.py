"""Rendering values as text on the host, exactly as inside the sandbox (language.md §1)."""

from __future__ import annotations

import json
from typing import Any

MAX_EXACT = 2**53


def normalise(value: Any) -> Any:
    """Integral floats (|x| ≤ 2^53) become ints, at any depth."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_EXACT:
        return int(value)
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    return value


def render_value(value: Any) -> str:
    """A string as is; anything else as compact-with-spaces JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(normalise(value), ensure_ascii=False, separators=(", ", ": "))

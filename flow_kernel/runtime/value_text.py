"""Rendering values as text on the host, exactly as inside the sandbox (language.md §1)."""

from __future__ import annotations

import json
from typing import Any

from flow_kernel.lang.literals import normalise


def render_value(value: Any) -> str:
    """A string as is; anything else as compact-with-spaces JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(normalise(value), ensure_ascii=False, separators=(", ", ": "))

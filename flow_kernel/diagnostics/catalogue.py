"""All registered codes, gathered from the per-family tables."""

from __future__ import annotations

from flow_kernel.diagnostics._catalogue_f1_f3 import ENTRIES as _EARLY
from flow_kernel.diagnostics._catalogue_f4_f7 import ENTRIES as _LATE

# (code, severity letter E/W/I, one-line summary, explanation, failing example, fixed example)
ENTRIES: tuple[tuple[str, str, str, str, str, str], ...] = _EARLY + _LATE

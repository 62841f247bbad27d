"""Diagnostics: the codes registry, the `Diagnostic` model and its renderers.

Pure like `flow_kernel.lang`: no I/O, no asyncio, no IPython. `flow explain` and the
generated docs page live in `flow_kernel.diagnostics.explain`.
"""

from __future__ import annotations

from flow_kernel.diagnostics.html import diagnostics_bundle, render_html
from flow_kernel.diagnostics.model import Diagnostic, Related, Severity
from flow_kernel.diagnostics.registry import FAMILIES, REGISTRY, CodeInfo, Reporter, lookup
from flow_kernel.diagnostics.render import render_json, render_text

__all__ = [
    "FAMILIES",
    "REGISTRY",
    "CodeInfo",
    "Diagnostic",
    "Related",
    "Reporter",
    "Severity",
    "diagnostics_bundle",
    "lookup",
    "render_html",
    "render_json",
    "render_text",
]

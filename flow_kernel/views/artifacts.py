"""A published artifact as an output of its own (docs/widgets.md): a string is Markdown,
rendered on the host and sanitised (`flow_kernel.markup`), any other value is JSON.

Never raw `text/markdown`: JupyterLab renders a live kernel's Markdown with its HTML
and runs what it contains, and an artifact's text is data — often an agent's reply."""

from __future__ import annotations

import json
from typing import Any

from flow_kernel.markup import markdown_html


def artifact_bundle(data: Any) -> dict[str, Any] | None:
    """The MIME bundle for an `artifact.published` event's data; None for data that is not
    an artifact (a forged event: nothing is shown rather than something guessed)."""
    if not isinstance(data, dict):
        return None
    if "text" in data:
        text = str(data["text"])
        return {"text/html": markdown_html(text), "text/plain": text}
    if "json" in data:
        value = data["json"]
        return {"application/json": value, "text/plain": json.dumps(value, ensure_ascii=False, indent=2)}
    return None

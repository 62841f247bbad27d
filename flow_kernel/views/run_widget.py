"""The notebook's anywidgets, their front ends built from widgets/ (one ES module each in
views/static/, served through anywidget from the installed package: nothing is fetched at run
time): the live run view's, with a channel of custom messages — run records in batches from
the host (views/run_stream.py), `hello` and `detail` requests from the browser — and the guard
of a box of prompts shown on its own (views/prompts.py), which has no state and no messages."""

from __future__ import annotations

from pathlib import Path

import anywidget
import traitlets

STATIC = Path(__file__).parent / "static"


class RunWidget(anywidget.AnyWidget):
    # Read once, as text. Given as paths, anywidget wraps them in FileContents and connects
    # every instance to their `changed` signal (hot reload): no RunWidget was ever freed, and
    # each cell's view, its model and its records stayed in the kernel (~14 KB a cell).
    _esm = (STATIC / "run_view.js").read_text(encoding="utf-8")
    _css = (STATIC / "run_view.css").read_text(encoding="utf-8")
    title = traitlets.Unicode("").tag(sync=True)
    run = traitlets.Unicode("").tag(sync=True)  # the run's id: what `%resume` takes when the kernel goes away


class PromptsGuard(anywidget.AnyWidget):
    """Shown beside a box of prompts on its own: when the kernel goes, it takes the box's
    controls away and says why (widgets/src/guard.js)."""

    _esm = (STATIC / "prompts_guard.js").read_text(encoding="utf-8")

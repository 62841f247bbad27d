"""The live run view's widget: the front end built from widgets/ (one ES module and its
stylesheet in views/static/, served through anywidget from the installed package: nothing
is fetched at run time) and a channel of custom messages — run records in batches from the
host (views/run_stream.py), `hello` and `detail` requests from the browser."""

from __future__ import annotations

from pathlib import Path

import anywidget
import traitlets

STATIC = Path(__file__).parent / "static"


class RunWidget(anywidget.AnyWidget):
    _esm = STATIC / "run_view.js"
    _css = STATIC / "run_view.css"
    title = traitlets.Unicode("").tag(sync=True)

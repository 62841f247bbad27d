"""A finished run view is freed: the kernel keeps nothing of a cell's live view once the
summary replaced it (issue 23: the kernel grew ~14 KB a cell while every RunWidget stayed
alive, held by anywidget's hot-reload signal on its ES module file)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

pytest.importorskip("ipywidgets")

from tests.views.test_live import PROGRAM, run_with_view


def test_a_finished_run_view_and_its_widget_are_freed(tmp_path: Path) -> None:
    live, opened, outcome = run_with_view(tmp_path, PROGRAM)
    assert live.finish(outcome) is not None
    view, widget = weakref.ref(opened[0]), weakref.ref(opened[0].widget)
    opened.clear()
    del live
    gc.collect()
    assert widget() is None and view() is None, "a closed run view is still referenced"


def test_a_widget_whose_module_is_a_path_is_never_freed() -> None:
    """The door this closes, reopened: the same widget with its ES module given as a path
    stays alive after close (anywidget connects each instance to the file's signal)."""
    import anywidget

    from flow_kernel.views.run_widget import STATIC

    class PathWidget(anywidget.AnyWidget):
        _esm = STATIC / "run_view.js"

    widget = PathWidget()
    widget.close()
    ref = weakref.ref(widget)
    del widget
    gc.collect()
    assert ref() is not None


def test_a_finished_run_view_leaves_no_widget_open(tmp_path: Path) -> None:
    """Layouts are widgets of their own: closed with the view, none left in the registry."""
    from ipywidgets.widgets.widget import _instances  # every open widget, by model id

    before = set(_instances)
    live, _opened, outcome = run_with_view(tmp_path, PROGRAM)
    assert set(_instances) - before  # the view, its box, their layouts
    live.finish(outcome)
    assert set(_instances) - before == set(), "widgets left open after the run"

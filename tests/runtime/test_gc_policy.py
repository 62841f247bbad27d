"""runtime/gc_policy.py: runs freeze the older heap, and what they leave in reference
cycles is collected when the last one ends — not left for a full collection that may not
come for hundreds of cells (issue 23: the kernel grew ~40 KB a cell)."""

from __future__ import annotations

import gc
import weakref

import pytest

from flow_kernel.runtime import gc_policy


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


@pytest.fixture(autouse=True)
def collector_off_meanwhile() -> object:
    """Thresholds would collect at random points; here only the policy may."""
    was = gc.isenabled()
    gc.disable()
    yield
    if was:
        gc.enable()


def test_a_runs_garbage_cycle_is_freed_when_it_ends() -> None:
    with gc_policy.older_objects_frozen():
        ref = weakref.ref(Node())
        assert ref() is not None
    assert ref() is None
    assert gc.get_freeze_count() == 0  # the older heap is given back


def test_without_the_collection_the_cycle_outlives_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The door reopened: the same run under the old policy (unfreeze only) keeps it."""
    monkeypatch.setattr(gc_policy.gc, "collect", lambda *a: 0)
    with gc_policy.older_objects_frozen():
        ref = weakref.ref(Node())
    assert ref() is not None
    monkeypatch.undo()
    gc.collect()
    assert ref() is None


def test_nested_runs_collect_once_the_last_ends() -> None:
    with gc_policy.older_objects_frozen():
        with gc_policy.older_objects_frozen():
            inner = weakref.ref(Node())
        assert inner() is not None  # another run still going: no collection yet
    assert inner() is None


def test_full_collections_are_rarer_while_runs_go_and_the_thresholds_come_back() -> None:
    """The oldest generation's threshold is raised for the runs (a full collection in the
    middle of a run scans its kept events to find nothing), then given back as it was."""
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with gc_policy.older_objects_frozen():
            with gc_policy.older_objects_frozen():
                assert gc.get_threshold() == (700, 10, gc_policy.RUN_FULL_THRESHOLD)
            assert gc.get_threshold() == (700, 10, gc_policy.RUN_FULL_THRESHOLD)  # a run still going
        assert gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(500, 20, 1000)  # an application's own, higher: kept during runs
        with gc_policy.older_objects_frozen():
            assert gc.get_threshold() == (500, 20, 1000)
        assert gc.get_threshold() == (500, 20, 1000)
    finally:
        gc.set_threshold(*before)


def test_a_heap_the_application_froze_keeps_its_thresholds() -> None:
    before = gc.get_threshold()
    gc.freeze()
    try:
        with gc_policy.older_objects_frozen():
            assert gc.get_threshold() == before
        assert gc.get_freeze_count() > 0  # not the policy's to give back
    finally:
        gc.unfreeze()

"""runtime/gc_policy.py: runs freeze the older heap, and what they leave in reference
cycles is collected when the last one ends — not left for a full collection that may not
come for hundreds of cells (issue 23: the kernel grew ~40 KB a cell)."""

from __future__ import annotations

import asyncio
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


def test_a_later_collection_runs_on_the_loops_next_turn() -> None:
    """`collect_later`: the caller resumes before the collection; the loop's next turn frees
    the cycle and gives the heap back."""
    async def scenario() -> tuple[bool, int, bool, int]:
        with gc_policy.older_objects_frozen(collect_later=True):
            ref = weakref.ref(Node())
        alive_at_return, frozen_at_return = ref() is not None, gc.get_freeze_count()
        await asyncio.sleep(0)
        return alive_at_return, frozen_at_return, ref() is None, gc.get_freeze_count()

    alive, frozen, freed, frozen_after = asyncio.run(scenario())
    assert alive and frozen > 0  # not yet: the caller did not wait
    assert freed and frozen_after == 0


def test_a_run_that_starts_before_the_later_collection_keeps_the_heap_frozen() -> None:
    """The next run keeps the older heap frozen (no second freeze of the first run's
    objects); the due collection still frees the first run's cycle on that turn, and the
    heap goes back when the second run ends."""
    async def scenario() -> list[object]:
        seen: list[object] = []
        with gc_policy.older_objects_frozen(collect_later=True):
            first = weakref.ref(Node())
        frozen = gc.get_freeze_count()
        with gc_policy.older_objects_frozen(collect_later=True):
            seen.append(0 < gc.get_freeze_count() <= frozen)  # not frozen again (it would grow)
            await asyncio.sleep(0)  # the run waits: the loop's turn collects
            seen.append(first() is None)
            seen.append(gc.get_freeze_count() > 0)  # still frozen for this run
        await asyncio.sleep(0)
        seen.append(gc.get_freeze_count())
        return seen

    assert asyncio.run(scenario()) == [True, True, True, 0]


def test_a_later_collection_whose_loop_stopped_is_made_by_the_next_run() -> None:
    """A loop closed before its next turn leaves the collection due: the next run, on
    another loop, makes it before it freezes the heap again."""
    loop = asyncio.new_event_loop()

    async def run_once() -> weakref.ref[Node]:
        with gc_policy.older_objects_frozen(collect_later=True):
            ref = weakref.ref(Node())
        asyncio.get_running_loop().stop()  # this turn is the loop's last
        return ref

    ref = loop.run_until_complete(run_once())
    loop.close()  # the turn that would collect never comes
    assert ref() is not None
    with gc_policy.older_objects_frozen():
        assert ref() is None
    assert gc.get_freeze_count() == 0


def test_without_a_loop_a_later_collection_is_made_at_once() -> None:
    with gc_policy.older_objects_frozen(collect_later=True):
        ref = weakref.ref(Node())
    assert ref() is None
    assert gc.get_freeze_count() == 0

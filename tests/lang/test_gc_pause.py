"""The collector's pause around check and compile (flow_kernel/lang/gc_pause.py): the caller's
collector state comes back whatever happens, what the pause made goes straight to the
oldest generation, and a check leaves no reference cycles behind (which would wait there
for a full collection)."""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator

import pytest

from flow_kernel.bench.frontend import flow_program
from flow_kernel.lang import check, gc_pause
from flow_kernel.lang.compiler import compile_source
from flow_kernel.lang.gc_pause import no_cyclic_gc
from flow_kernel.source import SourceFile

PROGRAM = flow_program(300)

# A `use`d file, a pattern RE2 refuses, a type error: the paths that made cycles.
WITH_ERRORS = """\
use "lib.flow"
type Code = string(pattern: "[A-Z")
let code: Code = "ABC"
let n: int = "x"
print helper(code)
"""
LIB = 'workflow helper(s: string) -> string { return s }\n'


def _loader(path: str, importer: str | None) -> SourceFile | None:
    return SourceFile("lib.flow", LIB) if path == "lib.flow" else None


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    assert gc_pause._depth == 0
    assert gc.get_freeze_count() == 0
    (gc.enable if was else gc.disable)()


def test_collector_back_on_after_an_error() -> None:
    with pytest.raises(ValueError), no_cyclic_gc():
        assert not gc.isenabled()
        with no_cyclic_gc():
            raise ValueError("inside")
    assert gc.isenabled()


def test_collector_left_off_for_a_caller_that_turned_it_off() -> None:
    gc.disable()
    check(SourceFile("p.flow", PROGRAM))
    assert not gc.isenabled()
    with pytest.raises(KeyError), no_cyclic_gc():
        raise KeyError("x")
    assert not gc.isenabled()


def test_what_a_check_made_is_in_the_oldest_generation() -> None:
    gc.collect()
    result = check(SourceFile("p.flow", PROGRAM))
    assert result.ok
    young = gc.get_count()[0]
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    # Resumed the plain way, the whole tree sat in the youngest generation (count in the
    # tens of thousands) for the next young collection to scan.
    assert young < 700, young
    assert id(result.module) in oldest and id(result.module.decls[0]) in oldest


def test_a_heap_frozen_by_someone_else_is_left_frozen() -> None:
    gc.collect()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        result = compile_source(SourceFile("p.flow", PROGRAM))
        assert result.ok
        # The pause neither unfreezes (the count would fall to 0) nor freezes what the compile
        # made (it would rise by thousands); a frozen object the compile lets go of lowers it.
        assert 0 < gc.get_freeze_count() <= frozen
        assert gc.isenabled()
    finally:
        gc.unfreeze()


def test_pauses_from_several_threads_restore_the_collector() -> None:
    limit = sys.getrecursionlimit()
    start = threading.Barrier(3)
    failures: list[BaseException] = []

    def work() -> None:
        start.wait()
        try:
            for _ in range(3):
                assert check(SourceFile("p.flow", PROGRAM)).ok
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert gc.isenabled()
    # Each check saving and restoring the limit itself left it raised when checks overlapped;
    # a later test then encoded 5,000-deep JSON it expected to be refused.
    assert sys.getrecursionlimit() == limit


def test_a_check_leaves_no_reference_cycles() -> None:
    gc.disable()
    try:
        for text in (PROGRAM, WITH_ERRORS):
            check(SourceFile("w.flow", text), loader=_loader)  # caches filled (regexes, schemas)
            gc.collect()
            result = check(SourceFile("w.flow", text), loader=_loader)
            assert result.ok == (text is PROGRAM)
            if text is WITH_ERRORS:
                assert {d.code for d in result.diagnostics} == {"F3013", "F3001"}, result.diagnostics
            del result
            assert gc.collect() == 0
    finally:
        gc.enable()


def test_a_compile_leaves_no_reference_cycles() -> None:
    """Nor does the rest of the compile (generate, write, verify) or the source map's
    first lookup, which generates and writes the module again. The writer used to keep its
    text-only `expr` as a bound method on itself: a cycle that held the writer and its
    lines of text until the next full collection."""
    gc.disable()
    try:
        compile_source(SourceFile("w.flow", PROGRAM))  # caches filled
        gc.collect()
        compiled = compile_source(SourceFile("w.flow", PROGRAM))
        assert compiled.ok and compiled.source_map is not None
        assert gc.collect() == 0
        assert len(compiled.source_map) > 1000  # recorded now: the module written again
        del compiled
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_a_finalizer_that_checks_as_a_pause_starts() -> None:
    """The collection as the pause starts runs finalizers: one that checks (a nested pause)
    neither deadlocks nor leaves the collector off."""
    ran: list[bool] = []

    class Cyclic:
        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:
            ran.append(check(SourceFile("f.flow", "let x = 1\nprint x\n")).ok)

    done = threading.Event()

    def work() -> None:
        check(SourceFile("p.flow", PROGRAM))
        done.set()

    thresholds = gc.get_threshold()
    gc.collect()
    gc.set_threshold(1_000_000)  # the garbage waits for the pause's own collection
    try:
        Cyclic()
        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        worker.join(60)
    finally:
        gc.set_threshold(*thresholds)
    assert done.is_set()
    assert ran == [True]
    assert gc.isenabled()

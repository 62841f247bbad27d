"""Compile: check → generate → write (with the source map) → verify (runtime.md §1, step 1)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from flow_kernel.lang.check import CheckResult, Loader, check
from flow_kernel.lang.codegen import generate
from flow_kernel.lang.session import SessionScope
from flow_kernel.lang.sourcemap import SourceMap, write
from flow_kernel.lang.verify import verify
from flow_kernel.source import SourceFile


@dataclass
class Compiled:
    check: CheckResult
    python: str | None  # None when the source has errors: nothing runs
    source_map: SourceMap | None
    entry_limits: dict[str, int] | None

    @property
    def ok(self) -> bool:
        return self.python is not None


def compile_checked(result: CheckResult, session: SessionScope | None = None) -> Compiled:
    if not result.ok:
        return Compiled(result, None, None, None)
    with _no_cyclic_gc():
        generated = generate(result, set(session.bindings) if session is not None else None)
        written = write(generated.tree, generated.origins)
        verify(written.tree, written.nodes)
    return Compiled(result, written.source, written.source_map, generated.entry_limits)


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Building a big module makes hundreds of thousands of AST nodes, all alive until
    the end; the cyclic collector would rescan them over and over (it took more time
    than the generation itself). Nothing made here is a garbage cycle worth finding early."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def compile_source(source: SourceFile, *, session: SessionScope | None = None, loader: Loader | None = None,
                   cell: bool | None = None) -> Compiled:
    with _no_cyclic_gc():  # checking a big file builds as many long-lived objects as generating it
        checked = check(source, session=session, loader=loader, cell=cell)
    return compile_checked(checked, session)

"""Compile: check → generate → write (with the source map) → verify (runtime.md §1, step 1)."""

from __future__ import annotations

import ast as py
from dataclasses import dataclass, replace

from flow_kernel.diagnostics.registry import Reporter
from flow_kernel.lang.check import check, no_cyclic_gc
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.lang.codegen import generate
from flow_kernel.lang.session_scope import SessionScope
from flow_kernel.lang.sourcemap import SourceMap, write
from flow_kernel.lang.verify import Verification, verify
from flow_kernel.source import Loader, SourceFile, Span


@dataclass
class Compiled:
    check: CheckResult
    python: str | None  # None when the source has errors: nothing runs
    source_map: SourceMap | None
    entry_limits: dict[str, int | float] | None

    @property
    def ok(self) -> bool:
        return self.python is not None


def compile_checked(result: CheckResult, session: SessionScope | None = None) -> Compiled:
    if not result.ok:
        return Compiled(result, None, None, None)
    try:
        with no_cyclic_gc():
            python, source_map, entry_limits = _generate(result, set(session.bindings) if session is not None else None)
    except (RecursionError, SyntaxError):
        # Python's own limits, which a checked source can still reach: its parser takes at
        # most 200 nested brackets, and a chain of ~250 operators (`1 + 1 + …`, `- - … 1`,
        # `r.a.a…`) nests that deep in the generated calls. A diagnostic, not a crash.
        reporter = Reporter()
        reporter.report("F1006", result.source.span(0, min(1, len(result.source.text))),
                        "the source is nested too deeply to compile (a chain of more than ~200 operations)")
        return Compiled(replace(result, diagnostics=[*result.diagnostics, *reporter.sorted()]), None, None, None)
    return Compiled(result, python, source_map, entry_limits)


def _generate(result: CheckResult, names: set[str] | None) -> tuple[str, SourceMap, dict[str, int | float]]:
    """Generate, write, verify; only what is kept leaves, so the tree is freed here, while
    the collector is still paused: resumed with the tree alive, its first collection would
    scan all of it (~40 ms for the bench's 5,022 lines), just before it is freed anyway.
    No Flow origins are recorded: the source map records them on its first lookup."""
    generated = generate(result, names, origins=False)
    checked = Verification(generated.tree)
    written = write(generated.tree, generated.origins, again=lambda: _generate_again(result, names),
                    each=checked.function)  # each function verified as soon as it is written
    if written.tree is generated.tree:
        checked.finish()
    else:  # written the old way and parsed again: what was parsed is what runs
        verify(written.tree)
    return written.source, written.source_map, generated.entry_limits


def _generate_again(result: CheckResult, names: set[str] | None) -> tuple[py.Module, dict[int, Span]]:
    """The same tree once more (generation is deterministic), for the source map's first
    lookup: the text is written without positions, and the tree is not kept."""
    generated = generate(result, names)
    return generated.tree, generated.origins


def compile_source(source: SourceFile, *, session: SessionScope | None = None, loader: Loader | None = None,
                   cell: bool | None = None) -> Compiled:
    # One pause for both steps: when the collector comes back between them, its first
    # young collection scans everything the check made, in the middle of the compile.
    with no_cyclic_gc():
        return compile_checked(check(source, session=session, loader=loader, cell=cell), session)

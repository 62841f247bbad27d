"""The source map of a generated module: positions in the generated Python → Flow spans.

The code generator records the Flow span of the Python nodes it builds. The module
is then written out (`pywriter.unparse`) and parsed again (the text is what the
sandbox compiles and what the verifier checks); walking the built and the re-parsed
trees side by side gives every recorded node its position in that text. A runtime
error carries the position of the instruction that raised it (Python's
`co_positions`), and `SourceMap.lookup` finds the innermost recorded node around it.
"""

from __future__ import annotations

import ast as py
import bisect
from dataclasses import dataclass

from flow_kernel.lang.pytree import tree_nodes
from flow_kernel.lang.pywriter import unparse
from flow_kernel.source import Span

Position = tuple[int, int, int, int]  # line, col, end_line, end_col (1-based lines, 0-based cols)


@dataclass
class CompiledPython:
    source: str
    tree: py.Module  # the re-parsed tree: what the verifier checks
    source_map: SourceMap
    nodes: list[py.AST]  # all of `tree`'s nodes, so that the verifier need not walk it again


class SourceMap:
    def __init__(self, entries: list[tuple[Position, Span]]) -> None:
        self.exact = {pos: span for pos, span in entries}
        # For containment queries, sorted by start; a small module makes a scan cheap.
        self.entries = sorted(entries, key=lambda e: (e[0][0], e[0][1]))
        self._starts = [(p[0], p[1]) for p, _ in self.entries]

    def lookup(self, pos: Position | list[int] | None) -> Span | None:
        if pos is None or len(pos) != 4:
            return None
        key = (pos[0], pos[1], pos[2], pos[3])
        if key in self.exact:
            return self.exact[key]
        best: tuple[int, Span] | None = None
        end = bisect.bisect_right(self._starts, (key[0], key[1]))
        for (start_line, start_col, end_line, end_col), span in self.entries[:end]:
            if (end_line, end_col) >= (key[2], key[3]):
                size = (end_line - start_line) * 10_000 + (end_col - start_col)
                if best is None or size < best[0]:
                    best = (size, span)
        return best[1] if best is not None else None

    def __len__(self) -> int:
        return len(self.entries)


def span_to_json(span: Span) -> dict[str, object]:
    """A Flow span as runtime errors carry it (runtime.md §5)."""
    start, end = span.start_pos, span.end_pos
    return {"file": span.source.name, "line": start.line, "column": start.column,
            "end_line": end.line, "end_column": end.column}


def write(tree: py.Module, origins: dict[int, Span]) -> CompiledPython:
    source = unparse(tree)
    reparsed = py.parse(source, "<flow>")
    entries: list[tuple[Position, Span]] = []
    nodes = tree_nodes(reparsed)
    for built, parsed in zip(tree_nodes(tree), nodes, strict=True):
        if type(built) is not type(parsed):
            raise AssertionError(f"unparse changed the tree: {type(built).__name__} became {type(parsed).__name__}")
        span = origins.get(id(built))
        if span is not None and isinstance(parsed, (py.expr, py.stmt)):
            pos = (parsed.lineno, parsed.col_offset, parsed.end_lineno or parsed.lineno, parsed.end_col_offset or 0)
            entries.append((pos, span))
    return CompiledPython(source, reparsed, SourceMap(entries), nodes)

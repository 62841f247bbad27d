"""The source map of a generated module: positions in the generated Python → Flow spans.

The code generator records the Flow span of the Python nodes it builds. The writer
(`pywriter.ModuleWriter`) records where each of them lands in the text as it writes
it: the position Python's parser gives the node, so the built tree is the module the
sandbox compiles and the one the verifier checks. A module the writer does not write
faithfully, or one nested deep enough for Python's parser limits to matter (200
brackets, 100 indentation levels: a SyntaxError there is a diagnostic, F1006), is
written and parsed again the old way, and walking the built and the re-parsed trees
side by side gives every recorded node its position. A runtime
error carries the position of the instruction that raised it (Python's
`co_positions`), and `SourceMap.lookup` finds the innermost recorded node around it.

Most modules never raise, and recording positions is about 40 % of writing: given a
way to build the same tree again (`again`: the compiler generates it once more from
the check result it keeps anyway), `write` writes the text alone and the map records
the positions on its first lookup, by writing the module built again — checked to be
the very text that was compiled. The tree itself is not kept for that (~5 KB a line).
"""

from __future__ import annotations

import ast as py
import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass

from flow_kernel.lang.check import no_cyclic_gc
from flow_kernel.lang.pytree import tree_nodes
from flow_kernel.lang.pywriter import ModuleWriter, Position, TextWriter, Unsupported, unparse
from flow_kernel.source import Span

# Well inside Python's limits (200 nested brackets, 100 indentation levels): a module
# this shallow parses, so it need not be parsed to find out.
SHALLOW_BRACKETS = 100
SHALLOW_BLOCKS = 50


@dataclass
class CompiledPython:
    source: str
    tree: py.Module  # the tree the text parses to: what the verifier checks
    source_map: SourceMap


class SourceMap:
    """The indexes are built on the first lookup: most modules never raise, and a
    5,000-line one has ~33,000 entries to index."""

    def __init__(self, entries: list[tuple[Position, Span]] | Callable[[], list[tuple[Position, Span]]]) -> None:
        self._recorded = entries  # or what records them, called on the first lookup
        self._exact: dict[Position, Span] | None = None
        self._entries: list[tuple[Position, Span]] = []
        self._starts: list[tuple[int, int]] = []

    def __getstate__(self) -> dict[str, object]:
        """A map that leaves the process (pickled for a Ray worker) records its entries
        first: what records them refers to the check result's facts by object identity
        (`id()` keys), which another process's copy of that result does not keep."""
        return {"entries": self._recorded_entries()}

    def __setstate__(self, state: dict[str, list[tuple[Position, Span]]]) -> None:
        self.__init__(state["entries"])  # type: ignore[misc]

    def _recorded_entries(self) -> list[tuple[Position, Span]]:
        recorded = self._recorded
        if callable(recorded):
            recorded = self._recorded = recorded()
        return recorded

    def _index(self) -> dict[Position, Span]:
        if self._exact is None:
            recorded = self._recorded_entries()
            self._exact = {pos: span for pos, span in recorded}
            # For containment queries, sorted by start; a small module makes a scan cheap.
            self._entries = sorted(recorded, key=lambda e: (e[0][0], e[0][1]))
            self._starts = [(p[0], p[1]) for p, _ in self._entries]
        return self._exact

    @property
    def exact(self) -> dict[Position, Span]:
        return self._index()

    @property
    def entries(self) -> list[tuple[Position, Span]]:
        self._index()
        return self._entries

    def lookup(self, pos: Position | list[int] | None) -> Span | None:
        if pos is None or len(pos) != 4:
            return None
        key = (pos[0], pos[1], pos[2], pos[3])
        exact = self._index()
        if key in exact:
            return exact[key]
        best: tuple[int, Span] | None = None
        end = bisect.bisect_right(self._starts, (key[0], key[1]))
        for (start_line, start_col, end_line, end_col), span in self._entries[:end]:
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


Built = tuple[py.Module, dict[int, Span]]  # a generated tree and its nodes' Flow spans


def write(tree: py.Module, origins: dict[int, Span], again: Callable[[], Built] | None = None,
          each: Callable[[py.stmt], None] | None = None) -> CompiledPython:
    """The module's text and source map; with `again`, the map records its positions on
    its first lookup, from the tree `again` builds (the same one, or the lookup fails),
    and `origins` may be empty (the tree generated without them: a module written the
    old way is mapped from the tree `again` builds). `each` is called with each
    top-level statement once it is written (the compiler verifies it then, while its
    nodes are in the CPU's caches)."""
    writer = TextWriter() if again is not None or not origins else ModuleWriter(origins)
    try:
        source = writer.write(tree) if each is None else _write_each(writer, tree, each)
    except Unsupported:
        return write_and_parse(*(again() if again is not None else (tree, origins)))
    if writer.max_depth >= SHALLOW_BLOCKS or any(
            _bracket_depth(line) >= SHALLOW_BRACKETS for line in writer.lines if len(line) >= 2 * SHALLOW_BRACKETS):
        return write_and_parse(*(again() if again is not None else (tree, origins)))
    if again is None:
        return CompiledPython(source, tree, SourceMap(writer.entries))
    return CompiledPython(source, tree, SourceMap(lambda: _record_again(again, source)))


def _write_each(writer: ModuleWriter, tree: py.Module, each: Callable[[py.stmt], None]) -> str:
    """`writer.write(tree)`, one top-level statement at a time (the same text)."""
    if not tree.body:
        raise Unsupported("empty body")
    for node in tree.body:
        writer.block([node], 0)
        each(node)
    return "\n".join(writer.lines) + "\n"


def _record_again(again: Callable[[], Built], source: str) -> list[tuple[Position, Span]]:
    try:
        with no_cyclic_gc():  # as when compiling (and the tree is freed before it resumes)
            text, entries = _write_again(again)
    except RecursionError:
        # Built again from deeper in the stack than the compile (a lookup runs inside the
        # run's error handling): a module at the edge of the limit gets no spans, not a crash.
        return []
    if text != source:
        raise AssertionError("the module built again for its source map is not the module that was compiled")
    return entries


def _write_again(again: Callable[[], Built]) -> tuple[str, list[tuple[Position, Span]]]:
    tree, origins = again()
    writer = ModuleWriter(origins)
    return writer.write(tree), writer.entries


_STRING = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")  # a literal as `repr` writes it
_BRACKET = re.compile(r"[][(){}]")


def _bracket_depth(line: str) -> int:
    """How deep brackets nest in a written line, outside its string literals (what
    Python's tokenizer counts). Only lines long enough to nest 100 deep are looked at."""
    if line.count("(") + line.count("[") + line.count("{") < SHALLOW_BRACKETS:
        return 0
    depth = deepest = 0
    for bracket in _BRACKET.findall(_STRING.sub("", line)):
        if bracket in "([{":
            depth += 1
            if depth > deepest:
                deepest = depth
        else:
            depth -= 1
    return deepest


def write_and_parse(tree: py.Module, origins: dict[int, Span]) -> CompiledPython:
    """The module written, parsed again (its positions, and Python's own syntax limits)
    and mapped by walking both trees side by side."""
    source = unparse(tree)
    reparsed = py.parse(source, "<flow>")
    entries: list[tuple[Position, Span]] = []
    for built, parsed in zip(tree_nodes(tree), tree_nodes(reparsed), strict=True):
        if type(built) is not type(parsed):
            raise AssertionError(f"unparse changed the tree: {type(built).__name__} became {type(parsed).__name__}")
        span = origins.get(id(built))
        if span is not None and isinstance(parsed, (py.expr, py.stmt)):
            pos = (parsed.lineno, parsed.col_offset, parsed.end_lineno or parsed.lineno, parsed.end_col_offset or 0)
            entries.append((pos, span))
    return CompiledPython(source, reparsed, SourceMap(entries))

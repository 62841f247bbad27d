"""A session's compiled cells, so that compiling an unchanged cell again is a lookup.

A notebook runs the same cells again and again; each run checked and compiled the cell
from scratch (~1 ms for a small cell, ~1 s for a 5,000-line one). An entry is keyed by
the cell's name and text, and it is used only when everything else the check read is
as it was when the entry was made — never a stale result:

- the session scope: each earlier declaration by where it was written (its node's class,
  source name and text, and offsets: the same text parses to the same node, so an earlier
  cell run again still matches), in order, and each top-level binding by name, static
  type and mutability, in order;
- every file the check read through the loader (`use`, prompt files), read again now
  through the session's current loader and guard: the same name and text. A read that
  failed makes the entry unusable (the failure may pass).

An edited cell, a changed earlier declaration or binding, a changed file or a reset all
compile again. The cache keeps the last `SIZE` cells (least recently used first out).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from flow_kernel.lang import types as T
from flow_kernel.lang.compiler import Compiled, compile_source
from flow_kernel.lang.session_scope import SessionScope
from flow_kernel.source import Loader, SourceFile

SIZE = 64

DeclSig = tuple[str, type, str, str, int, int]
BindingSig = tuple[str, T.Type, bool]
Read = tuple[str, "str | None", "tuple[str, str] | None"]  # path, importer, what it gave (None: nothing)


def scope_signature(scope: SessionScope) -> tuple[tuple[DeclSig, ...], tuple[BindingSig, ...]]:
    decls = tuple((name, type(node), node.span.source.name, node.span.source.text, node.span.start, node.span.end)
                  for name, node in scope.decls.items())
    bindings = tuple((name, b.type, b.mutable) for name, b in scope.bindings.items())
    return decls, bindings


class RecordingLoader:
    """The session's loader, noting every read so that a cached entry can check them again."""

    def __init__(self, loader: Loader) -> None:
        self.loader = loader
        self.reads: list[Read] = []
        self.failed = False

    def __call__(self, path: str, importer: str | None) -> SourceFile | None:
        try:
            found = self.loader(path, importer)
        except BaseException:
            self.failed = True
            raise
        self.reads.append((path, importer, None if found is None else (found.name, found.text)))
        return found

    def __getattr__(self, name: str) -> Any:  # `resolve`, used to name a file in a diagnostic
        return getattr(self.loader, name)


@dataclass
class _Entry:
    scope: tuple[tuple[DeclSig, ...], tuple[BindingSig, ...]]
    reads: list[Read]
    compiled: Compiled


class CompileCache:
    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self.entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def compile(self, source: SourceFile, scope: SessionScope, loader: Loader) -> Compiled:
        key = (source.name, source.text)
        signature = scope_signature(scope)
        entry = self.entries.get(key)
        if entry is not None and entry.scope == signature and _same_reads(entry.reads, loader):
            self.entries.move_to_end(key)
            self.hits += 1
            return entry.compiled
        self.misses += 1
        recording = RecordingLoader(loader)
        compiled = compile_source(source, session=scope, loader=recording, cell=True)
        if recording.failed:
            self.entries.pop(key, None)
        else:
            self.entries[key] = _Entry(signature, recording.reads, compiled)
            self.entries.move_to_end(key)
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)
        return compiled

    def clear(self) -> None:
        self.entries.clear()


def _same_reads(reads: list[Read], loader: Loader) -> bool:
    for path, importer, gave in reads:
        try:
            found = loader(path, importer)
        except Exception:
            return False
        if (None if found is None else (found.name, found.text)) != gave:
            return False
    return True

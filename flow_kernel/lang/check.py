"""`check`: parse a file or cell, load what it `use`s, and check it in its session."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

from flow_kernel.diagnostics.model import Related
from flow_kernel.diagnostics.registry import Reporter
from flow_kernel.lang import ast
from flow_kernel.lang.builtins import BUILTINS
from flow_kernel.lang.check_common import type_references
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.lang.checker import Checker, decl_kind
from flow_kernel.lang.env import Binding, DeclEntry, Scope
from flow_kernel.lang.fn_effects import fn_effects
from flow_kernel.lang.gc_pause import no_cyclic_gc as no_cyclic_gc
from flow_kernel.lang.parser import parse
from flow_kernel.lang.session_scope import SessionScope
from flow_kernel.source import Loader, SourceFile, UseRefused

RECURSION_LIMIT = 20_000  # the parser bounds nesting; long operator chains still recurse


def check(
    source: SourceFile,
    *,
    session: SessionScope | None = None,
    loader: Loader | None = None,
    cell: bool | None = None,
    models: Mapping[str, str] | None = None,
    mcp_servers: Iterable[str] | None = None,
) -> CheckResult:
    """Check one file or notebook cell. Never raises for bad input: everything wrong
    with the source is a diagnostic. `cell` defaults to "a session was given". `models` is
    the configuration's `[models]` table: in a file, a `model: "for:…"` whose purpose it
    does not set is an error (a notebook learns it when the call runs). `mcp_servers` are the
    configuration's `[mcp.NAME]` names: in a file, a tool `from mcp` another server is F4021."""
    try:
        with deep_recursion(), no_cyclic_gc():
            return _check(source, session, loader, cell, models, mcp_servers)
    except RecursionError:
        reporter = Reporter()
        reporter.report("F1006", source.span(0, min(1, len(source.text))), "the source is nested too deeply to check")
        return CheckResult(source, ast.Module(source.span(0, 0), [], [], []), reporter.sorted())


_limit_lock = threading.Lock()
_limit_depth = 0  # checks in progress in this process, in any thread
_limit_before = 0  # the recursion limit before the first of them


@contextmanager
def deep_recursion() -> Iterator[None]:
    """Python's recursion limit raised to RECURSION_LIMIT while any check runs. The limit is
    one per process: checks in several threads each saving and restoring it could leave it
    raised for good (A saves 1,000; B saves A's 20,000; A restores; B restores 20,000), so
    the first to start saves it and the last to end restores it."""
    global _limit_depth, _limit_before
    with _limit_lock:
        if _limit_depth == 0:
            _limit_before = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_limit_before, RECURSION_LIMIT))
        _limit_depth += 1
    try:
        yield
    finally:
        with _limit_lock:
            _limit_depth -= 1
            if _limit_depth == 0:
                sys.setrecursionlimit(_limit_before)


def _check(source: SourceFile, session: SessionScope | None, loader: Loader | None, cell: bool | None,
           models: Mapping[str, str] | None = None, mcp_servers: Iterable[str] | None = None) -> CheckResult:
    is_cell = session is not None if cell is None else cell
    reporter = Reporter()
    module = parse(source, reporter)
    used = _load_uses(source, module, loader, reporter, is_cell)
    checker = Checker(reporter, {source, *(src for src, _ in used)}, file_mode=not is_cell)
    checker.loader, checker.models = loader, models  # for prompt files and models by purpose
    checker.mcp_servers = frozenset(mcp_servers or ())  # for tools lent by MCP servers (F4021)
    checker.cell_sources = frozenset({id(source)} if is_cell else ())
    _collect(checker, module, used, session or SessionScope())
    checker.check_declarations()
    checker.fn_effects = fn_effects(checker.decls)
    contexts = [checker.check_workflow(e) for e in list(checker.decls.values()) if e.kind in ("workflow", "fn")]
    checker.check_recursion(contexts)
    session_scope = Scope(None)
    for name, b in (session.bindings if session else {}).items():
        session_scope.bindings[name] = Binding(name, b.type, b.mutable, source.span(0, 0), "session", None, used=True)
    checker.toplevel_names = set(session_scope.bindings) | {
        s.name.name for s in module.statements if isinstance(s, ast.Let)
    }
    toplevel = checker.check_toplevel(module.statements, session_scope)
    if not is_cell:
        checker.warn_unused_declarations()
    return CheckResult(
        source, module, reporter.sorted(), checker.decls, checker.toplevel_bindings, toplevel,
        {c.name: c for c in contexts if not isinstance(c.decl, ast.FnDecl)}, [src for src, _ in used], checker.optional_reads, checker.call_outputs,
        checker.prompt_fills,
    )


def _load_uses(source: SourceFile, module: ast.Module, loader: Loader | None, reporter: Reporter,
               is_cell: bool) -> list[tuple[SourceFile, ast.Module]]:
    loaded: dict[str, tuple[SourceFile, ast.Module]] = {}
    _visit_uses(source, module, [source.name], None if is_cell else source.name, loader, reporter, loaded)
    return list(loaded.values())


def _visit_uses(src: SourceFile, mod: ast.Module, chain: list[str], importer: str | None, loader: Loader | None,
                reporter: Reporter, loaded: dict[str, tuple[SourceFile, ast.Module]]) -> None:
    """A module function, not a closure: a recursive closure refers to itself through its
    cell, a reference cycle (with the reporter) left for the collector after every check."""
    for use in mod.uses:
        try:
            target = loader(use.path, importer) if loader is not None else None
        except UseRefused as refused:
            reporter.report("F2011", use.path_span, f"`use`: file \"{use.path}\" is not readable here: {refused}")
            continue
        if target is None:
            reporter.report("F2011", use.path_span, f"`use`: file \"{use.path}\" not found")
            continue
        if target.name in chain:
            cycle = " → ".join([*chain[chain.index(target.name):], target.name])
            reporter.report("F2012", use.path_span, f"`use`: import cycle {cycle}")
            continue
        if target.name in loaded:
            continue
        used_module = parse(target, reporter)
        loaded[target.name] = (target, used_module)
        _visit_uses(target, used_module, [*chain, target.name], target.name, loader, reporter, loaded)


def _collect(checker: Checker, module: ast.Module, used: list[tuple[SourceFile, ast.Module]], session: SessionScope) -> None:
    decls = checker.decls
    cell_names = {d.name.name for d in module.decls}
    used_names = {d.name.name for _, m in used for d in m.decls}
    for name, node in session.decls.items():
        if name not in cell_names and name not in used_names:
            decls[name] = DeclEntry(decl_kind(node), node, "session", used=True)
    for _, used_module in used:
        for node in used_module.decls:
            first = decls.get(node.name.name)
            if first is not None and first.origin == "use":
                checker.report("F2002", node.name.span, f"`{node.name.name}` is declared twice",
                               related=[Related(first.span, "first declared here")])
                continue
            decls[node.name.name] = DeclEntry(decl_kind(node), node, "use", used=True)
    for node in module.decls:
        name = node.name.name
        first = decls.get(name)
        if first is not None and first.origin in ("cell", "use"):
            checker.report("F2002", node.name.span, f"`{name}` is declared twice",
                           related=[Related(first.span, "first declared here")])
            continue
        if name in BUILTINS:
            checker.report("F2006", node.name.span, f"`{name}` shadows the builtin `{name}`", hints=(f"rename it, e.g. `{name}_`",))
        previous = session.decls.get(name)
        if previous is not None:
            _redefinition(checker, node, previous, session)
        decls[name] = DeclEntry(decl_kind(node), node, "cell")


def _redefinition(checker: Checker, node: ast.Decl, previous: ast.Decl, session: SessionScope) -> None:
    name = node.name.name
    if previous.name.span.source.name == node.name.span.source.name:
        return  # the same cell run again (cells are named by their text): nothing to say
    checker.report("F7003", node.name.span, f"`{name}` redefines the {decl_kind(previous)} from an earlier cell",
                   related=[Related(previous.name.span, "previous definition")])
    if not isinstance(node, ast.TypeDecl) or not isinstance(previous, ast.TypeDecl):
        return
    if " ".join(node.type.span.text.split()) == " ".join(previous.type.span.text.split()):
        return
    users = sorted(other for other, d in session.decls.items() if other != name and name in type_references(d))
    if users:
        listed = ", ".join(f"`{u}`" for u in users)
        checker.report("F7004", node.name.span, f"redefining type `{name}` changes what {listed} use{'s' if len(users) == 1 else ''}",
                       related=[Related(previous.name.span, "previous definition")])

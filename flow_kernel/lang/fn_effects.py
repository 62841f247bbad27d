"""What a user function (`fn`) may do when it is called: its first effect, found in its
text and through the functions it calls, before any body is checked.

A call of a function is checked where it stands: inside a lambda given to a pure builtin
(`map`, `filter`, …) the function must have no effect at all (F5020), inside `parallel`
or `parallelMap` it must not ask the operator (F5011), inside an `async` body neither
(F5002). The effects are those F5020 lists: a call of an agent, team, workflow or panel,
`approve`, `ask`, `run`, `print`, `log`, `emit` and `publish`. A name the function binds
itself (a parameter, `let`, a loop or lambda variable) is not a declaration there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from flow_kernel.lang import ast
from flow_kernel.lang.static_budget import local_names
from flow_kernel.native_marks import rebuilt_by_fields
from flow_kernel.source import Span

_CALLED_KINDS = {"agent": "calls the agent", "workflow": "calls the workflow", "panel": "calls the panel",
                 "team": "calls the team"}
_STATEMENT_EFFECTS = {ast.Print: "prints", ast.Log: "logs", ast.Emit: "emits an event", ast.Publish: "publishes an artifact"}


@dataclass(frozen=True)
class FnEffect:
    """A function's first effect: what it does (`calls the agent `a``), where, and the chain
    of functions it goes through (empty when the function does it itself). `asks` is the
    span of an `approve`/`ask` it may reach, which `parallel` refuses, or None."""

    what: str
    span: Span
    via: tuple[str, ...] = ()
    asks: Span | None = None

    def describe(self) -> str:
        """`calls the agent `a`` or `calls `g`, which calls the agent `a``."""
        if not self.via:
            return self.what
        chain = ", which calls ".join(f"`{name}`" for name in self.via)
        return f"calls {chain}, which {self.what}"

    def __reduce__(self) -> tuple[Any, ...]:
        return rebuilt_by_fields(self)


@dataclass
class _Direct:
    effect: tuple[str, Span] | None
    asks: Span | None
    callees: list[str]


def fn_effects(decls: Mapping[str, object]) -> dict[str, FnEffect]:
    """Every function of `decls` (name -> an entry with `kind` and `node`) that has an
    effect, directly or through the functions it calls; pure functions are absent."""
    kinds = {name: str(getattr(entry, "kind", "")) for name, entry in decls.items()}
    direct: dict[str, _Direct] = {}
    for name, entry in decls.items():
        node = getattr(entry, "node", None)
        if kinds[name] == "fn" and isinstance(node, ast.FnDecl):
            direct[name] = _direct(node, kinds)
    found: dict[str, FnEffect] = {}
    for name in direct:
        effect = _reach(name, direct)
        if effect is not None:
            found[name] = effect
    return found


def _reach(start: str, direct: dict[str, _Direct]) -> FnEffect | None:
    """The first effect reachable from `start` (breadth first, so the shortest chain), and
    the first `approve`/`ask` reachable, if any."""
    seen = {start}
    queue: list[tuple[str, tuple[str, ...]]] = [(start, ())]
    effect: tuple[str, Span, tuple[str, ...]] | None = None
    asks: Span | None = None
    while queue:
        name, via = queue.pop(0)
        info = direct[name]
        if effect is None and info.effect is not None:
            effect = (*info.effect, via)
        if asks is None and info.asks is not None:
            asks = info.asks
        for callee in info.callees:
            if callee not in seen and callee in direct:
                seen.add(callee)
                queue.append((callee, (*via, callee)))
    if effect is None:
        return None
    return FnEffect(effect[0], effect[1], effect[2], asks)


def _direct(node: ast.FnDecl, kinds: Mapping[str, str]) -> _Direct:
    local = local_names(node)
    info = _Direct(None, None, [])
    for n in _walk(node.body):
        found = _effect_of(n, kinds, local, info)
        if found is not None and info.effect is None:
            info.effect = found
    return info


def _effect_of(n: ast.Node, kinds: Mapping[str, str], local: frozenset[str], info: _Direct) -> tuple[str, Span] | None:
    if isinstance(n, ast.Approve | ast.Ask):
        word = "approve" if isinstance(n, ast.Approve) else "ask"
        if info.asks is None:
            info.asks = n.span
        return f"asks the operator (`{word}`)", n.span
    if isinstance(n, ast.Run):
        return "runs a process", n.span
    statement = _STATEMENT_EFFECTS.get(type(n))
    if statement is not None:
        return statement, n.span
    if not isinstance(n, ast.Call):
        return None
    callee = n.callee.obj if isinstance(n.callee, ast.Member) else n.callee
    if not isinstance(callee, ast.Name) or callee.name in local:
        return None
    kind = kinds.get(callee.name)
    if kind == "fn" and callee is n.callee:
        info.callees.append(callee.name)
        return None
    what = _CALLED_KINDS.get(kind or "")
    return (f"{what} `{callee.name}`", n.callee.span) if what is not None else None


def _walk(node: object) -> Iterable[ast.Node]:
    """Every node below `node`, lambdas included, in source order."""
    stack: list[object] = [node]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(reversed(value))
        elif isinstance(value, ast.Node):
            yield value
            names = _FIELDS.get(type(value)) or _field_names(type(value))
            stack.extend(reversed([v for n in names if isinstance(v := getattr(value, n), ast.Node | list)]))


# A node class -> its fields' names, in declaration order (a compiled node has no `__dict__`).
_FIELDS: dict[type, tuple[str, ...]] = {}


def _field_names(kind: type) -> tuple[str, ...]:
    names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind))
    return names

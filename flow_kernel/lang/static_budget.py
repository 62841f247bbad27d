"""What a workflow certainly spends, counted from its text before anything runs.

`usage(body, names)` walks a workflow body and returns its `Usage`: the agent calls every
successful run makes at least, the most it can make when that is known, and the least
number of `steps` the sandbox counts for it. Counts multiply through fan-outs whose size
is in the text: an array literal, `range(N)` / `range(A, B)` with integer literals,
`map`/`filter`/`count`/`reduce`/`flatMap`/`parallelMap` over them, and `for` over them.

Lower bounds are safe by construction: anything that may stop early (`return`, `break`,
`continue` before the end, a `try` body that can fail into a `catch`, a short-circuiting
operator, a branch of `if` or `?:`) counts for its least branch, and what is not known
counts nothing. The step weights follow the sandbox (bootstrap/flowbox/runtime.py): one
step per statement except `limits`, per builtin, agent, team, workflow or panel call, per
lambda invocation, and per `while` condition; `parallel` branches add nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from flow_kernel.lang import ast
from flow_kernel.lang.builtins import BUILTINS
from flow_kernel.source import Span

# Builtins that call their lambda once per item, whatever the items are.
_EVERY_ITEM = frozenset({"map", "filter", "count", "parallelMap", "reduce", "flatMap"})


@dataclass(slots=True)
class Usage:
    """Agent calls at least / at most (None: not bounded by the text), steps at least.

    A value: nothing changes one once made (every operation returns a new one, and the
    constants below are shared). Not `frozen`: a frozen dataclass sets each field through
    `object.__setattr__`, and the pass makes one of these per node it adds up."""

    calls: int = 0
    calls_max: int | None = 0
    steps: int = 0

    def __add__(self, other: Usage) -> Usage:
        if other is NOTHING:
            return self
        if self is NOTHING:
            return other
        top = None if self.calls_max is None or other.calls_max is None else self.calls_max + other.calls_max
        return Usage(self.calls + other.calls, top, self.steps + other.steps)

    def times(self, n: int) -> Usage:
        return Usage(self.calls * n, None if self.calls_max is None else self.calls_max * n, self.steps * n)

    def either(self, other: Usage) -> Usage:
        """One of two paths: the least of the lower bounds, the most of the upper ones."""
        top = None if self.calls_max is None or other.calls_max is None else max(self.calls_max, other.calls_max)
        return Usage(min(self.calls, other.calls), top, min(self.steps, other.steps))

    def maybe(self) -> Usage:
        """A path that may not be taken at all."""
        return Usage(0, self.calls_max, 0)


NOTHING = Usage()
UNBOUNDED = Usage(0, None, 0)  # may call agents, how many the text does not say
ONE_STEP = Usage(steps=1)
_UNKNOWN_STATEMENT = ONE_STEP + UNBOUNDED


@dataclass(frozen=True)
class Names:
    """How the names called in a workflow resolve: declaration kinds, and the names the
    workflow binds itself (a local name shadows a declaration or builtin of that name)."""

    kinds: dict[str, str]
    local: frozenset[str] | set[str]
    # The id of a statement -> whether it may leave its block, where the caller knows it
    # (the checker records it as it checks each statement); other statements are searched.
    leaves: Mapping[int, bool] = dataclasses.field(default_factory=dict)


def static_length(e: ast.Expr, names: Names) -> int | None:
    """The number of items of an array the text spells out, or None."""
    if isinstance(e, ast.ArrayLit):
        return len(e.items)
    if isinstance(e, ast.Call) and _builtin(e, names) == "range":
        ints = [a.value.value for a in e.args if a.name is None and isinstance(a.value, ast.IntLit)]
        if len(ints) == len(e.args):
            if len(ints) == 1:
                return max(0, ints[0])
            if len(ints) == 2:
                return max(0, ints[1] - ints[0])
    return None


def usage(body: list[ast.Stmt], names: Names) -> Usage:
    """What the statements of a workflow or cell body spend (see the module's docstring)."""
    return _block(body, names)


def _block(body: list[ast.Stmt], names: Names) -> Usage:
    total, certain = NOTHING, True
    for s in body:
        u = _stmt(s, names)
        total = total + (u if certain else u.maybe())
        if certain and _leaves(s, names):
            certain = False
    return total


def _stmt(s: ast.Stmt, names: Names) -> Usage:
    count = _STATEMENTS.get(type(s))
    return count(s, names) if count is not None else _UNKNOWN_STATEMENT


def _value_stmt(s: ast.Let | ast.Assign | ast.Print | ast.Log | ast.Emit | ast.Return, names: Names) -> Usage:
    return ONE_STEP + _expr(s.value, names)


def _publish(s: ast.Publish, names: Names) -> Usage:
    return ONE_STEP + _expr(s.name, names) + _expr(s.value, names)


def _verify(s: ast.Verify, names: Names) -> Usage:
    return ONE_STEP + _expr(s.cond, names) + (_expr(s.message, names).maybe() if s.message else NOTHING)


def _if(s: ast.If, names: Names) -> Usage:
    other = _if(s.other, names) if type(s.other) is ast.If else (
        _block(s.other.body, names) if s.other is not None else NOTHING)  # type: ignore[union-attr]
    return ONE_STEP + _expr(s.cond, names) + _block(s.then.body, names).either(other)


def _for(s: ast.For, names: Names) -> Usage:
    n = static_length(s.iterable, names)
    each = _block(s.body.body, names)
    if n is None:
        return ONE_STEP + _expr(s.iterable, names) + _repeated(each)
    if any(_leaves(b, names) for b in s.body.body):
        each = each.maybe()
    return ONE_STEP + _expr(s.iterable, names) + each.times(n)


def _while(s: ast.While, names: Names) -> Usage:
    each = _block(s.body.body, names)
    return Usage(steps=2) + _repeated(each + _expr(s.cond, names))


def _body_stmt(s: ast.Stage | ast.Async, names: Names) -> Usage:
    return ONE_STEP + _block(s.body.body, names)


def _pipeline(s: ast.Pipeline, names: Names) -> Usage:
    inner = NOTHING
    for stage in s.stages:
        inner = inner + _stmt(stage, names)
    return ONE_STEP + inner


def _try(s: ast.Try, names: Names) -> Usage:
    caught = NOTHING
    for c in s.catches:
        caught = caught.either(_block(c.body.body, names).maybe())
    return ONE_STEP + (_block(s.body.body, names) + caught).maybe()


# A statement class -> what one of its kind spends; the classes are final (ast.py
# subclasses only `Node`, `Stmt`, `Expr`, `Decl`, `TypeExpr` and `WorkflowDecl`).
_STATEMENTS: dict[type, Callable[[Any, Names], Usage]] = {
    ast.Limits: lambda s, names: NOTHING,
    ast.Break: lambda s, names: ONE_STEP, ast.Continue: lambda s, names: ONE_STEP, ast.Await: lambda s, names: ONE_STEP,
    ast.Let: _value_stmt, ast.Assign: _value_stmt, ast.Print: _value_stmt, ast.Log: _value_stmt,
    ast.Emit: _value_stmt, ast.Return: _value_stmt,
    ast.ExprStmt: lambda s, names: ONE_STEP + _expr(s.expr, names),
    ast.Publish: _publish, ast.Verify: _verify, ast.If: _if, ast.For: _for, ast.While: _while,
    ast.Stage: _body_stmt, ast.Async: _body_stmt, ast.Pipeline: _pipeline, ast.Try: _try,
}


def _may_leave(s: ast.Stmt) -> bool:
    """Whether the statements after `s` in its block may not run (it may return, break or
    continue; a nested `for`/`while` may break only itself, but counting it is safe).

    Only statements are searched: an expression holds statements only inside a lambda,
    whose `return` leaves the lambda only."""
    return any(isinstance(n, _EXITS) for n in _nodes(s, statements_only=True))


_EXITS = (ast.Return, ast.Break, ast.Continue)


def _leaves(s: ast.Stmt, names: Names) -> bool:
    leaving = names.leaves.get(id(s))
    return leaving if leaving is not None else _may_leave(s)


def _builtin(e: ast.Call, names: Names) -> str | None:
    callee = e.callee
    if isinstance(callee, ast.Name) and callee.name in BUILTINS and callee.name not in names.local \
            and callee.name not in names.kinds:
        return callee.name
    return None


def _expr(e: ast.Expr | None, names: Names) -> Usage:
    kind = type(e)
    if kind in _INERT:
        return NOTHING
    if kind is ast.Call:
        return _call(e, names)  # type: ignore[arg-type]
    count = _EXPRESSIONS.get(kind)
    return count(e, names) if count is not None else UNBOUNDED


# Expressions that spend nothing, by exact type (the tree's most numerous).
_INERT = frozenset({type(None), ast.IntLit, ast.NumLit, ast.DurationLit, ast.BoolLit, ast.NullLit, ast.Name, ast.It})


def _all(items: Iterable[ast.Expr], names: Names) -> Usage:
    total = NOTHING
    for item in items:
        total = total + _expr(item, names)
    return total


def _string(e: ast.StrLit, names: Names) -> Usage:
    total = NOTHING
    for p in e.parts:
        if type(p) is not str:
            total = total + _expr(p, names)  # type: ignore[arg-type]
    return total


def _object(e: ast.ObjectLit, names: Names) -> Usage:
    total = NOTHING
    for entry in e.entries:
        total = total + _expr(entry.value, names)
    return total


def _binary(e: ast.Binary, names: Names) -> Usage:
    right = _expr(e.right, names)
    return _expr(e.left, names) + (right.maybe() if e.op in ("and", "or", "??") else right)


def _parallel(e: ast.Parallel, names: Names) -> Usage:
    total = NOTHING
    for b in e.branches:
        total = total + _expr(b.value, names)
    return total


# An expression class -> what one of its kind spends (besides `_INERT` and `Call`);
# a class missing here may spend anything (`UNBOUNDED`).
_EXPRESSIONS: dict[type, Callable[[Any, Names], Usage]] = {
    ast.StrLit: _string,
    ast.ArrayLit: lambda e, names: _all(e.items, names),
    ast.ObjectLit: _object,
    ast.Unary: lambda e, names: _expr(e.operand, names),
    ast.Binary: _binary,
    ast.Ternary: lambda e, names: _expr(e.cond, names) + _expr(e.then, names).either(_expr(e.other, names)),
    ast.Member: lambda e, names: _expr(e.obj, names),
    ast.Index: lambda e, names: _expr(e.obj, names) + _expr(e.index, names),
    ast.Slice: lambda e, names: _expr(e.obj, names) + _expr(e.lower, names) + _expr(e.upper, names),
    ast.Project: lambda e, names: _expr(e.obj, names),
    ast.Pick: lambda e, names: _expr(e.obj, names),
    ast.Expect: lambda e, names: _expr(e.call, names),
    ast.Parallel: _parallel,
    ast.Approve: lambda e, names: ONE_STEP, ast.Ask: lambda e, names: ONE_STEP, ast.Run: lambda e, names: ONE_STEP,
}


def _repeated(each: Usage) -> Usage:
    """A part run a number of times the text does not say (zero included)."""
    return Usage(0, 0 if each.calls_max == 0 else None, 0)


def _call(e: ast.Call, names: Names) -> Usage:
    args, lam = NOTHING, None
    for a in e.args:
        value = a.value
        kind = type(value)
        if kind is ast.Lambda:
            lam = lam or value
        elif kind is not ast.TypeArg:
            args = args + _expr(value, names)
    callee = e.callee
    if type(callee) is ast.Name:
        name = callee.name
        if name in names.local:
            return args + UNBOUNDED
        declared = names.kinds.get(name)
        if declared is None and name in BUILTINS:
            if lam is None:
                return args + ONE_STEP
            n = static_length(e.args[0].value, names) if name in _EVERY_ITEM else None
            each = _lambda(lam, names)  # type: ignore[arg-type]
            if n is None:
                return args + ONE_STEP + _repeated(each)
            return args + ONE_STEP + each.times(n)
        if declared == "agent":
            return args + _AGENT_CALL
        if declared in ("workflow", "panel", "fn"):
            return args + _BODY_CALL
        if declared == "tool":
            return args
    elif type(callee) is ast.Member and type(callee.obj) is ast.Name \
            and names.kinds.get(callee.obj.name) == "team" and callee.obj.name not in names.local:
        return args + _TEAM_CALL
    return args + UNBOUNDED


_AGENT_CALL = Usage(1, 1, 1)
_BODY_CALL = Usage(0, None, 1)  # a workflow, panel or function: its own body's count is not added
_TEAM_CALL = Usage(1, None, 1)


def _lambda(lam: ast.Lambda, names: Names) -> Usage:
    if isinstance(lam.body, ast.Block):
        return ONE_STEP + _block(lam.body.body, names)
    return ONE_STEP + _expr(lam.body, names)


def local_names(node: object) -> frozenset[str]:
    """Every name a workflow or cell binds itself (parameters, `let`/`var`, loop and lambda
    variables, `catch` bindings, tasks), wherever in it."""
    found: set[str] = set()
    for n in _nodes(node):
        if isinstance(n, _BINDERS):
            match n:
                case ast.Let() | ast.Async():
                    found.add(n.name.name)
                case ast.Param():
                    found.add(n.name.name)
                case ast.For():
                    found.update(i.name for i in (n.var, n.index) if i is not None)
                case ast.Lambda():
                    found.update(p.name for p in n.params)
                case ast.Catch() if n.binding is not None:
                    found.add(n.binding.name)
    return frozenset(found)


def _nodes(root: object, *, statements_only: bool = False) -> Iterator[ast.Node]:
    """Every node at or below `root`, through lists too, in one flat walk; with
    `statements_only`, nothing below an expression."""
    stack: list[object] = [root]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            stack.extend(n)
            continue
        if not isinstance(n, ast.Node):
            continue
        yield n
        if statements_only and isinstance(n, ast.Expr):
            continue
        get, many = _CHILDREN.get(type(n)) or _child_fields(type(n))
        if get is None:
            continue
        if many:
            stack.extend(get(n))
        else:
            stack.append(get(n))


_BINDERS = (ast.Let, ast.Async, ast.Param, ast.For, ast.Lambda, ast.Catch)

# A node class -> how to read the fields that may hold a node or a list: an `attrgetter`
# (None: no such field) and whether it returns a tuple of them (two or more fields).
_CHILDREN: dict[type, tuple[Callable[[Any], Any] | None, bool]] = {}
# Field types that never hold a node: the tree's annotations as written in ast.py, and the
# classes a compiled node's dataclass fields name instead (a union there is `type`: read).
_SCALAR_FIELDS: frozenset[object] = frozenset({"Span", "bool", "float", "int", "str", "str | None",
                                               "str | int | float | bool | None", Span, bool, float, int, str})


def _child_fields(kind: type) -> tuple[Callable[[Any], Any] | None, bool]:
    names = [f.name for f in dataclasses.fields(kind) if f.type not in _SCALAR_FIELDS]
    fields = (attrgetter(*names) if names else None, len(names) > 1)
    _CHILDREN[kind] = fields
    return fields

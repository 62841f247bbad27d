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

# Builtins that call their lambda once per item, whatever the items are.
_EVERY_ITEM = frozenset({"map", "filter", "count", "parallelMap", "reduce", "flatMap"})


@dataclass(frozen=True)
class Usage:
    """Agent calls at least / at most (None: not bounded by the text), steps at least."""

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
    step = ONE_STEP
    match s:
        case ast.Limits():
            return NOTHING
        case ast.Break() | ast.Continue() | ast.Await():
            return step
        case ast.Let() | ast.Assign() | ast.Print() | ast.Log():
            return step + _expr(s.value, names)
        case ast.ExprStmt():
            return step + _expr(s.expr, names)
        case ast.Return():
            return step + (_expr(s.value, names) if s.value is not None else NOTHING)
        case ast.Emit():
            return step + _expr(s.value, names)
        case ast.Publish():
            return step + _expr(s.name, names) + _expr(s.value, names)
        case ast.Verify():
            return step + _expr(s.cond, names) + (_expr(s.message, names).maybe() if s.message else NOTHING)
        case ast.If():
            other = _stmt(s.other, names) if isinstance(s.other, ast.If) else (
                _block(s.other.body, names) if s.other is not None else NOTHING)
            return step + _expr(s.cond, names) + _block(s.then.body, names).either(other)
        case ast.For():
            n = static_length(s.iterable, names)
            each = _block(s.body.body, names)
            if n is None:
                return step + _expr(s.iterable, names) + _repeated(each)
            if any(_leaves(b, names) for b in s.body.body):
                each = each.maybe()
            return step + _expr(s.iterable, names) + each.times(n)
        case ast.While():
            each = _block(s.body.body, names)
            return Usage(steps=2) + _repeated(each + _expr(s.cond, names))
        case ast.Stage():
            return step + _block(s.body.body, names)
        case ast.Pipeline():
            inner = NOTHING
            for stage in s.stages:
                inner = inner + _stmt(stage, names)
            return step + inner
        case ast.Async():
            return step + _block(s.body.body, names)
        case ast.Try():
            caught = NOTHING
            for c in s.catches:
                caught = caught.either(_block(c.body.body, names).maybe())
            return step + (_block(s.body.body, names) + caught).maybe()
    return step + UNBOUNDED


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
    match e:
        case None | ast.IntLit() | ast.NumLit() | ast.DurationLit() | ast.BoolLit() | ast.NullLit() | ast.Name() | ast.It():
            return NOTHING
        case ast.StrLit():
            return _all((p for p in e.parts if isinstance(p, ast.Expr)), names)
        case ast.ArrayLit():
            return _all(e.items, names)
        case ast.ObjectLit():
            return _all((entry.value for entry in e.entries), names)
        case ast.Unary():
            return _expr(e.operand, names)
        case ast.Binary():
            right = _expr(e.right, names)
            return _expr(e.left, names) + (right.maybe() if e.op in ("and", "or", "??") else right)
        case ast.Ternary():
            return _expr(e.cond, names) + _expr(e.then, names).either(_expr(e.other, names))
        case ast.Member():
            return _expr(e.obj, names)
        case ast.Index():
            return _expr(e.obj, names) + _expr(e.index, names)
        case ast.Slice():
            return _expr(e.obj, names) + _expr(e.lower, names) + _expr(e.upper, names)
        case ast.Project() | ast.Pick():
            return _expr(e.obj, names)
        case ast.Expect():
            return _expr(e.call, names)
        case ast.Parallel():
            return _all((b.value for b in e.branches), names)
        case ast.Approve() | ast.Ask() | ast.Run():
            return ONE_STEP
        case ast.Call():
            return _call(e, names)
    return UNBOUNDED


# Expressions that spend nothing, by exact type (the tree's most numerous).
_INERT = frozenset({type(None), ast.IntLit, ast.NumLit, ast.DurationLit, ast.BoolLit, ast.NullLit, ast.Name, ast.It})


def _all(items: Iterable[ast.Expr], names: Names) -> Usage:
    total = NOTHING
    for item in items:
        total = total + _expr(item, names)
    return total


def _repeated(each: Usage) -> Usage:
    """A part run a number of times the text does not say (zero included)."""
    return Usage(0, 0 if each.calls_max == 0 else None, 0)


def _call(e: ast.Call, names: Names) -> Usage:
    args = NOTHING
    for a in e.args:
        if not isinstance(a.value, ast.Lambda | ast.TypeArg):
            args = args + _expr(a.value, names)
    callee = e.callee
    builtin = _builtin(e, names)
    if builtin is not None:
        lam = next((a.value for a in e.args if isinstance(a.value, ast.Lambda)), None)
        if lam is None:
            return args + ONE_STEP
        n = static_length(e.args[0].value, names) if e.args and builtin in _EVERY_ITEM else None
        each = _lambda(lam, names)
        if n is None:
            return args + ONE_STEP + _repeated(each)
        return args + ONE_STEP + each.times(n)
    if isinstance(callee, ast.Name) and callee.name not in names.local:
        kind = names.kinds.get(callee.name)
        if kind == "agent":
            return args + Usage(1, 1, 1)
        if kind in ("workflow", "panel", "fn"):
            return args + Usage(0, None, 1)
        if kind == "tool":
            return args
    if isinstance(callee, ast.Member) and isinstance(callee.obj, ast.Name) \
            and names.kinds.get(callee.obj.name) == "team" and callee.obj.name not in names.local:
        return args + Usage(1, None, 1)
    return args + UNBOUNDED


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
# Field types that never hold a node (the tree's annotations, as written in ast.py).
_SCALAR_FIELDS = frozenset({"Span", "bool", "float", "int", "str", "str | None", "str | int | float | bool | None"})


def _child_fields(kind: type) -> tuple[Callable[[Any], Any] | None, bool]:
    names = [f.name for f in dataclasses.fields(kind) if f.type not in _SCALAR_FIELDS]
    fields = (attrgetter(*names) if names else None, len(names) > 1)
    _CHILDREN[kind] = fields
    return fields

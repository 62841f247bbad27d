"""The verifier: checks a generated module against an allow-list before it runs.

Generated code may only define async functions, bind generated names, use JSON
literals, control flow, `+ - *` and single comparisons (written inline for ints), and
call the runtime ABI as `rt.<name>(…)`. Anything else —
an import, an attribute other than an ABI name on `rt`, a subscript, a name outside
the generated name patterns, a dunder — means the code generator (or someone
handing the sandbox a module) went wrong, and nothing is sent to the sandbox. The
sandbox has its own walls (runtime.md §2); this is the first of them.
"""

from __future__ import annotations

import ast as py
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from flow_kernel.lang.builtins import BUILTINS

ABI_VERSION = 1

# Every name generated code may reach on `rt` (flowbox/runtime.py implements them; a
# test checks the two lists agree).
ABI_NAMES = frozenset({
    "start", "workflow", "call", "session", "bind", "step", "loop", "cond", "iterate", "each",
    "stage", "pipeline", "verify", "require", "emit", "print", "log", "publish",
    "agent", "team", "panel", "parallel", "parallel_map", "task", "await_task", "task_field",
    "approve", "ask", "run", "now", "uuid", "interp", "fill_prompt",
    "Error", "catches", "error_value",
    "neg", "not_", "add", "sub", "mul", "div", "mod", "eq", "ne", "lt", "le", "gt", "ge", "in_",
    "index", "slice_", "member", "member_opt", "safe_member", "project", "pick",
    *(f"fn_{name}" for name in BUILTINS if name not in ("now", "uuid", "parallelMap")),
})

# Matched whole (`fullmatch`): `$` alone would let a name end in a newline, and the
# verifier reads the tree the code generator built, not one parsed from the text.
NAME = re.compile(r"^(?:rt|args|main|c_main|[vwlptkxeqd]_[A-Za-z0-9_]*)$")
FUNCTION = re.compile(r"^(?:main|c_main|[wlptx]_[0-9]+)$")
CALLABLE = re.compile(r"^t_[0-9]+$")  # an `async` body is called once, to make its coroutine

class VerificationError(Exception):
    """The generated module uses something outside the allow-list."""

    def __init__(self, message: str, node: py.AST | None = None) -> None:
        where = f" (line {getattr(node, 'lineno', '?')})" if node is not None else ""
        super().__init__(message + where)
        self.node = node


Add = Callable[[py.AST], None]
More = Callable[[list[Any]], None]


def verify(tree: py.Module) -> None:
    """Raise `VerificationError` unless every node of `tree` is allowed."""
    Verification(tree).finish()


class Verification:
    """`verify` in steps: `function(top)` checks one of the module's top-level functions
    (each at most once), `finish()` the ones not checked yet and that there is a `main`.
    The compiler checks each function right after writing it, while its nodes are still
    in the CPU's caches: a 5,000-line module's tree is ~25 MB, and verified after the
    whole module was written, every node was read cold again (~30 ms of ~110)."""

    def __init__(self, tree: py.Module) -> None:
        for top in tree.body:
            if not isinstance(top, py.AsyncFunctionDef):
                raise VerificationError(f"only async function definitions may stand at module level, found {type(top).__name__}", top)
        if tree.__class__ is not py.Module:
            raise VerificationError(f"`{tree.__class__.__name__}` is not allowed in generated code", tree)
        _walk(list(tree.type_ignores))  # the `Module` rule's other field (nothing allowed may stand there)
        self.tree = tree
        self.pending = {id(top): top for top in tree.body}

    def function(self, top: py.stmt) -> None:
        node = self.pending.pop(id(top), None)
        if node is not None:
            _walk([node])

    def finish(self) -> None:
        _walk(list(self.pending.values()))
        self.pending.clear()
        if not any(isinstance(n, py.AsyncFunctionDef) and n.name == "main" for n in self.tree.body):
            raise VerificationError("the module defines no `main`")


def _walk(nodes: list[Any]) -> None:
    """Check `nodes` and every node inside them."""
    add, more = nodes.append, nodes.extend
    rules = _RULES
    for node in nodes:  # breadth first, like ast.walk; the list grows as the rules add
        rule = rules.get(node.__class__)
        if rule is None:
            # Exact classes (a parsed tree has no others): a subclass of an allowed node is not one.
            raise VerificationError(f"`{node.__class__.__name__}` is not allowed in generated code", node)
        rule(node, add, more)


@lru_cache(maxsize=4096)
def _generated_name(name: str) -> bool:
    # The same few thousand names recur all over a module: a cache hit is cheaper than the match.
    return NAME.fullmatch(name) is not None


def _leaf(node: py.AST, add: Add, more: More) -> None:
    pass  # no fields, or none that hold a node


def _module(node: py.Module, add: Add, more: More) -> None:
    more(node.body)
    more(node.type_ignores)


def _function(node: py.AsyncFunctionDef, add: Add, more: More) -> None:
    if not FUNCTION.fullmatch(node.name) and not CALLABLE.fullmatch(node.name):
        raise VerificationError(f"function name `{node.name}` is not a generated name", node)
    a = node.args
    if a.__class__ is not py.arguments or node.decorator_list or node.returns is not None or a.vararg or a.kwarg \
            or a.kwonlyargs or a.defaults or a.posonlyargs or a.kw_defaults or getattr(node, "type_params", None):
        raise VerificationError("generated functions take plain positional parameters only", node)
    add(a)
    more(node.body)


def _arguments(node: py.arguments, add: Add, more: More) -> None:
    more(node.posonlyargs)
    more(node.args)
    more(node.kwonlyargs)
    more(node.kw_defaults)
    more(node.defaults)
    if node.vararg is not None:
        add(node.vararg)
    if node.kwarg is not None:
        add(node.kwarg)


def _arg(node: py.arg, add: Add, more: More) -> None:
    if not _generated_name(node.arg) or node.arg in ("main", "c_main") or node.annotation is not None:
        raise VerificationError(f"parameter `{node.arg}` is not a generated name", node)


def _value(node: py.Return | py.Expr | py.Await, add: Add, more: More) -> None:
    if node.value is not None:
        add(node.value)


def _assign(node: py.Assign, add: Add, more: More) -> None:
    more(node.targets)
    add(node.value)


def _if_while(node: py.If | py.While, add: Add, more: More) -> None:
    add(node.test)
    more(node.body)
    more(node.orelse)


def _for(node: py.For, add: Add, more: More) -> None:
    add(node.target)
    add(node.iter)
    more(node.body)
    more(node.orelse)


def _with(node: py.With, add: Add, more: More) -> None:
    for item in node.items:
        if item.__class__ is not py.withitem:
            raise VerificationError("a `with` holds `withitem` nodes only", node)
    more(node.items)  # what an item may hold: the `withitem` rule
    more(node.body)


def _withitem(node: py.withitem, add: Add, more: More) -> None:
    if node.optional_vars is not None:  # `with rt.stage(…) as v_x`: nothing generated binds a context
        raise VerificationError("`with … as` is not generated", node)
    add(node.context_expr)


def _try(node: py.Try, add: Add, more: More) -> None:
    more(node.body)
    more(node.handlers)
    more(node.orelse)
    more(node.finalbody)


def _handler(node: py.ExceptHandler, add: Add, more: More) -> None:
    t = node.type
    if not (isinstance(t, py.Attribute) and isinstance(t.value, py.Name) and t.value.id == "rt" and t.attr == "Error"):
        raise VerificationError("only `except rt.Error` is allowed", node)
    add(t)
    more(node.body)


def _raise(node: py.Raise, add: Add, more: More) -> None:
    if node.exc is not None or node.cause is not None:
        raise VerificationError("only a bare `raise` (re-raising a caught error) is allowed", node)


def _name(node: py.Name, add: Add, more: More) -> None:
    if not _generated_name(node.id):
        raise VerificationError(f"name `{node.id}` is not a generated name", node)
    if node.id == "rt" and isinstance(node.ctx, py.Store):
        raise VerificationError("`rt` cannot be rebound", node)


def _attribute(node: py.Attribute, add: Add, more: More) -> None:
    if not (isinstance(node.value, py.Name) and node.value.id == "rt" and node.attr in ABI_NAMES):
        raise VerificationError(f"attribute `{node.attr}` is not part of the runtime ABI", node)
    if not isinstance(node.ctx, py.Load):
        raise VerificationError("runtime attributes cannot be assigned", node)
    add(node.value)


_Attribute, _Name, _Load, _Constant = py.Attribute, py.Name, py.Load, py.Constant
# A constant's value of one of these exact classes passes the `Constant` rule.
PLAIN_CONSTANTS = frozenset({str, int, float, bool, type(None)})


def _call(node: py.Call, add: Add, more: More) -> None:
    if node.keywords:
        raise VerificationError("keyword arguments are not used by generated code", node)
    func = node.func
    if func.__class__ is _Attribute:
        value = func.value
        # `rt.<ABI name>` made of exact, loading nodes passes the `Attribute` and `Name`
        # rules: checked here, it need not go through the loop twice more.
        if not (value.__class__ is _Name and value.id == "rt" and func.attr in ABI_NAMES
                and func.ctx.__class__ is _Load and value.ctx.__class__ is _Load):
            add(func)
    elif isinstance(func, py.Attribute):
        add(func)  # (a subclass: the loop refuses it)
    elif isinstance(func, py.Name) and CALLABLE.fullmatch(func.id):
        add(func)
    else:
        raise VerificationError("only runtime functions and `async` bodies may be called", node)
    _operands(node.args, add)  # (a `Starred` has no rule: refused)


def _operands(nodes: list[Any], add: Add) -> None:
    """`more(nodes)` for a call's arguments, a dict's keys and values, a list's elements:
    most of them are names and constants, and one that plainly passes its rule (an exact
    `Name` loading a generated name, an exact `Constant` of a plain JSON class) is
    accepted here, without a turn of the loop; anything else goes to its rule. What this
    accepts, the rules accept (tests/security/test_verifier_fuzz.py compares the two)."""
    for a in nodes:
        cls = a.__class__
        if cls is _Name:
            if a.ctx.__class__ is _Load and _generated_name(a.id):
                continue
        elif cls is _Constant and a.value.__class__ in PLAIN_CONSTANTS:
            continue
        add(a)


def _constant(node: py.Constant, add: Add, more: More) -> None:
    value = node.value
    if not (value is None or isinstance(value, (bool, int, float, str))):
        raise VerificationError(f"constant of type {type(value).__name__} is not allowed", node)


def _elements(node: py.List | py.Tuple, add: Add, more: More) -> None:
    _operands(node.elts, add)


def _dict(node: py.Dict, add: Add, more: More) -> None:
    if None in node.keys:  # `{**x}`: codegen writes every key (found by the verifier fuzz)
        raise VerificationError("dict unpacking is not generated", node)
    _operands(node.keys, add)
    _operands(node.values, add)


def _bool_op(node: py.BoolOp, add: Add, more: More) -> None:
    add(node.op)
    more(node.values)


def _if_exp(node: py.IfExp, add: Add, more: More) -> None:
    add(node.test)
    add(node.body)
    add(node.orelse)


# Operators generated code writes inline for two ints (exact_ints.py). On any other values
# they reach nothing the runtime's own operators do not: no attribute, no call of a value;
# `**`, `<<`, `/`, `//`, `%` (uninterruptible huge results, or Python's errors instead of
# Flow's) stay refused.
_INLINE_ARITHMETIC = (py.Add, py.Sub, py.Mult)
_INLINE_COMPARISONS = (py.Eq, py.NotEq, py.Lt, py.LtE, py.Gt, py.GtE)


def _compare(node: py.Compare, add: Add, more: More) -> None:
    if len(node.ops) != 1:
        raise VerificationError("chained comparisons are not generated", node)
    op, right = node.ops[0], node.comparators[0]
    is_not_none = op.__class__ is py.IsNot and right.__class__ is py.Constant and right.value is None
    if not (is_not_none or op.__class__ in _INLINE_COMPARISONS):
        raise VerificationError("only `is not None` and == != < <= > >= comparisons are generated", node)
    add(node.left)
    more(node.ops)
    more(node.comparators)


def _binop(node: py.BinOp, add: Add, more: More) -> None:
    if node.op.__class__ not in _INLINE_ARITHMETIC:
        raise VerificationError(f"operator `{node.op.__class__.__name__}` is not generated", node)
    add(node.left)
    add(node.op)
    add(node.right)


def _named(node: py.NamedExpr, add: Add, more: More) -> None:
    if not (isinstance(node.target, py.Name) and node.target.id.startswith("q_")):
        raise VerificationError("only temporaries may be bound by `:=`", node)
    add(node.target)
    add(node.value)


def _unary(node: py.UnaryOp, add: Add, more: More) -> None:
    add(node.op)
    add(node.operand)


# One rule per allowed class (exactly the classes generated code may use).
_RULES: dict[type[py.AST], Callable[[Any, Add, More], None]] = {
    py.Module: _module, py.AsyncFunctionDef: _function, py.arguments: _arguments, py.arg: _arg,
    py.Return: _value, py.Assign: _assign, py.Expr: _value, py.If: _if_while, py.For: _for, py.While: _if_while,
    py.Break: _leaf, py.Continue: _leaf, py.With: _with, py.withitem: _withitem, py.Try: _try,
    py.ExceptHandler: _handler, py.Raise: _raise, py.Pass: _leaf,
    py.Name: _name, py.Load: _leaf, py.Store: _leaf, py.Constant: _constant, py.List: _elements,
    py.Tuple: _elements, py.Dict: _dict, py.Call: _call, py.Attribute: _attribute, py.Await: _value,
    py.BoolOp: _bool_op, py.And: _leaf, py.Or: _leaf, py.IfExp: _if_exp, py.Compare: _compare,
    py.IsNot: _leaf, py.NamedExpr: _named, py.UnaryOp: _unary, py.USub: _leaf,
    py.BinOp: _binop, py.Add: _leaf, py.Sub: _leaf, py.Mult: _leaf,
    py.Eq: _leaf, py.NotEq: _leaf, py.Lt: _leaf, py.LtE: _leaf, py.Gt: _leaf, py.GtE: _leaf,
}
ALLOWED_NODES: tuple[type[py.AST], ...] = tuple(_RULES)

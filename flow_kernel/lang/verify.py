"""The verifier: checks a generated module against an allow-list before it runs.

Generated code may only define async functions, bind generated names, use JSON
literals, control flow, and call the runtime ABI as `rt.<name>(…)`. Anything else —
an import, an attribute other than an ABI name on `rt`, a subscript, a name outside
the generated name patterns, a dunder — means the code generator (or someone
handing the sandbox a module) went wrong, and nothing is sent to the sandbox. The
sandbox has its own walls (runtime.md §2); this is the first of them.
"""

from __future__ import annotations

import ast as py
import re
from collections.abc import Callable
from typing import Any

from flow_kernel.lang.builtins import BUILTINS
from flow_kernel.lang.pytree import tree_nodes

ABI_VERSION = 1

# Every name generated code may reach on `rt` (flowbox/runtime.py implements them; a
# test checks the two lists agree).
ABI_NAMES = frozenset({
    "start", "workflow", "session", "bind", "step", "loop", "cond", "iterate",
    "stage", "pipeline", "verify", "require", "emit", "print", "log", "publish",
    "agent", "team", "panel", "parallel", "parallel_map", "task", "await_task", "task_field",
    "approve", "ask", "run", "now", "uuid", "interp",
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

ALLOWED_NODES: tuple[type[py.AST], ...] = (
    py.Module, py.AsyncFunctionDef, py.arguments, py.arg, py.Return, py.Assign, py.Expr, py.If, py.For,
    py.While, py.Break, py.Continue, py.With, py.withitem, py.Try, py.ExceptHandler, py.Raise, py.Pass,
    py.Name, py.Load, py.Store, py.Constant, py.List, py.Tuple, py.Dict, py.Call, py.Attribute, py.Await,
    py.BoolOp, py.And, py.Or, py.IfExp, py.Compare, py.IsNot, py.NamedExpr, py.UnaryOp, py.USub,
)
ALLOWED_TYPES = frozenset(ALLOWED_NODES)


class VerificationError(Exception):
    """The generated module uses something outside the allow-list."""

    def __init__(self, message: str, node: py.AST | None = None) -> None:
        where = f" (line {getattr(node, 'lineno', '?')})" if node is not None else ""
        super().__init__(message + where)
        self.node = node


def verify(tree: py.Module, nodes: list[py.AST] | None = None) -> None:
    """Raise `VerificationError` unless every node of `tree` is allowed. `nodes`: all of
    the tree's nodes when the caller has them already (`CompiledPython.nodes`)."""
    for top in tree.body:
        if not isinstance(top, py.AsyncFunctionDef):
            raise VerificationError(f"only async function definitions may stand at module level, found {type(top).__name__}", top)
    for node in tree_nodes(tree) if nodes is None else nodes:
        _check_node(node)
    if not any(isinstance(n, py.AsyncFunctionDef) and n.name == "main" for n in tree.body):
        raise VerificationError("the module defines no `main`")


def _check_node(node: py.AST) -> None:
    # Exact classes (a parsed tree has no others): a subclass of an allowed node is not
    # one, and a dict lookup is much cheaper than a chain of isinstance on 100,000 nodes.
    cls = node.__class__
    if cls not in ALLOWED_TYPES:
        raise VerificationError(f"`{cls.__name__}` is not allowed in generated code", node)
    check = _CHECKS.get(cls)
    if check is not None:
        check(node)


def _name(node: py.Name) -> None:
    if not NAME.fullmatch(node.id):
        raise VerificationError(f"name `{node.id}` is not a generated name", node)
    if node.id == "rt" and isinstance(node.ctx, py.Store):
        raise VerificationError("`rt` cannot be rebound", node)


def _attribute(node: py.Attribute) -> None:
    if not (isinstance(node.value, py.Name) and node.value.id == "rt" and node.attr in ABI_NAMES):
        raise VerificationError(f"attribute `{node.attr}` is not part of the runtime ABI", node)
    if not isinstance(node.ctx, py.Load):
        raise VerificationError("runtime attributes cannot be assigned", node)


def _call(node: py.Call) -> None:
    if node.keywords:
        raise VerificationError("keyword arguments are not used by generated code", node)
    func = node.func
    if not (isinstance(func, py.Attribute) or (isinstance(func, py.Name) and CALLABLE.fullmatch(func.id))):
        raise VerificationError("only runtime functions and `async` bodies may be called", node)
    if any(isinstance(a, py.Starred) for a in node.args):
        raise VerificationError("starred arguments are not allowed", node)


def _function(node: py.AsyncFunctionDef) -> None:
    if not FUNCTION.fullmatch(node.name) and not CALLABLE.fullmatch(node.name):
        raise VerificationError(f"function name `{node.name}` is not a generated name", node)
    if node.decorator_list or node.returns is not None or node.args.vararg or node.args.kwarg \
            or node.args.kwonlyargs or node.args.defaults or node.args.posonlyargs or node.args.kw_defaults:
        raise VerificationError("generated functions take plain positional parameters only", node)


def _arg(node: py.arg) -> None:
    if not NAME.fullmatch(node.arg) or node.arg in ("main", "c_main") or node.annotation is not None:
        raise VerificationError(f"parameter `{node.arg}` is not a generated name", node)


def _constant(node: py.Constant) -> None:
    if not (node.value is None or isinstance(node.value, (bool, int, float, str))):
        raise VerificationError(f"constant of type {type(node.value).__name__} is not allowed", node)


def _compare(node: py.Compare) -> None:
    if not (len(node.ops) == 1 and isinstance(node.ops[0], py.IsNot)
            and isinstance(node.comparators[0], py.Constant) and node.comparators[0].value is None):
        raise VerificationError("only `is not None` comparisons are generated", node)


def _raise(node: py.Raise) -> None:
    if node.exc is not None or node.cause is not None:
        raise VerificationError("only a bare `raise` (re-raising a caught error) is allowed", node)


def _handler(node: py.ExceptHandler) -> None:
    t = node.type
    if not (isinstance(t, py.Attribute) and isinstance(t.value, py.Name) and t.value.id == "rt" and t.attr == "Error"):
        raise VerificationError("only `except rt.Error` is allowed", node)


def _with(node: py.With) -> None:
    for item in node.items:
        if item.optional_vars is not None:
            raise VerificationError("`with … as` is not generated", node)


def _dict(node: py.Dict) -> None:
    if any(key is None for key in node.keys):  # `{**x}`: codegen writes every key (found by the verifier fuzz)
        raise VerificationError("dict unpacking is not generated", node)


def _named(node: py.NamedExpr) -> None:
    if not (isinstance(node.target, py.Name) and node.target.id.startswith("q_")):
        raise VerificationError("only temporaries may be bound by `:=`", node)


_CHECKS: dict[type[py.AST], Callable[[Any], None]] = {
    py.Name: _name, py.Attribute: _attribute, py.Call: _call, py.AsyncFunctionDef: _function, py.arg: _arg,
    py.Constant: _constant, py.Compare: _compare, py.Raise: _raise, py.ExceptHandler: _handler, py.With: _with,
    py.NamedExpr: _named, py.Dict: _dict,
}

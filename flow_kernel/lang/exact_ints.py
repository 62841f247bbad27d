"""Integer arithmetic and comparisons written inline in the generated module.

Generated code calls the runtime for every operator (`rt.add(a, b)`), because a value
may be of any JSON type at run time and the runtime's errors name the types. Where
both operands can only be Python ints, `rt.add/sub/mul` and `rt.lt/le/gt/ge/eq/ne`
return exactly `a + b`, …, `a == b` (flowbox/operators.py's int fast path), so the
call becomes the operator: the same value, no error possible, one call less — a call
costs several times more in the sandbox's WebAssembly CPython than the operator.

"Can only be an int" is decided on the generated code, not on static types (`any` lets
anything into an `int`):
- an int constant (never a bool), `rt.fn_len(…)`, `rt.mod(a, b)` and `+ - *` of two
  such operands;
- a name every binding of which, anywhere in the module, is one of those, or the index
  of a `for`, or the item of a `for` over `rt.iterate(rt.fn_range(…))` (a list of ints);
  the greatest fixpoint (`var d = 2` … `d = d + 1` is an int). A name that is a
  parameter anywhere, or bound anywhere the generator did not report the value
  (`CodeGenerator.store` counts every binding), is not.
Pooling a name's bindings over the whole module is coarser than per function but
sound for closures too: a lambda reading `v_d` reads one of those bindings.

The generator reports as it goes (`IntTracker`), so nothing walks the module again;
an operator call is turned into its operator node in place (same object, so its Flow
origin, its parent and the source map stay as they are). Evaluation order is
unchanged: operands left to right, then the operation.
"""

from __future__ import annotations

import ast as py
from typing import Any

_ARITHMETIC: dict[str, type[py.operator]] = {"add": py.Add, "sub": py.Sub, "mul": py.Mult}
_COMPARISONS: dict[str, type[py.cmpop]] = {"lt": py.Lt, "le": py.LtE, "gt": py.Gt, "ge": py.GtE, "eq": py.Eq,
                                           "ne": py.NotEq}
OPERATORS = frozenset(_ARITHMETIC) | frozenset(_COMPARISONS)
_INT = py.Constant(0)  # what a `for`'s index (or an item of a range) is bound to, for `_is_int`


class IntTracker:
    """What one module's generator reports: bindings, parameters and operator calls."""

    def __init__(self) -> None:
        self.stores: dict[str, int] = {}  # name -> how many times generated code binds it
        self.values: dict[str, list[Any]] = {}  # name -> the values reported for its bindings (None: not an int)
        self.sites: list[py.Call] = []  # operator calls, inner ones before the calls around them

    def stored(self, name: str) -> None:
        self.stores[name] = self.stores.get(name, 0) + 1

    def bound(self, name: str, value: py.expr | None) -> None:
        self.values.setdefault(name, []).append(value)

    def bound_for(self, index: str | None, item: str, iterable: py.expr) -> None:
        over_range = (_rt_call(iterable) in ("iterate", "each") and len(iterable.args) == 1  # type: ignore[attr-defined]
                      and _rt_call(iterable.args[0]) == "fn_range")  # type: ignore[attr-defined]
        if index is not None:
            self.bound(index, _INT)  # enumerate's index
        self.bound(item, _INT if over_range else None)

    def parameters(self, names: list[str]) -> None:
        for name in names:
            self.bound(name, None)

    def site(self, call: py.Call) -> None:
        self.sites.append(call)

    def inline(self) -> None:
        """Turn the operator calls whose operands can only be ints into operators."""
        if not self.sites:
            return
        ints = self._int_names()
        for call in self.sites:  # inner calls first: an outer call sees its operands already turned
            left, right = call.args
            if _is_int(left, ints) and _is_int(right, ints):
                _become_operator(call, str(_rt_call(call)), left, right)

    def _int_names(self) -> set[str]:
        stores, values = self.stores, self.values
        # every binding reported (parameters are reported as not ints, and are not stores)
        ints = {name for name, vs in values.items() if None not in vs and len(vs) == stores.get(name, 0)}
        changed = True
        while changed:  # drop a name bound to something not an int, until none is
            changed = False
            for name in list(ints):
                if not all(_is_int(v, ints) for v in values[name]):
                    ints.discard(name)
                    changed = True
        return ints


def _become_operator(call: Any, name: str, left: py.expr, right: py.expr) -> None:
    # In place: the node keeps its identity (its origin, its place in its parent). The
    # classes share the layout of every `ast` node (fields in the instance dict; tested
    # on CPython 3.11-3.13); where a Python refused, the call stays (same value).
    try:
        call.__class__ = py.BinOp if name in _ARITHMETIC else py.Compare
    except TypeError:
        return
    del call.func, call.args, call.keywords
    if name in _ARITHMETIC:
        call.left, call.op, call.right = left, _ARITHMETIC[name](), right
    else:
        call.left, call.ops, call.comparators = left, [_COMPARISONS[name]()], [right]


def _rt_call(node: Any) -> str | None:
    """The ABI name of an `rt.<name>(…)` call node, else None."""
    if node.__class__ is py.Call:
        func = node.func
        if func.__class__ is py.Attribute and func.value.__class__ is py.Name and func.value.id == "rt":
            return str(func.attr)
    return None


def _is_int(node: Any, ints: set[str]) -> bool:
    cls = node.__class__
    if cls is py.Constant:
        return type(node.value) is int
    if cls is py.Name:
        return node.id in ints
    if cls is py.UnaryOp:  # a negative constant (CodeGenerator.const)
        return node.op.__class__ is py.USub and _is_int(node.operand, ints)
    if cls is py.BinOp:
        return node.op.__class__ in (py.Add, py.Sub, py.Mult) and _is_int(node.left, ints) and _is_int(node.right, ints)
    name = _rt_call(node)
    if name == "fn_len":
        return True
    if name == "mod" or name in _ARITHMETIC:
        return len(node.args) == 2 and all(_is_int(a, ints) for a in node.args)
    return False

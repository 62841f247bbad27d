"""Signatures of the builtins (language.md §6.3): arity, parameter kinds, lambdas
and result types. The checker reads this table; the sandbox implements them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flow_kernel.lang import types as T

# Parameter kinds; the checker turns a mismatch into F3001.
ARRAY, NUMBERS, STRINGS, STRING, NUMBER, INT, OBJECT, ANY, LAMBDA, SEQ = (
    "array", "number[]", "string[]", "string", "number", "int", "object", "any", "lambda", "array or string",
)

Result = Callable[[list[T.Type], "T.Type | None"], T.Type]


@dataclass(frozen=True)
class Builtin:
    name: str
    params: tuple[str, ...]  # kinds of positional parameters
    required: int  # how many are required
    result: Result
    lambda_arities: tuple[int, ...] = ()  # allowed parameter counts of the lambda argument
    variadic: bool = False  # the last kind repeats (concat)
    pure: bool = True  # lambdas given to it must be pure (F5020)


def _item(args: list[T.Type], i: int = 0) -> T.Type:
    return T.array_item(args[i]) or T.ANY if args else T.ANY


def _same_array(args: list[T.Type], _: T.Type | None) -> T.Type:
    item = T.array_item(args[0]) if args else None
    return T.ArrayType(item) if item is not None else T.ArrayType(T.ANY)


def _const(t: T.Type) -> Result:
    return lambda _args, _lam: t


def _num_or_int(args: list[T.Type], _: T.Type | None) -> T.Type:
    item = _item(args)
    return T.INT if T.is_intlike(item) else T.NUMBER


def _map(args: list[T.Type], lam: T.Type | None) -> T.Type:
    return T.ArrayType(T.widen(lam) if lam is not None else T.ANY)


def _find(args: list[T.Type], _: T.Type | None) -> T.Type:
    return T.union([_item(args), T.NULL])


def accumulator(args: list[T.Type]) -> T.Type:
    """The type of `reduce`'s accumulator: its start value's, widened (`0` is an `int`)."""
    return T.widen(args[1]) if len(args) > 1 else T.ANY


def _reduce(args: list[T.Type], lam: T.Type | None) -> T.Type:
    # When the start value also fits the lambda's result type (`[]` for an `int[]`), that
    # type describes every result: the start value for no items, the lambda's otherwise.
    acc = accumulator(args)
    if lam is not None and T.assignable(lam, acc) and T.assignable(acc, T.widen(lam)):
        return T.widen(lam)
    return acc


def _flat_map(args: list[T.Type], lam: T.Type | None) -> T.Type:
    inner = T.array_item(lam) if lam is not None else None
    return T.ArrayType(T.widen(inner) if inner is not None else T.ANY)


def lambda_params(name: str, args: list[T.Type], count: int) -> list[T.Type]:
    """The types a builtin passes its lambda of `count` parameters, given the types of the
    arguments before the lambda: `(acc, x)` for `reduce`, `(x, i)` for the others."""
    item = _item(args)
    passed = [accumulator(args), item] if name == "reduce" else [item, T.INT]
    return passed[:count] + [T.ANY] * max(0, count - 2)


def _flatten(args: list[T.Type], _: T.Type | None) -> T.Type:
    inner = T.array_item(_item(args))
    return T.ArrayType(inner if inner is not None else T.ANY)


def _zip(args: list[T.Type], _: T.Type | None) -> T.Type:
    pair = T.union([_item(args, 0), _item(args, 1)]) if len(args) > 1 else T.ANY
    return T.ArrayType(T.ArrayType(pair))


def _slice(args: list[T.Type], _: T.Type | None) -> T.Type:
    if args and T.is_stringy(args[0]) and not T.is_any(args[0]):
        return T.STRING
    return _same_array(args, None) if args and T.array_item(args[0]) is not None else T.ANY


def _concat(args: list[T.Type], _: T.Type | None) -> T.Type:
    if args and all(T.is_stringy(a) and not T.is_any(a) for a in args):
        return T.STRING
    items = [T.array_item(a) for a in args]
    if items and all(i is not None for i in items):
        return T.ArrayType(T.union([i for i in items if i is not None]))
    return T.ANY


def _round(args: list[T.Type], _: T.Type | None) -> T.Type:
    return T.INT if len(args) == 1 else T.NUMBER


def _abs(args: list[T.Type], _: T.Type | None) -> T.Type:
    return T.INT if args and T.is_intlike(args[0]) else T.NUMBER


def _default(args: list[T.Type], _: T.Type | None) -> T.Type:
    return T.union([T.without_null(args[0]), args[1]]) if len(args) == 2 else T.ANY


def _merge(args: list[T.Type], _: T.Type | None) -> T.Type:
    a, b = (T.as_object(x) for x in args[:2]) if len(args) == 2 else (None, None)
    if a is None or b is None:
        return T.object_type({}, open=True)
    fields = dict(a.fields)
    fields.update(dict(b.fields))
    return T.ObjectType(tuple(fields.items()), a.open or b.open)


def _entries(args: list[T.Type], _: T.Type | None) -> T.Type:
    return T.ArrayType(T.object_type({"key": T.STRING, "value": T.ANY}))


def _group_by(args: list[T.Type], _: T.Type | None) -> T.Type:
    return T.ArrayType(T.object_type({"key": T.STRING, "items": T.ArrayType(_item(args))}))


TYPE_NAMES = T.union([T.Literal(n) for n in ("null", "bool", "number", "string", "array", "object")])
ANY_OBJECT = T.object_type({}, open=True)

_TABLE = [
    Builtin("len", (ANY,), 1, _const(T.INT)),
    Builtin("keys", (OBJECT,), 1, _const(T.ArrayType(T.STRING))),
    Builtin("values", (OBJECT,), 1, _const(T.ArrayType(T.ANY))),
    Builtin("entries", (OBJECT,), 1, _entries),
    Builtin("range", (INT, INT), 1, _const(T.ArrayType(T.INT))),
    Builtin("sum", (NUMBERS,), 1, _num_or_int),
    Builtin("avg", (NUMBERS,), 1, _const(T.NUMBER)),
    Builtin("min", (NUMBERS,), 1, _num_or_int),
    Builtin("max", (NUMBERS,), 1, _num_or_int),
    Builtin("round", (NUMBER, INT), 1, _round),
    Builtin("floor", (NUMBER,), 1, _const(T.INT)),
    Builtin("ceil", (NUMBER,), 1, _const(T.INT)),
    Builtin("abs", (NUMBER,), 1, _abs),
    Builtin("count", (ARRAY, LAMBDA), 2, _const(T.INT), (1, 2)),
    Builtin("all", (ARRAY, LAMBDA), 2, _const(T.BOOL), (1, 2)),
    Builtin("any", (ARRAY, LAMBDA), 2, _const(T.BOOL), (1, 2)),
    Builtin("map", (ARRAY, LAMBDA), 2, _map, (1, 2)),
    Builtin("filter", (ARRAY, LAMBDA), 2, _same_array, (1, 2)),
    Builtin("find", (ARRAY, LAMBDA), 2, _find, (1, 2)),
    Builtin("reduce", (ARRAY, ANY, LAMBDA), 3, _reduce, (2,)),
    Builtin("flatMap", (ARRAY, LAMBDA), 2, _flat_map, (1, 2)),
    Builtin("sort", (ARRAY,), 1, _same_array),
    Builtin("sortBy", (ARRAY, LAMBDA), 2, _same_array, (1,)),
    Builtin("unique", (ARRAY,), 1, _same_array),
    Builtin("flatten", (ARRAY,), 1, _flatten),
    Builtin("zip", (ARRAY, ARRAY), 2, _zip),
    Builtin("first", (ARRAY,), 1, _find),
    Builtin("last", (ARRAY,), 1, _find),
    Builtin("slice", (SEQ, INT, INT), 2, _slice),
    Builtin("concat", (SEQ, SEQ), 1, _concat, variadic=True),
    Builtin("join", (STRINGS, STRING), 2, _const(T.STRING)),
    Builtin("split", (STRING, STRING), 2, _const(T.ArrayType(T.STRING))),
    Builtin("lower", (STRING,), 1, _const(T.STRING)),
    Builtin("upper", (STRING,), 1, _const(T.STRING)),
    Builtin("trim", (STRING,), 1, _const(T.STRING)),
    Builtin("replace", (STRING, STRING, STRING), 3, _const(T.STRING)),
    Builtin("contains", (ANY, ANY), 2, _const(T.BOOL)),
    Builtin("startsWith", (STRING, STRING), 2, _const(T.BOOL)),
    Builtin("endsWith", (STRING, STRING), 2, _const(T.BOOL)),
    Builtin("json", (ANY,), 1, _const(T.STRING)),
    Builtin("parseJson", (STRING,), 1, _const(T.ANY)),
    Builtin("str", (ANY,), 1, _const(T.STRING)),
    Builtin("num", (ANY,), 1, _const(T.NUMBER)),
    Builtin("int", (ANY,), 1, _const(T.INT)),
    Builtin("bool", (ANY,), 1, _const(T.BOOL)),
    Builtin("default", (ANY, ANY), 2, _default),
    Builtin("typeOf", (ANY,), 1, _const(TYPE_NAMES)),
    Builtin("merge", (OBJECT, OBJECT), 2, _merge),
    Builtin("pick", (OBJECT, STRINGS), 2, _const(ANY_OBJECT)),
    Builtin("omit", (OBJECT, STRINGS), 2, _const(ANY_OBJECT)),
    Builtin("groupBy", (ARRAY, LAMBDA), 2, _group_by, (1,)),
    Builtin("now", (), 0, _const(T.STRING)),
    Builtin("uuid", (), 0, _const(T.STRING)),
    # Not pure: its lambda may call agents (but not approve/ask, F5011).
    Builtin("parallelMap", (ARRAY, LAMBDA), 2, _map, (1, 2), pure=False),
]

BUILTINS: dict[str, Builtin] = {b.name: b for b in _TABLE}

# What the lambda of these builtins must give: a `bool` test, a `string` group key, an
# array (spliced into the result) or a value of the accumulator's type.
LAMBDA_RESULT_KIND = {"count": "bool", "all": "bool", "any": "bool", "filter": "bool", "find": "bool", "groupBy": "string",
                      "flatMap": "array", "reduce": "accumulator"}


def kind_accepts(kind: str, t: T.Type) -> bool:
    if T.is_any(t):
        return True
    if kind == ANY:
        return True
    if kind == ARRAY:
        return T.array_item(t) is not None
    if kind == NUMBERS:
        item = T.array_item(t)
        return item is not None and T.is_numeric(item)
    if kind == STRINGS:
        item = T.array_item(t)
        return item is not None and T.is_stringy(item)
    if kind == STRING:
        return T.is_stringy(t)
    if kind == NUMBER:
        return T.is_numeric(t)
    if kind == INT:
        return T.is_intlike(t)
    if kind == OBJECT:
        return all(isinstance(T.unwrap(o), T.ObjectType) for o in T.options(t))
    if kind == SEQ:
        return T.array_item(t) is not None or T.is_stringy(t)
    return True

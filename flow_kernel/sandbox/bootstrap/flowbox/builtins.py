"""Flow's pure builtins (language.md §6.3), except `now` and `uuid`, which the host
provides. Each is `b_<flowname>`; `BUILTINS` maps Flow names to them.

Builtins that take a lambda (`LAMBDA_BUILTINS`) are coroutines: the compiled lambda
is an async callable always called as `await f(item, index)`. All the others are
plain functions taking Flow's positional arguments.

The static checker makes wrong types rare, but `any` lets anything through, so each
builtin checks its arguments and raises an `evaluation` error that names it:
"len: expected a string, array or object, got number".

Chosen semantics where the spec is silent:
- `sum`/`avg` of floats use math.fsum (correctly rounded, and the same on every
  Python version: the builtin sum of floats changed in 3.12).
- `round` is half away from zero on the shortest decimal repr of the float
  (round(1.005, 2) == 1.01, as the digits read); negative digits round to tens,
  hundreds, …
- `min`/`max` take numbers only, like the table's type; `sort`/`sortBy` take all
  numbers or all strings (code-point order).
- `num`/`int` parse decimal strings after trimming whitespace: an optional sign,
  digits with an optional fraction, or a fraction alone (".5"), and an optional
  exponent; "inf", "nan", "0x10", "1_000" are errors. `int` parses like `num` and
  truncates toward zero ("4.5" → 4, "-4.5" → -4).
- `pick(o, keys)` skips keys missing from `o` (the `.{a, b}` operator does not);
  `omit` ignores them too.
- `range` refuses more than RANGE_LIMIT items rather than exhausting memory.
- `replace(s, "", x)` inserts x between characters, as Python does.
- `concat` of one argument returns a copy of it."""

import decimal
import json
import math
import re

from .errors import FlowError, evaluation
from .operators import in_
from .values import (
    NUMBER_TYPES,
    deep_eq,
    deep_norm,
    eq_key,
    expect_bool,
    norm,
    render,
    text,
    truthy,
    type_of,
)

RANGE_LIMIT = 10_000_000
_NUMBER_TYPES = frozenset(NUMBER_TYPES)
_INTS = frozenset((int,))

# --- argument checks --------------------------------------------------------------


def _fail(fn, expected, v, what=None):
    where = f" for {what}" if what else ""
    return evaluation(f"{fn}: expected {expected}{where}, got {type_of(v)}")


def _array(fn, v, what=None):
    if isinstance(v, list):
        return v
    raise _fail(fn, "an array", v, what)


def _string(fn, v, what=None):
    if isinstance(v, str):
        return v
    raise _fail(fn, "a string", v, what)


def _object(fn, v, what=None):
    if isinstance(v, dict):
        return v
    raise _fail(fn, "an object", v, what)


def _number(fn, v, what=None):
    if type(v) in NUMBER_TYPES:
        return v
    raise _fail(fn, "a number", v, what)


def _int(fn, v, what=None):
    if type(v) is float:
        v = norm(v)  # an integral float is an int
    if type(v) is int:
        return v
    if type(v) is float:
        raise evaluation(f"{fn}: expected an int{f' for {what}' if what else ''}, got {v!r}")
    raise _fail(fn, "an int", v, what)


def _numbers(fn, xs):
    xs = _array(fn, xs)
    if _NUMBER_TYPES.issuperset(map(type, xs)):  # one pass in C; the loop below names the culprit
        return xs
    for i, x in enumerate(xs):
        if type(x) not in NUMBER_TYPES:
            raise evaluation(f"{fn}: expected an array of numbers, item {i} is {type_of(x)}")
    return xs


def _strings(fn, xs, what=None):
    xs = _array(fn, xs, what)
    for i, x in enumerate(xs):
        if not isinstance(x, str):
            raise evaluation(f"{fn}: expected an array of strings, item {i} is {type_of(x)}")
    return xs


def _sort_kind(fn, values, what):
    # "number" or "string" when all values are of one of these kinds, else an error.
    kind = None
    for v in values:
        t = type(v)
        k = "number" if t in NUMBER_TYPES else "string" if isinstance(v, str) else None
        if k is None:
            raise evaluation(f"{fn}: {what} must be numbers or strings, got {type_of(v)}")
        if kind is None:
            kind = k
        elif k != kind:
            raise evaluation(f"{fn}: {what} must be all numbers or all strings, "
                             f"got {kind} and {k}")
    return kind


# --- sizes and objects ------------------------------------------------------------


def b_len(x):
    if isinstance(x, (str, list, dict)):
        return len(x)  # a str counts code points (characters)
    raise _fail("len", "a string, array or object", x)


def b_keys(o):
    return list(_object("keys", o))


def b_values(o):
    return list(_object("values", o).values())


def b_entries(o):
    return [{"key": k, "value": v} for k, v in _object("entries", o).items()]


def b_range(*args):
    if len(args) == 1:
        lo, hi = 0, _int("range", args[0])
    elif len(args) == 2:
        lo, hi = _int("range", args[0], "the start"), _int("range", args[1], "the end")
    else:
        raise evaluation(f"range: expected 1 or 2 arguments, got {len(args)}")
    if hi - lo > RANGE_LIMIT:
        raise evaluation(f"range: too many items ({hi - lo}, at most {RANGE_LIMIT})")
    return list(range(lo, hi))


# --- numbers ----------------------------------------------------------------------


def _total(fn, xs):
    if _INTS.issuperset(map(type, xs)):
        return sum(xs)  # exact
    try:
        return norm(math.fsum(xs))
    except OverflowError:
        raise evaluation(f"{fn}: number out of range") from None


def b_sum(xs):
    return _total("sum", _numbers("sum", xs))


def b_avg(xs):
    xs = _numbers("avg", xs)
    if not xs:
        raise evaluation("avg: the array is empty")
    try:
        return norm(_total("avg", xs) / len(xs))
    except OverflowError:
        raise evaluation("avg: number out of range") from None


def b_min(xs):
    xs = _numbers("min", xs)
    if not xs:
        raise evaluation("min: the array is empty")
    return norm(min(xs))


def b_max(xs):
    xs = _numbers("max", xs)
    if not xs:
        raise evaluation("max: the array is empty")
    return norm(max(xs))


def _round_int(n, digits):
    # Exact integer rounding to 10**-digits (digits < 0), half away from zero.
    if -digits >= n.bit_length() // 3 + 2:
        return 0  # |n| < 10**(-digits) / 10: rounds to 0 (and 10**huge is never built)
    q = 10 ** (-digits)
    r = (abs(n) + q // 2) // q * q
    return -r if n < 0 else r


def b_round(n, digits=None):
    n = _number("round", n)
    d = 0 if digits is None else _int("round", digits, "the digits")
    if type(n) is int:
        return n if d >= 0 else _round_int(n, d)
    if d >= 0 and n.is_integer():
        # Already integral (every |float| >= 2**52 is): its exact value, as floor/ceil.
        return int(n) if digits is None else norm(n)
    # Round the shortest decimal repr, so that 1.005 rounds like the digits it shows.
    dec = decimal.Decimal(repr(n))
    exp = int(dec.as_tuple().exponent)  # finite: an int (never "n"/"N"/"F")
    if exp >= -d:
        r = dec  # already has no more than `d` fractional digits
    else:
        d = max(d, -400)  # |float| < 1e309: anything coarser rounds to 0 as well
        ctx = decimal.Context(prec=len(dec.as_tuple().digits) + abs(exp) + abs(d) + 2,
                              rounding=decimal.ROUND_HALF_UP)  # HALF_UP is away from 0
        r = dec.quantize(decimal.Decimal((0, (1,), -d)), context=ctx)
    if digits is None:
        return int(r)
    return norm(float(r))


def b_floor(n):
    return math.floor(_number("floor", n))


def b_ceil(n):
    return math.ceil(_number("ceil", n))


def b_abs(n):
    return norm(abs(_number("abs", n)))


# --- lambdas ----------------------------------------------------------------------


async def b_count(xs, f):
    n = 0
    for i, x in enumerate(_array("count", xs)):
        if expect_bool(await f(x, i), "count: the lambda's result"):
            n += 1
    return n


async def b_all(xs, f):
    for i, x in enumerate(_array("all", xs)):
        if not expect_bool(await f(x, i), "all: the lambda's result"):
            return False
    return True


async def b_any(xs, f):
    for i, x in enumerate(_array("any", xs)):
        if expect_bool(await f(x, i), "any: the lambda's result"):
            return True
    return False


async def b_map(xs, f):
    return [await f(x, i) for i, x in enumerate(_array("map", xs))]


async def b_filter(xs, f):
    out = []
    for i, x in enumerate(_array("filter", xs)):
        if expect_bool(await f(x, i), "filter: the lambda's result"):
            out.append(x)
    return out


async def b_find(xs, f):
    for i, x in enumerate(_array("find", xs)):
        if expect_bool(await f(x, i), "find: the lambda's result"):
            return x
    return None


async def b_reduce(xs, init, f):
    acc = init
    for x in _array("reduce", xs):
        acc = await f(acc, x)
    return acc


async def b_flatMap(xs, f):
    out = []
    for i, x in enumerate(_array("flatMap", xs)):
        items = await f(x, i)
        if not isinstance(items, list):
            raise evaluation(f"flatMap: the lambda must return an array, got {type_of(items)}")
        out.extend(items)
    return out


async def b_sortBy(xs, f):
    xs = _array("sortBy", xs)
    keys = [await f(x, i) for i, x in enumerate(xs)]
    _sort_kind("sortBy", keys, "the lambda's results")
    order = sorted(range(len(xs)), key=keys.__getitem__)  # sorted is stable
    return [xs[i] for i in order]


async def b_groupBy(xs, f):
    groups: dict[str, list[object]] = {}  # key -> items, in order of first appearance
    for i, x in enumerate(_array("groupBy", xs)):
        k = await f(x, i)
        if not isinstance(k, str):
            raise evaluation(f"groupBy: the lambda must return a string, got {type_of(k)}")
        items = groups.get(k)
        if items is None:
            groups[k] = [x]
        else:
            items.append(x)
    return [{"key": k, "items": items} for k, items in groups.items()]


# --- arrays -----------------------------------------------------------------------


def b_sort(xs):
    xs = _array("sort", xs)
    _sort_kind("sort", xs, "the items")
    return sorted(xs)


def b_unique(xs):
    items = _array("unique", xs)
    seen = set()
    out = []
    try:
        for x in items:
            k = eq_key(x)  # equal keys exactly when deep_eq: 1 and 1.0 alike, true and 1 not
            if k not in seen:
                seen.add(k)
                out.append(x)
    except RecursionError:  # an item nested past Python's recursion limit (~480 levels) has no key
        out = []
        for x in items:
            if not any(deep_eq(x, y) for y in out):
                out.append(x)
    return out


def b_flatten(xs):
    out = []
    for x in _array("flatten", xs):
        if isinstance(x, list):
            out.extend(x)
        else:
            out.append(x)
    return out


def b_zip(a, b):
    a = _array("zip", a, "the first argument")
    b = _array("zip", b, "the second argument")
    return [[x, y] for x, y in zip(a, b, strict=False)]  # stops at the shorter


def b_first(xs):
    xs = _array("first", xs)
    return xs[0] if xs else None


def b_last(xs):
    xs = _array("last", xs)
    return xs[-1] if xs else None


def b_slice(xs, a=None, b=None):
    if not isinstance(xs, (list, str)):
        raise _fail("slice", "an array or a string", xs)
    lo = None if a is None else _int("slice", a, "the start")
    hi = None if b is None else _int("slice", b, "the end")
    return xs[lo:hi]


def b_concat(*args):
    if not args:
        raise evaluation("concat: expected at least one argument")
    if all(isinstance(a, str) for a in args):
        return "".join(args)
    if all(isinstance(a, list) for a in args):
        out = []
        for a in args:
            out.extend(a)
        return out
    kinds = ", ".join(dict.fromkeys(type_of(a) for a in args))
    raise evaluation(f"concat: expected all strings or all arrays, got {kinds}")


# --- strings ----------------------------------------------------------------------


def b_join(xs, sep):
    xs = _strings("join", xs)
    return _string("join", sep, "the separator").join(xs)


def b_split(s, sep):
    s = _string("split", s)
    sep = _string("split", sep, "the separator")
    if not sep:
        raise evaluation("split: the separator must not be empty")
    return s.split(sep)


def b_lower(s):
    return _string("lower", s).lower()


def b_upper(s):
    return _string("upper", s).upper()


def b_trim(s):
    return _string("trim", s).strip()  # Unicode whitespace, as Python's str.strip()


def b_replace(s, old, new):
    s = _string("replace", s)
    old = _string("replace", old, "the text to replace")
    new = _string("replace", new, "the replacement")
    return s.replace(old, new)


def b_contains(x, y):
    # `in` with operands swapped; checked here so that the message names `contains`.
    if isinstance(x, str) and not isinstance(y, str):
        raise _fail("contains", "a string to look for in a string", y)
    if isinstance(x, dict) and not isinstance(y, str):
        raise _fail("contains", "a string key to look for in an object", y)
    if not isinstance(x, (list, str, dict)):
        raise _fail("contains", "a string, array or object", x)
    return in_(y, x)


def b_startsWith(s, p):
    return _string("startsWith", s).startswith(_string("startsWith", p, "the prefix"))


def b_endsWith(s, p):
    return _string("endsWith", s).endswith(_string("endsWith", p, "the suffix"))


# --- JSON and conversions ---------------------------------------------------------


def b_json(v):
    return render(v)


class _BadConstant(Exception):
    pass


def _reject_constant(name):
    raise _BadConstant(name)


def b_parseJson(s):
    s = _string("parseJson", s)
    try:
        v = json.loads(s, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise evaluation(f"parseJson: invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}",
                         line=e.lineno, column=e.colno, position=e.pos) from None
    except _BadConstant as e:
        raise evaluation(f"parseJson: {e.args[0]} is not valid JSON") from None
    except ValueError:  # an integer literal too long to convert
        raise evaluation("parseJson: number out of range") from None
    except RecursionError:
        raise evaluation("parseJson: the value is nested too deeply") from None
    try:
        return deep_norm(v)  # "2.0" reads as 2; "1e400" (inf) is an error
    except RecursionError:
        raise evaluation("parseJson: the value is nested too deeply") from None
    except FlowError as e:
        raise evaluation(f"parseJson: {e.message}") from None


def b_str(v):
    return text(v)


# ASCII digits only: \d would accept other scripts' digits.
_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT_RE = re.compile(r"[+-]?[0-9]+")


def _parse_number(fn, s):
    t = s.strip()
    if _INT_RE.fullmatch(t):
        try:
            return int(t)  # exact: no float rounding past 2**53
        except ValueError:  # longer than Python converts (4300 digits)
            raise evaluation(f"{fn}: number out of range") from None
    if _NUMBER_RE.fullmatch(t):
        x = float(t)
        if x - x != 0.0:  # "1e999" reads as inf
            raise evaluation(f"{fn}: number out of range")
        return norm(x)
    shown = json.dumps(s if len(s) <= 40 else s[:40] + "…", ensure_ascii=False)
    raise evaluation(f"{fn}: cannot parse {shown} as a number")


def b_num(v):
    if type(v) in NUMBER_TYPES:
        return norm(v)
    if isinstance(v, str):
        return _parse_number("num", v)
    raise _fail("num", "a number or a string", v)


def b_int(v):
    if type(v) in NUMBER_TYPES:
        return math.trunc(v)
    if isinstance(v, str):
        return math.trunc(_parse_number("int", v))
    raise _fail("int", "a number or a string", v)


def b_bool(v):
    return truthy(v)


def b_default(x, d):
    return d if x is None else x


def b_typeOf(v):
    return type_of(v)


def b_merge(a, b):
    a = _object("merge", a, "the first argument")
    b = _object("merge", b, "the second argument")
    return {**a, **b}


def b_pick(o, keys):
    o = _object("pick", o)
    keys = _strings("pick", keys, "the keys")
    return {k: o[k] for k in keys if k in o}


def b_omit(o, keys):
    o = _object("omit", o)
    drop = set(_strings("omit", keys, "the keys"))
    return {k: v for k, v in o.items() if k not in drop}


BUILTINS = {
    "len": b_len, "keys": b_keys, "values": b_values, "entries": b_entries,
    "range": b_range, "sum": b_sum, "avg": b_avg, "min": b_min, "max": b_max,
    "round": b_round, "floor": b_floor, "ceil": b_ceil, "abs": b_abs,
    "count": b_count, "all": b_all, "any": b_any, "map": b_map, "filter": b_filter,
    "find": b_find, "sort": b_sort, "sortBy": b_sortBy, "unique": b_unique,
    "flatten": b_flatten, "zip": b_zip, "first": b_first, "last": b_last,
    "slice": b_slice, "concat": b_concat, "join": b_join, "split": b_split,
    "lower": b_lower, "upper": b_upper, "trim": b_trim, "replace": b_replace,
    "contains": b_contains, "startsWith": b_startsWith, "endsWith": b_endsWith,
    "json": b_json, "parseJson": b_parseJson, "str": b_str, "num": b_num, "int": b_int,
    "bool": b_bool, "default": b_default, "typeOf": b_typeOf, "merge": b_merge,
    "pick": b_pick, "omit": b_omit, "groupBy": b_groupBy, "reduce": b_reduce, "flatMap": b_flatMap,
}

LAMBDA_BUILTINS = frozenset({"count", "all", "any", "map", "filter", "find", "sortBy", "groupBy", "reduce", "flatMap"})

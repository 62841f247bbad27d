"""Flow's operators (language.md §6): arithmetic, comparisons, `in`, indexing,
slices, member access, projection and pick. Generated code calls these by name.

Chosen semantics where the spec is silent:
- `+ - * %` on two ints give an int (Python ints are exact and unbounded); any
  float operand gives a float result, normalised by `values.norm` (an integral
  result becomes an int, inf/nan is "number out of range").
- `/` is true division, normalised: 6 / 3 is 2, 7 / 2 is 3.5.
- `%` follows Python's floor semantics: the result has the sign of the divisor
  (-7 % 3 == 2, 7 % -3 == -2), unlike JavaScript's truncating remainder.
- Strings compare by Unicode code point (Python's order).
- Every failure is an `evaluation` error naming the JSON types involved.

Generated code calls these about once per operation, so the common cases (two ints,
two strings, an object that has the field) are tested first, inline, and return
exactly what the general path below them would: a function call costs several times
more in the sandbox's WebAssembly CPython than on the host (docs/performance.md)."""

from .errors import FlowError, evaluation
from .values import NUMBER_TYPES, deep_eq, expect_bool, norm, type_of

_MAX_LISTED_FIELDS = 10


def _arith(r):
    # Float results only: integral ones become ints, non-finite ones are errors.
    return norm(r) if type(r) is float else r


def _out_of_range():
    return evaluation("number out of range")


# --- arithmetic -------------------------------------------------------------------


def add(a, b):
    ta = type(a)
    tb = type(b)
    if ta is int and tb is int:
        return a + b
    if ta in NUMBER_TYPES and tb in NUMBER_TYPES:
        try:
            return norm(a + b)
        except OverflowError:  # a huge int does not fit a float
            raise _out_of_range() from None
    if ta is str and tb is str:
        return a + b
    if ta is list and tb is list:
        return a + b  # a new list: Flow values are never shared mutably
    if isinstance(a, str) and isinstance(b, str):
        return str(a) + str(b)
    if isinstance(a, list) and isinstance(b, list):
        return list(a) + list(b)
    raise evaluation(f"cannot add {type_of(a)} and {type_of(b)}")


def _numbers(a, b, message):
    if type(a) in NUMBER_TYPES and type(b) in NUMBER_TYPES:
        return
    raise evaluation(message.format(type_of(a), type_of(b)))


def sub(a, b):
    if type(a) is int and type(b) is int:
        return a - b
    _numbers(a, b, "cannot subtract {1} from {0}")
    try:
        return _arith(a - b)
    except OverflowError:
        raise _out_of_range() from None


def mul(a, b):
    if type(a) is int and type(b) is int:
        return a * b
    _numbers(a, b, "cannot multiply {0} by {1}")
    try:
        return _arith(a * b)
    except OverflowError:
        raise _out_of_range() from None


def div(a, b):
    _numbers(a, b, "cannot divide {0} by {1}")
    if b == 0:
        raise evaluation("division by zero")
    try:
        return norm(a / b)
    except OverflowError:  # int / int too large for a float
        raise _out_of_range() from None


def mod(a, b):
    if type(a) is int and type(b) is int and b:
        return a % b  # floor semantics, as below
    _numbers(a, b, "cannot compute {0} modulo {1}")
    if b == 0:
        raise evaluation("division by zero")
    try:
        return _arith(a % b)
    except OverflowError:
        raise _out_of_range() from None


def neg(a):
    if type(a) in NUMBER_TYPES:
        return _arith(-a)
    raise evaluation(f"cannot negate {type_of(a)}")


def not_(a):
    return not expect_bool(a, "the operand of `not`")


# --- equality and order -----------------------------------------------------------


def eq(a, b):
    ta = type(a)
    if ta is type(b) and (ta is int or ta is str):
        return a == b
    return deep_eq(a, b)


def ne(a, b):
    ta = type(a)
    if ta is type(b) and (ta is int or ta is str):
        return a != b
    return not deep_eq(a, b)


def _ordered(a, b, op):
    ta = type(a)
    tb = type(b)
    if (ta in NUMBER_TYPES and tb in NUMBER_TYPES) or (ta is str and tb is str):
        return
    if isinstance(a, str) and isinstance(b, str):
        return
    raise evaluation(f"cannot compare {type_of(a)} and {type_of(b)} with `{op}`")


def lt(a, b):
    ta = type(a)
    if ta is type(b) and (ta is int or ta is str):
        return a < b
    _ordered(a, b, "<")
    return a < b


def le(a, b):
    ta = type(a)
    if ta is type(b) and (ta is int or ta is str):
        return a <= b
    _ordered(a, b, "<=")
    return a <= b


def gt(a, b):
    ta = type(a)
    if ta is type(b) and (ta is int or ta is str):
        return a > b
    _ordered(a, b, ">")
    return a > b


def ge(a, b):
    ta = type(a)
    if ta is type(b) and (ta is int or ta is str):
        return a >= b
    _ordered(a, b, ">=")
    return a >= b


# --- membership -------------------------------------------------------------------


def in_(x, container):
    """`x in container`: deep-equality membership in an array, substring in a
    string, key in an object."""
    if isinstance(container, list):
        tx = type(x)
        if tx is str or x is None:
            return x in container  # Python == is exact for these: no bool/number mix-up
        return any(deep_eq(x, item) for item in container)
    if isinstance(container, str):
        if isinstance(x, str):
            return x in container
        raise evaluation(f"`in` on a string needs a string on the left, got {type_of(x)}")
    if isinstance(container, dict):
        if isinstance(x, str):
            return x in container
        raise evaluation(f"`in` on an object needs a string key on the left, got {type_of(x)}")
    raise evaluation(f"`in` needs an array, a string or an object on the right, "
                     f"got {type_of(container)}")


# --- indexing and slices ----------------------------------------------------------


def _plural(n, word):
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _int_index(i, what):
    # An integral float (e.g. 4 / 2) is a valid index once normalised.
    if type(i) is float:
        i = norm(i)
    if type(i) is int:
        return i
    if type(i) is float:
        raise evaluation(f"{what} must be an int, got {i!r}")
    raise evaluation(f"{what} must be an int, got {type_of(i)}")


def index(obj, i):
    """`obj[i]`: arrays and strings by int (negative counts from the end), objects
    by string key."""
    if isinstance(obj, (list, str)):
        is_list = isinstance(obj, list)
        i = _int_index(i, "an array index" if is_list else "a string index")
        n = len(obj)
        j = i + n if i < 0 else i
        if 0 <= j < n:
            return obj[j]
        size = f"an array of {_plural(n, 'item')}" if is_list else \
            f"a string of {_plural(n, 'character')}"
        raise evaluation(f"index {i} is out of range for {size}", index=i, length=n)
    if isinstance(obj, dict):
        if not isinstance(i, str):
            raise evaluation(f"an object key must be a string, got {type_of(i)}")
        try:
            return obj[i]
        except KeyError:
            raise _no_field(obj, i) from None
    if obj is None:
        raise evaluation("cannot index null")
    raise evaluation(f"cannot index {type_of(obj)}")


def _bound(v, what):
    return None if v is None else _int_index(v, what)


def slice_(obj, lo, hi):
    """`obj[lo:hi]` on arrays and strings; bounds are ints or null and clamp like
    Python's."""
    if isinstance(obj, (list, str)):
        return obj[_bound(lo, "a slice bound"):_bound(hi, "a slice bound")]
    raise evaluation(f"cannot slice {type_of(obj)}")


# --- fields -----------------------------------------------------------------------


def _no_field(obj, name):
    names = list(obj)
    if not names:
        listing = "no fields"
    else:
        shown = ", ".join(str(k) for k in names[:_MAX_LISTED_FIELDS])
        more = len(names) - _MAX_LISTED_FIELDS
        listing = f"fields: {shown}" + (f", … and {more} more" if more > 0 else "")
    return evaluation(f"no field `{name}` in object ({listing})", field=name,
                      fields=[str(k) for k in names[:_MAX_LISTED_FIELDS]])


def member(obj, name):
    """`obj.name`: a required field."""
    if type(obj) is dict or isinstance(obj, dict):
        try:
            return obj[name]
        except KeyError:
            raise _no_field(obj, name) from None
    raise evaluation(f"cannot read field `{name}` of {type_of(obj)}", field=name)


def member_opt(obj, name):
    """`obj.name` for a declared optional field: a missing key is null."""
    if isinstance(obj, dict):
        return obj.get(name)
    raise evaluation(f"cannot read field `{name}` of {type_of(obj)}", field=name)


def safe_member(obj, name):
    """`obj?.name`: null when obj is null."""
    if obj is None:
        return None
    return member_opt(obj, name)


def project(xs, path):
    """`xs[*].a.b`: follows the fields of `path` from every item of the array."""
    if not isinstance(xs, list):
        raise evaluation(f"`[*]` needs an array, got {type_of(xs)}")
    out = []
    for i, v in enumerate(xs):
        try:
            for name in path:
                v = member(v, name)
        except FlowError as e:
            raise evaluation(f"{e.message} (item {i} of the projection)",
                             **e.details, item=i) from None
        out.append(v)
    return out


def pick(obj, names):
    """`obj.{a, b}`: a new object with just those fields, in that order; a missing
    field is an error (the `pick()` builtin skips it instead)."""
    if not isinstance(obj, dict):
        raise evaluation(f"cannot pick fields of {type_of(obj)}")
    out = {}
    for name in names:
        try:
            out[name] = obj[name]
        except KeyError:
            raise _no_field(obj, name) from None
    return out

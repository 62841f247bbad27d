"""Flow's runtime values (language.md §1, §3.2): JSON only — None, bool, int, float,
str, list, dict (insertion-ordered).

Python's bool is a subclass of int; in Flow a bool is never a number, so every check
here uses exact types (`type(v) is int`) rather than isinstance on numbers.

Shipped as source into Pyodide: imports only the standard library and the package."""

import json
from itertools import compress

from .errors import FlowError, evaluation

# The deepest nesting of arrays and objects a value may have where it is encoded (the bridge's
# lines, a value's text) or checked whole. json's C encoder and parser, repr, hashing and
# comparison recurse once a level on the wasm stack, which V8 bounds on its own (about 5,000
# to 10,000 levels): past it Pyodide ends the process, and no `except` sees it first. The
# host must take what passes whole: its decoder stops at its recursion limit (1,000 less
# the caller's frames and the message's own levels: a 990-level result was refused as
# malformed), and its recursive helpers take two frames a level; 256 leaves room for all.
MAX_DEPTH = 256
_CONTAINERS = frozenset((list, dict, tuple))
# JSON scalars with nothing to look at below or inside them (a float may be non-finite).
_PLAIN_SCALARS = frozenset((str, int, bool, type(None)))
_STRINGS = frozenset((str,))
_SCALARS = frozenset((type(None), bool, int, float, str))
MAX_EXACT = 2**53  # integral floats up to this magnitude are normalised to ints
NUMBER_TYPES = (int, float)  # compared with `type(v) in NUMBER_TYPES`: bool is not in it

_TYPE_NAMES = {type(None): "null", bool: "bool", int: "number", float: "number",
               str: "string", list: "array", dict: "object"}

# The encoder of language.md §1. allow_nan=False: a non-finite float is never JSON.
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), allow_nan=False).encode


_SHORT_INT = 10**18  # ints below this print the same through int.__repr__ as through render()


def norm(x):
    """Normalise an arithmetic result: an integral float with |x| <= 2**53 becomes an
    int (so 6 / 3 is 2); inf and nan are errors (they are not JSON)."""
    if type(x) is float:
        if x - x != 0.0:  # true only for inf and nan (inf - inf and nan - nan are nan)
            raise evaluation("number out of range")
        if x.is_integer() and -MAX_EXACT <= x <= MAX_EXACT:
            return int(x)
    return x


def deep_norm(v):
    """`norm` applied to every float at any depth; returns a new structure only for
    containers (callers use it when a float may hide inside)."""
    t = type(v)
    if t is float:
        return norm(v)
    if t is list:
        return [deep_norm(x) for x in v]
    if t is dict:
        return {k: deep_norm(x) for k, x in v.items()}
    return v


def render(v):
    """The text of a value (language.md §1): json.dumps with ", " / ": " separators,
    non-ASCII kept, integral floats normalised to ints at any depth; `limit-exceeded`
    past MAX_DEPTH."""
    check_depth(v, "a value turned into text")
    try:
        s = _dumps(v)
        # Fast path: repr switches to exponent notation only from 1e16 > 2**53, so an
        # integral float in range always dumps as "…X.0"; output without ".0" has
        # nothing to normalise. A string containing ".0" only costs one more pass.
        if ".0" in s:
            s = _dumps(deep_norm(v))
        return s
    except ValueError as e:  # a non-finite float, or an int too long to print
        raise evaluation("number out of range") from e
    except TypeError as e:  # never happens for JSON values: a runtime bug, said plainly
        raise evaluation(f"value is not JSON: {e}") from e


def text(v):
    """A value as text for interpolation, print, log and str(): strings as they are."""
    t = type(v)
    if t is str:
        return v
    if t is int and -_SHORT_INT < v < _SHORT_INT:
        return int.__repr__(v)  # what the JSON encoder writes for an int, without the encoder
    return render(v)


def type_of(v):
    """The JSON type name: "null", "bool", "number", "string", "array" or "object"."""
    name = _TYPE_NAMES.get(type(v))
    if name is not None:
        return name
    # Subclasses (never produced by the runtime, but keep messages sensible).
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, NUMBER_TYPES):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def is_number(v):
    """An int or a float, never a bool."""
    return type(v) in NUMBER_TYPES


def deep_eq(a, b):
    """Deep JSON equality (`==`): a bool equals only a bool, numbers compare by value
    (1 == 1.0), arrays elementwise, objects by keys and values in any order — at any
    depth: values nested past Python's recursion limit (~480 levels) are compared level
    by level."""
    if a is b:
        return True
    ta = type(a)
    tb = type(b)
    if ta is tb and ta is not list and ta is not dict:
        return a == b  # None, bool, int, float, str
    if ta in NUMBER_TYPES and tb in NUMBER_TYPES:
        return a == b  # int vs float: Python compares exactly
    if ta in _SCALARS and tb in _SCALARS:
        return False  # two different kinds of scalar
    try:
        return _eq(a, b)
    except RecursionError:
        return _eq_level_by_level(a, b)


def _eq(a, b):
    """`deep_eq` by recursion: a level costs two Python frames."""
    if a is b:
        return True
    ta = type(a)
    tb = type(b)
    if ta is tb:
        if ta is list:
            return len(a) == len(b) and all(_eq(x, y) for x, y in zip(a, b, strict=True))
        if ta is dict:
            if len(a) != len(b):
                return False
            return all(k in b and _eq(x, b[k]) for k, x in a.items())
        return a == b  # None, bool, int, float, str
    if ta in NUMBER_TYPES and tb in NUMBER_TYPES:
        return a == b  # int vs float: Python compares exactly
    # Subclasses of containers or strings (not produced by the runtime).
    if isinstance(a, list) and isinstance(b, list):
        return _eq(list(a), list(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return _eq(dict(a), dict(b))
    if isinstance(a, str) and isinstance(b, str):
        return str(a) == str(b)
    return False


def _eq_level_by_level(a, b):
    """`deep_eq` without recursion: pairs still to compare on a list."""
    pairs = [(a, b)]
    while pairs:
        a, b = pairs.pop()
        if a is b:
            continue
        ta = type(a)
        tb = type(b)
        if ta is tb and (ta is list or ta is dict):
            if len(a) != len(b):
                return False
            if ta is list:
                pairs.extend(zip(a, b, strict=True))
            else:
                for k, x in a.items():
                    if k not in b:
                        return False
                    pairs.append((x, b[k]))
        elif isinstance(a, list) and isinstance(b, list):
            pairs.append((list(a), list(b)))
        elif isinstance(a, dict) and isinstance(b, dict):
            pairs.append((dict(a), dict(b)))
        elif not _eq(a, b):  # scalars: no recursion
            return False
    return True


def eq_key(v):
    """A hashable key with eq_key(a) == eq_key(b) exactly when deep_eq(a, b): numbers
    share a tag (hash(1) == hash(1.0)), bools have their own (True is not 1), objects
    are order-insensitive. Lets `unique` run in linear time."""
    t = type(v)
    if t is str:
        return ("s", v)
    if t is int or t is float:
        return ("n", v)
    if t is bool:
        return ("b", v)
    if v is None:
        return ("z",)
    if isinstance(v, list):
        return ("a", tuple(eq_key(x) for x in v))
    if isinstance(v, dict):
        return ("o", frozenset((k, eq_key(x)) for k, x in v.items()))
    if isinstance(v, str):
        return ("s", str(v))
    raise evaluation(f"value is not JSON: {type_of(v)}")


def truthy(v):
    """JSON truthiness (`bool()`): null, false, 0, "", [] and {} are false. Python's
    own truthiness is exactly that on JSON values (0.0 included)."""
    return bool(v)


def nests_deeper(v, limit):
    """True if v nests lists, dicts and tuples more than `limit` levels deep (a container
    is a level; a scalar is none). Level by level without recursion, so any depth is safe
    to ask about; a cycle is deeper than any limit. Each container costs one step of
    Python; its children are sorted out in C."""
    level = [v] if type(v) in _CONTAINERS else []
    depth, is_container = 0, _CONTAINERS.__contains__
    while level:
        depth += 1
        if depth > limit:
            return True
        below = []
        for c in level:
            items = c.values() if type(c) is dict else c
            below.extend(compress(items, map(is_container, map(type, items))))
        level = below
    return False


def check_depth(v, what):
    """A `limit-exceeded` error if v nests deeper than MAX_DEPTH; `what` names it."""
    if type(v) in _CONTAINERS and nests_deeper(v, MAX_DEPTH):
        raise too_deep(what)


def too_deep(what):
    """The error of a value nested deeper than MAX_DEPTH (`what`, e.g. "the run's result")."""
    return FlowError("limit-exceeded", f"{what} nests arrays and objects deeper than {MAX_DEPTH} levels",
                     {"limit": "depth", "value": MAX_DEPTH})


def release(deep_values):
    """Empty every list and dict inside `deep_values`, one container at a time, so that no
    free recurses: CPython frees a nested list a level per wasm frame, and past ~5,500
    levels that overflows V8's stack and ends the process. For values a run leaves behind
    and nothing reads again (every reference to them sees them emptied)."""
    stack = list(deep_values)
    is_container = _CONTAINERS.__contains__
    while stack:
        c = stack.pop()
        t = type(c)
        if t is dict:
            items = c.values()
        elif t is list:
            items = c
        else:
            continue  # a tuple cannot be emptied (values never hold one)
        stack.extend(compress(items, map(is_container, map(type, items))))
        c.clear()


def is_json(v):
    """True if v is a JSON value at any depth: exact JSON types, string keys, finite
    floats, and no deeper than MAX_DEPTH (so no cycle). Without recursion."""
    if nests_deeper(v, MAX_DEPTH):
        return False
    stack = [v]
    while stack:
        v = stack.pop()
        t = type(v)
        if v is None or t is bool or t is int or t is str:
            continue
        if t is float:
            if v - v != 0.0:  # not finite
                return False
        elif t is list:
            if not _PLAIN_SCALARS.issuperset(map(type, v)):  # a list of plain scalars is settled in C
                stack.extend(v)
        elif t is dict:
            if not all(type(k) is str for k in v):
                return False
            stack.extend(v.values())
        else:
            return False
    return True


def expect_bool(v, what):
    """v if it is a bool; else an evaluation error. Conditions of `if`, `while`, the
    ternary and the operands of `and`, `or`, `not` are never coerced."""
    if v is True or v is False:
        return v
    raise evaluation(f"{what} must be a bool, got {type_of(v)}")


BINDINGS_BUDGET = 4 * 1024 * 1024  # bytes of session bindings a reply may carry


def json_bindings(bindings, too_deep_found=None):
    """The bindings worth sending back: JSON values, and not bigger than the budget in all
    (a run that filled the heap must still be able to report). Those left out for nesting
    deeper than MAX_DEPTH are appended to `too_deep_found` if given."""
    out, budget = {}, BINDINGS_BUDGET
    for name, value in bindings.items():
        size = _size(value, budget)
        if size is None:
            continue
        if not is_json(value):
            if too_deep_found is not None and nests_deeper(value, MAX_DEPTH):
                too_deep_found.append(value)
            continue
        budget -= size
        out[name] = value
    return out


def _size(value, budget):
    """A rough encoded size of `value`, or None once it passes `budget` (without encoding it)."""
    stack, total = [value], 0
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            total += len(v) + 2
        elif isinstance(v, list):
            total += 2 + len(v)
            if _STRINGS.issuperset(map(type, v)):  # a list of strings is sized in C, as the loop would
                total += sum(map(len, v)) + 2 * len(v)
            else:
                stack.extend(v)
        elif isinstance(v, dict):
            total += 2 + len(v) * 4
            for k, item in v.items():
                total += len(k)
                stack.append(item)
        else:
            total += 8
        if total > budget:
            return None
    return total


# Prompt variables (`file(PATH, { name: value })`): the host's lang/prompt_files.py has the
# same `prompt_value`, held equal by tests/lang/test_prompt_variables.py.
_MARKUP = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def prompt_value(v):
    """A value as it stands in a filled prompt: its JSON text, `<`, `>` and `&` escaped."""
    return render(v).translate(_MARKUP)


def fill_prompt(parts, values):
    """A prompt file's text from its pieces (str) and placeholders (an index into `values`),
    in one pass: a value's text is never read for placeholders again."""
    rendered = [prompt_value(v) for v in values]
    return "".join([p if type(p) is str else rendered[p] for p in parts])

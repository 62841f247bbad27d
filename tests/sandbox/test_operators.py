"""flowbox.operators: the operators of language.md §6 as generated code calls them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.sandbox.bootstrap_import import FlowError, raises_evaluation
from tests.sandbox.bootstrap_import import operators as op


def same(got, expected):
    """Equal and of the same Python type (2 is not 2.0, 1 is not True)."""
    return got == expected and type(got) is type(expected)


# --- arithmetic -------------------------------------------------------------------


@pytest.mark.parametrize(("fn", "a", "b", "expected"), [
    (op.add, 1, 2, 3), (op.add, 1.5, 1.5, 3), (op.add, 0.1, 0.2, 0.30000000000000004),
    (op.add, 2**60, 1, 2**60 + 1), (op.add, "ab", "cd", "abcd"), (op.add, "", "", ""),
    (op.add, [1], [2, 3], [1, 2, 3]), (op.add, [], [], []), (op.add, 1, 0.5, 1.5),
    (op.sub, 5, 7, -2), (op.sub, 2.5, 0.5, 2), (op.sub, 1, 0.25, 0.75),
    (op.mul, 3, 4, 12), (op.mul, 2.5, 2, 5), (op.mul, 0.5, 3, 1.5), (op.mul, -1, 0, 0),
    (op.div, 6, 3, 2), (op.div, 7, 2, 3.5), (op.div, 1, 3, 1 / 3), (op.div, -9, 3, -3),
    (op.div, 7.5, 2.5, 3), (op.div, 0, 5, 0),
    (op.mod, 7, 3, 1), (op.mod, -7, 3, 2), (op.mod, 7, -3, -2), (op.mod, 5.5, 2, 1.5),
    (op.mod, 6.0, 4, 2), (op.mod, 0, 3, 0),
])
def test_arithmetic(fn, a, b, expected):
    assert same(fn(a, b), expected)


def test_add_returns_a_new_list():
    a, b = [1], [2]
    r = op.add(a, b)
    r.append(3)
    assert a == [1] and b == [2]


@pytest.mark.parametrize(("fn", "a", "b", "message"), [
    (op.add, "a", 1, "cannot add string and number"),
    (op.add, 1, "a", "cannot add number and string"),
    (op.add, True, 1, "cannot add bool and number"),
    (op.add, 1, True, "cannot add number and bool"),
    (op.add, None, 1, "cannot add null and number"),
    (op.add, [1], "a", "cannot add array and string"),
    (op.add, {}, {}, "cannot add object and object"),
    (op.add, [1], 1, "cannot add array and number"),
    (op.sub, "a", 1, "cannot subtract number from string"),
    (op.sub, [1], [1], "cannot subtract array from array"),
    (op.sub, True, False, "cannot subtract bool from bool"),
    (op.mul, "ab", 3, "cannot multiply string by number"),
    (op.mul, [1], 2, "cannot multiply array by number"),
    (op.div, 1, None, "cannot divide number by null"),
    (op.div, "6", 3, "cannot divide string by number"),
    (op.mod, 1, "2", "cannot compute number modulo string"),
    (op.div, 1, 0, "division by zero"), (op.div, 1.5, 0.0, "division by zero"),
    (op.div, 0, -0.0, "division by zero"), (op.mod, 1, 0, "division by zero"),
    (op.mod, 2.5, 0.0, "division by zero"),
    (op.mul, 1e200, 1e200, "number out of range"),
    (op.add, 1.7e308, 1.7e308, "number out of range"),
    (op.sub, -1.7e308, 1.7e308, "number out of range"),
    (op.add, 10**400, 0.5, "number out of range"),
    (op.div, 10**400, 3, "number out of range"),
    (op.div, 1e300, 1e-300, "number out of range"),
])
def test_arithmetic_errors(fn, a, b, message):
    with raises_evaluation(message):
        fn(a, b)


@pytest.mark.parametrize(("a", "expected"), [(3, -3), (-2.5, 2.5), (0, 0), (0.0, 0), (-4.0, 4)])
def test_neg(a, expected):
    assert same(op.neg(a), expected)


@pytest.mark.parametrize(("a", "message"), [
    ("1", "cannot negate string"), (True, "cannot negate bool"), (None, "cannot negate null"),
    ([1], "cannot negate array"),
])
def test_neg_errors(a, message):
    with raises_evaluation(message):
        op.neg(a)


def test_not():
    assert op.not_(True) is False
    assert op.not_(False) is True


@pytest.mark.parametrize(("a", "type_name"), [(0, "number"), (None, "null"), ("", "string"),
                                              ([], "array")])
def test_not_errors(a, type_name):
    with raises_evaluation(f"the operand of `not` must be a bool, got {type_name}"):
        op.not_(a)


@given(st.integers(), st.integers())
def test_int_arithmetic_stays_int(a, b):
    assert same(op.add(a, b), a + b)
    assert same(op.sub(a, b), a - b)
    assert same(op.mul(a, b), a * b)
    if b:
        assert same(op.mod(a, b), a % b)


# --- equality and order -----------------------------------------------------------


@pytest.mark.parametrize(("a", "b", "expected"), [
    (1, 1.0, True), (1, True, False), (0, False, False), ("a", "a", True), (None, None, True),
    ([1, [2]], [1, [2.0]], True), ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
    ({"a": 1}, {"a": 2}, False), ([1, 2], [2, 1], False), (None, 0, False),
])
def test_eq_ne(a, b, expected):
    assert op.eq(a, b) is expected
    assert op.ne(a, b) is (not expected)


@pytest.mark.parametrize(("a", "b", "lt", "le", "gt", "ge"), [
    (1, 2, True, True, False, False), (2, 2.0, False, True, False, True),
    (3.5, 2, False, False, True, True), (-1, -0.5, True, True, False, False),
    ("a", "b", True, True, False, False), ("b", "ab", False, False, True, True),
    ("", "", False, True, False, True), ("Z", "a", True, True, False, False),
    ("é", "z", False, False, True, True),
])
def test_order(a, b, lt, le, gt, ge):
    assert op.lt(a, b) is lt
    assert op.le(a, b) is le
    assert op.gt(a, b) is gt
    assert op.ge(a, b) is ge


@pytest.mark.parametrize(("fn", "sym"), [(op.lt, "<"), (op.le, "<="), (op.gt, ">"), (op.ge, ">=")])
@pytest.mark.parametrize(("a", "b", "types"), [
    (1, "1", "number and string"), ("a", 1, "string and number"), (True, 1, "bool and number"),
    (True, False, "bool and bool"), (None, 1, "null and number"), ([1], [2], "array and array"),
    ({}, {}, "object and object"),
])
def test_order_errors(fn, sym, a, b, types):
    with raises_evaluation(f"cannot compare {types} with `{sym}`"):
        fn(a, b)


# --- in ---------------------------------------------------------------------------


@pytest.mark.parametrize(("x", "c", "expected"), [
    (1, [1, 2], True), (1.0, [1, 2], True), (3, [1, 2], False), (True, [1], False),
    (1, [True], False), ("a", ["a", "b"], True), ("c", ["a"], False), (None, [None], True),
    (None, [0, False], False), ([1], [[1.0]], True), ({"a": 1}, [{"a": 1}], True),
    ({"a": 1}, [{"a": 2}], False), (1, [], False),
    ("ell", "hello", True), ("", "x", True), ("z", "hello", False),
    ("id", {"id": 1}, True), ("x", {"id": 1}, False), ("", {}, False),
])
def test_in(x, c, expected):
    assert op.in_(x, c) is expected


@pytest.mark.parametrize(("x", "c", "message"), [
    (1, "123", "`in` on a string needs a string on the left, got number"),
    (None, "abc", "`in` on a string needs a string on the left, got null"),
    (1, {"1": 1}, "`in` on an object needs a string key on the left, got number"),
    ("a", 1, "`in` needs an array, a string or an object on the right, got number"),
    ("a", None, "got null"), (1, True, "got bool"),
])
def test_in_errors(x, c, message):
    with raises_evaluation(message):
        op.in_(x, c)


# --- indexing and slices ----------------------------------------------------------


@pytest.mark.parametrize(("obj", "i", "expected"), [
    ([10, 20, 30], 0, 10), ([10, 20, 30], 2, 30), ([10, 20, 30], -1, 30),
    ([10, 20, 30], -3, 10), ([10, 20, 30], 1.0, 20), ([10, 20, 30], 4 / 2, 30),
    ("héllo", 1, "é"), ("abc", -1, "c"), ({"a": 1, "b": None}, "b", None),
    ({"a": {"x": 1}}, "a", {"x": 1}), ({"": 5}, "", 5),
])
def test_index(obj, i, expected):
    assert same(op.index(obj, i), expected)


@pytest.mark.parametrize(("obj", "i", "message"), [
    ([1, 2, 3], 5, "index 5 is out of range for an array of 3 items"),
    ([1, 2, 3], 3, "index 3 is out of range for an array of 3 items"),
    ([1, 2, 3], -4, "index -4 is out of range for an array of 3 items"),
    ([1], 1, "index 1 is out of range for an array of 1 item"),
    ([], 0, "index 0 is out of range for an array of 0 items"),
    ("ab", 2, "index 2 is out of range for a string of 2 characters"),
    ([1], True, "an array index must be an int, got bool"),
    ([1], "0", "an array index must be an int, got string"),
    ([1], 0.5, "an array index must be an int, got 0.5"),
    ("abc", None, "a string index must be an int, got null"),
    ({"id": 1, "title": "t"}, "name", "no field `name` in object (fields: id, title)"),
    ({}, "name", "no field `name` in object (no fields)"),
    ({"a": 1}, 0, "an object key must be a string, got number"),
    (None, 0, "cannot index null"), (None, "a", "cannot index null"),
    (5, 0, "cannot index number"), (True, 0, "cannot index bool"),
])
def test_index_errors(obj, i, message):
    with raises_evaluation(message):
        op.index(obj, i)


def test_index_error_details():
    try:
        op.index([1, 2, 3], 5)
    except FlowError as e:
        assert e.details == {"index": 5, "length": 3}
    else:
        raise AssertionError("no error")


@pytest.mark.parametrize(("obj", "lo", "hi", "expected"), [
    ([1, 2, 3, 4], 1, 3, [2, 3]), ([1, 2, 3], None, 2, [1, 2]), ([1, 2, 3], 1, None, [2, 3]),
    ([1, 2, 3], None, None, [1, 2, 3]), ([1, 2, 3], -2, None, [2, 3]), ([1, 2, 3], 0, 10, [1, 2, 3]),
    ([1, 2, 3], 5, 10, []), ([1, 2, 3], 2, 1, []), ([1, 2, 3], -10, 1, [1]),
    ("hello", 1, 3, "el"), ("hello", -3, None, "llo"), ("hi", 5, 9, ""), ([1, 2, 3], 1.0, 2.0, [2]),
])
def test_slice(obj, lo, hi, expected):
    assert op.slice_(obj, lo, hi) == expected


def test_slice_returns_a_new_list():
    xs = [1, 2]
    ys = op.slice_(xs, None, None)
    ys.append(3)
    assert xs == [1, 2]


@pytest.mark.parametrize(("obj", "lo", "hi", "message"), [
    ({"a": 1}, 0, 1, "cannot slice object"), (None, 0, 1, "cannot slice null"),
    (5, 0, 1, "cannot slice number"), ([1], "0", None, "a slice bound must be an int, got string"),
    ([1], None, True, "a slice bound must be an int, got bool"),
    ([1], 0.5, None, "a slice bound must be an int, got 0.5"),
])
def test_slice_errors(obj, lo, hi, message):
    with raises_evaluation(message):
        op.slice_(obj, lo, hi)


# --- fields -----------------------------------------------------------------------


def test_member():
    assert op.member({"a": 1, "b": None}, "a") == 1
    assert op.member({"a": 1, "b": None}, "b") is None


@pytest.mark.parametrize(("obj", "name", "message"), [
    ({"id": 1, "title": "t"}, "name", "no field `name` in object (fields: id, title)"),
    ({}, "x", "no field `x` in object (no fields)"),
    ({f"f{i}": i for i in range(13)}, "x",
     "no field `x` in object (fields: f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, … and 3 more)"),
    (None, "x", "cannot read field `x` of null"), ([1], "x", "cannot read field `x` of array"),
    ("s", "len", "cannot read field `len` of string"), (3, "x", "cannot read field `x` of number"),
])
def test_member_errors(obj, name, message):
    with raises_evaluation(message):
        op.member(obj, name)


def test_member_opt():
    assert op.member_opt({"a": 1}, "a") == 1
    assert op.member_opt({"a": 1}, "b") is None
    with raises_evaluation("cannot read field `b` of null"):
        op.member_opt(None, "b")
    with raises_evaluation("cannot read field `b` of array"):
        op.member_opt([], "b")


def test_safe_member():
    assert op.safe_member(None, "a") is None
    assert op.safe_member({"a": 2}, "a") == 2
    assert op.safe_member({"a": 2}, "b") is None
    with raises_evaluation("cannot read field `a` of number"):
        op.safe_member(1, "a")


@pytest.mark.parametrize(("xs", "path", "expected"), [
    ([{"a": 1}, {"a": 2}], ["a"], [1, 2]), ([], ["a"], []),
    ([{"a": {"b": "x"}}, {"a": {"b": None}}], ["a", "b"], ["x", None]),
    ([{"a": [1]}], ["a"], [[1]]),
])
def test_project(xs, path, expected):
    assert op.project(xs, path) == expected


@pytest.mark.parametrize(("xs", "path", "message"), [
    ({"a": 1}, ["a"], "`[*]` needs an array, got object"),
    (None, ["a"], "`[*]` needs an array, got null"),
    ([{"a": 1}, {"b": 2}], ["a"], "no field `a` in object (fields: b) (item 1 of the projection)"),
    ([{"a": 1}], ["a", "b"], "cannot read field `b` of number (item 0 of the projection)"),
    ([1], ["a"], "cannot read field `a` of number"),
])
def test_project_errors(xs, path, message):
    with raises_evaluation(message):
        op.project(xs, path)


def test_pick():
    o = {"id": 1, "title": "t", "body": "b"}
    assert list(op.pick(o, ["title", "id"]).items()) == [("title", "t"), ("id", 1)]
    assert op.pick(o, []) == {}
    assert op.pick({"a": None}, ["a"]) == {"a": None}


@pytest.mark.parametrize(("obj", "names", "message"), [
    ({"id": 1}, ["id", "title"], "no field `title` in object (fields: id)"),
    (None, ["a"], "cannot pick fields of null"), ([1], ["a"], "cannot pick fields of array"),
])
def test_pick_errors(obj, names, message):
    with raises_evaluation(message):
        op.pick(obj, names)


# --- the inline fast paths (two ints, two strings) agree with the general path ---------

_scalars = st.one_of(st.integers(), st.text(max_size=4), st.booleans(), st.none(),
                     st.floats(allow_nan=False, allow_infinity=False))


def _outcome(fn, *args):
    try:
        r = fn(*args)
    except FlowError as e:
        return ("error", e.code, e.message)
    return ("value", r, type(r))


@given(_scalars, _scalars)
def test_comparisons_fast_path_agrees_with_the_general_one(a, b):
    from tests.sandbox.bootstrap_import import values
    assert _outcome(op.eq, a, b) == ("value", values.deep_eq(a, b), bool)
    assert _outcome(op.ne, a, b) == ("value", not values.deep_eq(a, b), bool)
    import operator
    for fn, sym, py_op in ((op.lt, "<", operator.lt), (op.le, "<=", operator.le), (op.gt, ">", operator.gt),
                           (op.ge, ">=", operator.ge)):
        def general(x, y, sym=sym, py_op=py_op):
            op._ordered(x, y, sym)
            return py_op(x, y)
        assert _outcome(fn, a, b) == _outcome(general, a, b)


@given(st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False)),
       st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False)))
def test_arithmetic_fast_path_agrees_with_the_general_one(a, b):
    def general(fn_name, x, y):
        if fn_name == "mod" and y == 0:
            raise FlowError("evaluation", "division by zero")
        op._numbers(x, y, "")
        return op._arith({"sub": x - y, "mul": x * y, "mod": x % y if y else 0}[fn_name])
    for name in ("sub", "mul", "mod"):
        got, want = _outcome(getattr(op, name), a, b), _outcome(general, name, a, b)
        assert got[0] == want[0] and (got[0] == "error" or got[1:] == want[1:]), (name, a, b, got, want)

"""flowbox.values: normalisation, rendering (language.md §1), equality, types."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.sandbox.bootstrap_import import raises_evaluation, values

# JSON values as the runtime sees them: finite floats, string keys, exact types.
scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5),
    max_leaves=30,
)


def reference_norm(v):
    """The normalisation of §1, written independently of values.py."""
    if isinstance(v, float) and v.is_integer() and abs(v) <= 2**53:
        return int(v)
    if isinstance(v, list):
        return [reference_norm(x) for x in v]
    if isinstance(v, dict):
        return {k: reference_norm(x) for k, x in v.items()}
    return v


# --- norm -------------------------------------------------------------------------


@pytest.mark.parametrize(("x", "expected"), [
    (2.0, 2), (-3.0, -3), (0.0, 0), (-0.0, 0), (3.5, 3.5), (2.0**53, 2**53),
    (-(2.0**53), -(2**53)), (2.0**53 + 2, 2.0**53 + 2), (1e300, 1e300),
    (7, 7), (True, True), ("2.0", "2.0"), (None, None), ([2.0], [2.0]),
])
def test_norm(x, expected):
    got = values.norm(x)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("x", [math.inf, -math.inf, math.nan])
def test_norm_rejects_non_finite(x):
    with raises_evaluation("number out of range"):
        values.norm(x)


# --- render and text --------------------------------------------------------------


@pytest.mark.parametrize(("v", "expected"), [
    (None, "null"), (True, "true"), (False, "false"), (2, "2"), (2.0, "2"), (-0.0, "0"),
    (3.5, "3.5"), (1e15, "1000000000000000"), (2.0**53, "9007199254740992"), (1e16, "1e+16"), (1e300, "1e+300"), (0.1, "0.1"),
    ("hé", '"hé"'), ('a"b\n', '"a\\"b\\n"'), ("1.0", '"1.0"'),
    ([], "[]"), ({}, "{}"), ([1, True, None], "[1, true, null]"),
    ({"a": 1, "b": [True, None]}, '{"a": 1, "b": [true, null]}'),
    ({"a": [1.0]}, '{"a": [1]}'), ({"b": 1, "a": 2}, '{"b": 1, "a": 2}'),
    ({"v": "1.0", "n": 2.0}, '{"v": "1.0", "n": 2}'), ([1e+20], "[1e+20]"),
    ([2.5e+20, 4.0], "[2.5e+20, 4]"), ("日本", '"日本"'),
])
def test_render(v, expected):
    assert values.render(v) == expected


@pytest.mark.parametrize("v", [math.inf, [math.nan], {"a": -math.inf}])
def test_render_rejects_non_finite(v):
    with raises_evaluation("number out of range"):
        values.render(v)


def test_render_rejects_non_json():
    with raises_evaluation("not JSON"):
        values.render({1, 2})


@pytest.mark.parametrize(("v", "expected"), [
    ("plain", "plain"), ("", ""), (2.0, "2"), (None, "null"), ([1, "a"], '[1, "a"]'),
    ({"k": "v"}, '{"k": "v"}'), (True, "true"),
])
def test_text(v, expected):
    assert values.text(v) == expected


@given(json_values)
def test_render_matches_json_dumps_of_normalised(v):
    expected = json.dumps(reference_norm(v), ensure_ascii=False, separators=(", ", ": "),
                          allow_nan=False)
    assert values.render(v) == expected


@given(json_values)
def test_render_round_trips(v):
    assert values.deep_eq(json.loads(values.render(v)), v)


# --- types ------------------------------------------------------------------------


@pytest.mark.parametrize(("v", "expected"), [
    (None, "null"), (True, "bool"), (False, "bool"), (0, "number"), (1.5, "number"),
    ("", "string"), ([], "array"), ({}, "object"),
])
def test_type_of(v, expected):
    assert values.type_of(v) == expected


@pytest.mark.parametrize(("v", "expected"), [
    (1, True), (1.5, True), (-0.0, True), (True, False), (False, False), ("1", False),
    (None, False), ([1], False),
])
def test_is_number(v, expected):
    assert values.is_number(v) is expected


@pytest.mark.parametrize(("v", "expected"), [
    (None, True), (1, True), (1.5, True), ("s", True), ([1, [2, {"a": None}]], True),
    ({"a": {"b": [True]}}, True), (math.inf, False), ([math.nan], False),
    ({1: "a"}, False), ((1, 2), False), ({"a": (1,)}, False), ({1, 2}, False),
    (object(), False), ({"a": {"b": -math.inf}}, False),
])
def test_is_json(v, expected):
    assert values.is_json(v) is expected


@given(json_values)
def test_generated_values_are_json(v):
    assert values.is_json(v)


# --- equality ---------------------------------------------------------------------


EQUALITY = [
    (1, 1.0, True), (1, True, False), (0, False, False), (True, True, True),
    (True, False, False), (None, None, True), (None, False, False), (None, 0, False),
    ("a", "a", True), ("1", 1, False), ([], [], True), ([1, 2], [1, 2.0], True),
    ([1, 2], [2, 1], False), ([1], [1, 1], False), ([True], [1], False),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True), ({"a": 1}, {"a": 1, "b": 2}, False),
    ({"a": 1}, {"b": 1}, False), ({"a": [1, {"c": None}]}, {"a": [1.0, {"c": None}]}, True),
    ({"a": None}, {}, False), ([], {}, False), ("", [], False), (2**53 + 1, 2.0**53, False),
    (10**20, 1e20, True),
]


@pytest.mark.parametrize(("a", "b", "expected"), EQUALITY)
def test_deep_eq(a, b, expected):
    assert values.deep_eq(a, b) is expected
    assert values.deep_eq(b, a) is expected


def _wrapped(v, levels=2_000):
    """v at the bottom of `levels` arrays and objects: past Python's recursion limit."""
    for i in range(levels):
        v = [v] if i % 2 else {"k": v}
    return v


@pytest.mark.parametrize(("a", "b", "expected"), EQUALITY)
def test_deep_eq_past_the_recursion_limit_is_the_same(a, b, expected):
    # Compared level by level once recursion runs out: the same answers at any depth.
    assert values.deep_eq(_wrapped(a), _wrapped(b)) is expected
    assert values.deep_eq(_wrapped(b), _wrapped(a)) is expected


@given(json_values, json_values)
def test_deep_eq_past_the_recursion_limit_agrees_with_shallow(a, b):
    assert values.deep_eq(_wrapped(a, 600), _wrapped(b, 600)) is values.deep_eq(a, b)


@given(json_values)
def test_deep_eq_reflexive(v):
    assert values.deep_eq(v, v)
    assert values.deep_eq(v, json.loads(json.dumps(v)))


@given(json_values, json_values)
def test_deep_eq_symmetric_and_eq_key_consistent(a, b):
    eq = values.deep_eq(a, b)
    assert eq == values.deep_eq(b, a)
    assert eq == (values.eq_key(a) == values.eq_key(b))


@pytest.mark.parametrize(("a", "b"), [(1, 1.0), ({"a": 1, "b": [2]}, {"b": [2.0], "a": 1})])
def test_eq_key_equal_values(a, b):
    assert values.eq_key(a) == values.eq_key(b)
    assert hash(values.eq_key(a)) == hash(values.eq_key(b))


@pytest.mark.parametrize(("a", "b"), [(1, True), (0, False), (None, False), ("1", 1),
                                      ([1], [True]), ({"a": 1}, [["a", 1]])])
def test_eq_key_distinct_values(a, b):
    assert values.eq_key(a) != values.eq_key(b)


# --- truthiness and bool checks ---------------------------------------------------


@pytest.mark.parametrize(("v", "expected"), [
    (None, False), (False, False), (0, False), (0.0, False), ("", False), ([], False),
    ({}, False), (True, True), (1, True), (-0.5, True), ("0", True), ("false", True),
    ([0], True), ({"a": None}, True),
])
def test_truthy(v, expected):
    assert values.truthy(v) is expected


@pytest.mark.parametrize("v", [True, False])
def test_expect_bool_accepts_bools(v):
    assert values.expect_bool(v, "the condition") is v


@pytest.mark.parametrize(("v", "type_name"), [
    (1, "number"), (0, "number"), (None, "null"), ("true", "string"), ([], "array"),
    ({}, "object"),
])
def test_expect_bool_rejects_others(v, type_name):
    with raises_evaluation(f"the condition of `if` must be a bool, got {type_name}"):
        values.expect_bool(v, "the condition of `if`")


@pytest.mark.parametrize("n", [0, 7, -7, 10**18 - 1, -(10**18) + 1, 10**18, -(10**18), 2**63, 10**40])
def test_text_of_an_int_is_its_json(n):
    assert values.text(n) == values.render(n) == json.dumps(n)


# --- is_json and the bindings' size: the C fast paths over lists --------------------


class Text(str):
    """A str subclass: never made by the runtime, but the walks must treat it as before."""


# Values that may not be JSON: non-finite floats, tuples, non-string keys, a str subclass.
loose_scalars = scalars | st.sampled_from([math.inf, -math.nan, (1, 2), Text("ab"), b"x"])
loose_values = st.recursive(
    loose_scalars,
    lambda inner: (st.lists(inner, max_size=5) | st.lists(st.text(max_size=4), max_size=6)
                   | st.dictionaries(st.text(max_size=5) | st.integers(0, 3), inner, max_size=4)),
    max_leaves=30,
)


def reference_is_json(v, depth=0):
    """`values.is_json` written item by item (no fast path)."""
    if depth > values.MAX_DEPTH:
        return False
    if v is None or type(v) in (bool, int, str):
        return True
    if type(v) is float:
        return math.isfinite(v)
    if type(v) is list:
        return all(reference_is_json(x, depth + 1) for x in v)
    if type(v) is dict:
        return all(type(k) is str for k in v) and all(reference_is_json(x, depth + 1) for x in v.values())
    return False


def reference_size(v):
    """`values._size` without a budget, item by item."""
    if isinstance(v, str):
        return len(v) + 2
    if isinstance(v, list):
        return 2 + len(v) + sum(reference_size(x) for x in v)
    if isinstance(v, dict):
        return 2 + len(v) * 4 + sum(len(k) + reference_size(x) for k, x in v.items())
    return 8


@given(loose_values)
def test_is_json_and_size_agree_with_item_by_item_walks(v):
    assert values.is_json(v) is reference_is_json(v)
    if not values.is_json(v):
        return
    size = reference_size(v)
    assert values._size(v, 10**9) == size
    assert values._size(v, size) == size
    assert values._size(v, size - 1) is None

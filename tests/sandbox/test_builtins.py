"""flowbox.builtins: every builtin of language.md §6.3 except the host's `now`/`uuid`."""

from __future__ import annotations

import asyncio
import inspect
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.sandbox.bootstrap_import import FlowError, raises_evaluation, values
from tests.sandbox.bootstrap_import import builtins as b

SPEC_BUILTINS = """len keys values entries range sum avg min max round floor ceil abs count all
any map filter find sort sortBy unique flatten zip first last slice concat join split lower
upper trim replace contains startsWith endsWith json parseJson str num int bool default typeOf
merge pick omit groupBy reduce flatMap""".split()


def same(got, expected):
    """Deep equality that also tells 2 from 2.0 and 1 from True."""
    if type(got) is not type(expected):
        return False
    if isinstance(got, list):
        return len(got) == len(expected) and all(same(x, y) for x, y in zip(got, expected, strict=True))
    if isinstance(got, dict):
        return list(got) == list(expected) and all(same(got[k], expected[k]) for k in got)
    return got == expected


def run(coro):
    return asyncio.run(coro)


def lam(fn):
    """A compiled Flow lambda: async, always called with (item, index)."""
    async def f(x, i):
        return fn(x, i)
    return f


# --- the table --------------------------------------------------------------------


def test_builtins_table_matches_spec():
    assert set(b.BUILTINS) == set(SPEC_BUILTINS)
    for name, fn in b.BUILTINS.items():
        assert fn.__name__ == f"b_{name}"
        assert inspect.iscoroutinefunction(fn) == (name in b.LAMBDA_BUILTINS), name
    assert {"count", "all", "any", "map", "filter", "find", "sortBy", "groupBy", "reduce", "flatMap"} == b.LAMBDA_BUILTINS


# --- sync builtins: success -------------------------------------------------------

SYNC_CASES = [
    ("len", ["héllo"], 5), ("len", [""], 0), ("len", [[1, 2, 3]], 3), ("len", [{"a": 1, "b": 2}], 2),
    ("len", ["😀"], 1),
    ("keys", [{"b": 1, "a": 2}], ["b", "a"]), ("keys", [{}], []),
    ("values", [{"b": 1, "a": [2]}], [1, [2]]),
    ("entries", [{"b": 1, "a": None}], [{"key": "b", "value": 1}, {"key": "a", "value": None}]),
    ("range", [3], [0, 1, 2]), ("range", [0], []), ("range", [-2], []), ("range", [2, 5], [2, 3, 4]),
    ("range", [5, 2], []), ("range", [-2, 1], [-2, -1, 0]), ("range", [3.0], [0, 1, 2]),
    ("sum", [[]], 0), ("sum", [[1, 2, 3]], 6), ("sum", [[1.5, 2.5]], 4), ("sum", [[0.1, 0.2]], 0.30000000000000004),
    ("sum", [[1, 0.5]], 1.5), ("sum", [[2**60, 1]], 2**60 + 1), ("sum", [[0.1] * 10], 1),
    ("avg", [[1, 2, 3, 4]], 2.5), ("avg", [[2, 4]], 3), ("avg", [[1.5]], 1.5),
    ("min", [[3, 1, 2]], 1), ("min", [[2.5, -1.5]], -1.5), ("min", [[2.0, 3]], 2),
    ("max", [[3, 1, 2]], 3), ("max", [[1, 2.5]], 2.5), ("max", [[-1]], -1),
    ("round", [2.5], 3), ("round", [-2.5], -3), ("round", [0.5], 1), ("round", [1.4], 1),
    ("round", [-0.4], 0), ("round", [7], 7), ("round", [3.0], 3), ("round", [1e20], 10**20),
    ("round", [1.005, 2], 1.01), ("round", [2.675, 2], 2.68), ("round", [1.25, 1], 1.3),
    ("round", [-1.25, 1], -1.3), ("round", [1.5, 0], 2), ("round", [3.14159, 3], 3.142),
    ("round", [1.5, 5], 1.5), ("round", [1234.5, -2], 1200), ("round", [1250, -2], 1300),
    ("round", [-1250, -2], -1300), ("round", [1249, -2], 1200), ("round", [42, 2], 42),
    ("round", [5, -1000], 0), ("round", [5.5, -1000], 0), ("round", [0.0001, 2], 0),
    ("round", [2.5, 2.0], 2.5),
    ("floor", [2.7], 2), ("floor", [-2.1], -3), ("floor", [5], 5), ("floor", [3.0], 3),
    ("ceil", [2.1], 3), ("ceil", [-2.7], -2), ("ceil", [5], 5),
    ("abs", [-3], 3), ("abs", [-2.5], 2.5), ("abs", [4.0], 4), ("abs", [0], 0),
    ("sort", [[3, 1, 2]], [1, 2, 3]), ("sort", [["b", "a", "C"]], ["C", "a", "b"]), ("sort", [[]], []),
    ("sort", [[2, 1.5, 1]], [1, 1.5, 2]),
    ("unique", [[1, 2, 1, 3, 2]], [1, 2, 3]), ("unique", [[1, 1.0, True, "1", None, None]], [1, True, "1", None]),
    ("unique", [[{"a": 1, "b": 2}, {"b": 2, "a": 1}, [1], [1.0]]], [{"a": 1, "b": 2}, [1]]),
    ("unique", [[]], []), ("unique", [[False, 0, "", None, [], {}]], [False, 0, "", None, [], {}]),
    ("flatten", [[[1, 2], [3], [], 4, [[5]]]], [1, 2, 3, 4, [5]]), ("flatten", [[]], []),
    ("zip", [[1, 2, 3], ["a", "b"]], [[1, "a"], [2, "b"]]), ("zip", [[], [1]], []),
    ("first", [[1, 2]], 1), ("first", [[]], None), ("last", [[1, 2]], 2), ("last", [[]], None),
    ("slice", [[1, 2, 3, 4], 1, 3], [2, 3]), ("slice", [[1, 2, 3], 1], [2, 3]),
    ("slice", [[1, 2, 3], -2], [2, 3]), ("slice", [[1, 2, 3], 0, 10], [1, 2, 3]),
    ("slice", ["hello", 1, -1], "ell"), ("slice", ["hello", 10], ""), ("slice", [[1, 2, 3], 2, 1], []),
    ("concat", ["a", "b", "c"], "abc"), ("concat", [[1], [2, 3], []], [1, 2, 3]),
    ("concat", [[1]], [1]), ("concat", ["", ""], ""),
    ("join", [["a", "b"], ", "], "a, b"), ("join", [[], "-"], ""), ("join", [["x"], ""], "x"),
    ("split", ["a,b,,c", ","], ["a", "b", "", "c"]), ("split", ["", ","], [""]),
    ("split", ["a--b", "--"], ["a", "b"]),
    ("lower", ["ÀbC"], "àbc"), ("upper", ["straße"], "STRASSE"), ("trim", ["  a b \n\t"], "a b"),
    ("trim", ["\u00a0x\u2003"], "x"),
    ("replace", ["a-b-c", "-", "+"], "a+b+c"), ("replace", ["aaa", "aa", "b"], "ba"),
    ("replace", ["abc", "", "-"], "-a-b-c-"), ("replace", ["abc", "x", "y"], "abc"),
    ("contains", [[1, 2], 2], True), ("contains", [[1, 2], 2.0], True), ("contains", [[1], True], False),
    ("contains", ["hello", "ell"], True), ("contains", ["hello", "x"], False),
    ("contains", [{"a": 1}, "a"], True), ("contains", [{"a": 1}, "b"], False),
    ("startsWith", ["hello", "he"], True), ("startsWith", ["hello", "lo"], False),
    ("startsWith", ["x", ""], True), ("endsWith", ["hello", "lo"], True), ("endsWith", ["hello", "he"], False),
    ("json", [{"a": [1.0, True, None], "s": "é"}], '{"a": [1, true, null], "s": "é"}'),
    ("json", ["s"], '"s"'), ("json", [None], "null"), ("json", [6 / 3], "2"),
    ("parseJson", ['{"a": [1, 2.0, 2.5], "b": null}'], {"a": [1, 2, 2.5], "b": None}),
    ("parseJson", [" 3 "], 3), ("parseJson", ['"x"'], "x"), ("parseJson", ["true"], True),
    ("parseJson", ["1e2"], 100), ("parseJson", ['{"a": 1, "a": 2}'], {"a": 2}),
    ("str", ["s"], "s"), ("str", [2.0], "2"), ("str", [[1, "a"]], '[1, "a"]'), ("str", [None], "null"),
    ("str", [True], "true"),
    ("num", [3], 3), ("num", [2.5], 2.5), ("num", [2.0], 2), ("num", ["42"], 42), ("num", [" -3.5 "], -3.5),
    ("num", ["4.0"], 4), ("num", ["1e3"], 1000), ("num", [".5"], 0.5), ("num", ["5."], 5),
    ("num", ["+7"], 7), ("num", ["007"], 7), ("num", ["9007199254740993"], 9007199254740993),
    ("int", [3.7], 3), ("int", [-3.7], -3), ("int", [5], 5), ("int", ["42"], 42), ("int", ["-3"], -3),
    ("int", ["4.0"], 4), ("int", ["4.5"], 4), ("int", ["-4.5"], -4), ("int", [" 12 "], 12),
    ("int", ["1e3"], 1000),
    ("bool", [None], False), ("bool", [0], False), ("bool", [""], False), ("bool", [[]], False),
    ("bool", [{}], False), ("bool", [False], False), ("bool", [1], True), ("bool", ["0"], True),
    ("bool", [[0]], True), ("bool", [True], True),
    ("default", [None, 5], 5), ("default", [0, 5], 0), ("default", [False, True], False),
    ("default", ["", "x"], ""),
    ("typeOf", [None], "null"), ("typeOf", [True], "bool"), ("typeOf", [1], "number"),
    ("typeOf", [1.5], "number"), ("typeOf", ["s"], "string"), ("typeOf", [[]], "array"),
    ("typeOf", [{}], "object"),
    ("merge", [{"a": 1, "b": 2}, {"b": 3, "c": 4}], {"a": 1, "b": 3, "c": 4}), ("merge", [{}, {}], {}),
    ("merge", [{"a": {"x": 1}}, {"a": {"y": 2}}], {"a": {"y": 2}}),
    ("pick", [{"a": 1, "b": 2, "c": 3}, ["c", "a"]], {"c": 3, "a": 1}),
    ("pick", [{"a": 1}, ["a", "zz"]], {"a": 1}), ("pick", [{"a": 1}, []], {}),
    ("omit", [{"a": 1, "b": 2, "c": 3}, ["b", "zz"]], {"a": 1, "c": 3}), ("omit", [{"a": 1}, []], {"a": 1}),
]


@pytest.mark.parametrize(("name", "args", "expected"), SYNC_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(SYNC_CASES)])
def test_sync_builtin(name, args, expected):
    got = b.BUILTINS[name](*args)
    assert same(got, expected), (got, expected)


def test_every_sync_builtin_has_success_cases():
    tested = {c[0] for c in SYNC_CASES}
    assert tested == set(SPEC_BUILTINS) - b.LAMBDA_BUILTINS


def test_results_are_new_values():
    xs = [1, 2]
    for fn in (b.b_sort, b.b_unique, b.b_flatten):
        ys = fn(xs)
        ys.append(9)
        assert xs == [1, 2]
    o = {"a": 1}
    b.b_merge(o, {"b": 2})
    b.b_omit(o, ["a"])
    assert o == {"a": 1}


# --- sync builtins: errors --------------------------------------------------------

SYNC_ERRORS = [
    ("len", [5], "len: expected a string, array or object, got number"),
    ("len", [None], "len: expected a string, array or object, got null"),
    ("keys", [[1]], "keys: expected an object, got array"), ("values", ["s"], "values: expected an object, got string"),
    ("entries", [None], "entries: expected an object, got null"),
    ("range", ["3"], "range: expected an int, got string"), ("range", [2.5], "range: expected an int, got 2.5"),
    ("range", [True], "range: expected an int, got bool"),
    ("range", [1, None], "range: expected an int for the end, got null"),
    ("range", [10**9], "range: too many items"), ("range", [], "range: expected 1 or 2 arguments, got 0"),
    ("range", [1, 2, 3], "range: expected 1 or 2 arguments, got 3"),
    ("sum", [[1, "2"]], "sum: expected an array of numbers, item 1 is string"),
    ("sum", [[True]], "sum: expected an array of numbers, item 0 is bool"),
    ("sum", [5], "sum: expected an array, got number"), ("sum", [[1.7e308, 1.7e308]], "sum: number out of range"),
    ("avg", [[]], "avg: the array is empty"), ("avg", [[None]], "avg: expected an array of numbers, item 0 is null"),
    ("min", [[]], "min: the array is empty"), ("max", [[]], "max: the array is empty"),
    ("min", [["a", "b"]], "min: expected an array of numbers, item 0 is string"),
    ("max", [{"a": 1}], "max: expected an array, got object"),
    ("round", ["2.5"], "round: expected a number, got string"),
    ("round", [2.5, "1"], "round: expected an int for the digits, got string"),
    ("round", [2.5, 0.5], "round: expected an int for the digits, got 0.5"),
    ("round", [True], "round: expected a number, got bool"),
    ("floor", [None], "floor: expected a number, got null"), ("ceil", ["1"], "ceil: expected a number, got string"),
    ("abs", [False], "abs: expected a number, got bool"),
    ("sort", [[1, "a"]], "sort: the items must be all numbers or all strings, got number and string"),
    ("sort", [[True, 1]], "sort: the items must be numbers or strings, got bool"),
    ("sort", [[[1], [2]]], "sort: the items must be numbers or strings, got array"),
    ("sort", [[None]], "got null"), ("sort", ["cba"], "sort: expected an array, got string"),
    ("unique", ["aab"], "unique: expected an array, got string"),
    ("flatten", [None], "flatten: expected an array, got null"),
    ("zip", [[1], "ab"], "zip: expected an array for the second argument, got string"),
    ("zip", [{}, []], "zip: expected an array for the first argument, got object"),
    ("first", ["abc"], "first: expected an array, got string"), ("last", [None], "last: expected an array, got null"),
    ("slice", [{"a": 1}, 0], "slice: expected an array or a string, got object"),
    ("slice", [[1], "0"], "slice: expected an int for the start, got string"),
    ("slice", [[1], 0, True], "slice: expected an int for the end, got bool"),
    ("concat", ["a", [1]], "concat: expected all strings or all arrays, got string, array"),
    ("concat", [1, 2], "concat: expected all strings or all arrays, got number"),
    ("concat", [], "concat: expected at least one argument"),
    ("join", [["a", 1], ","], "join: expected an array of strings, item 1 is number"),
    ("join", [["a"], 1], "join: expected a string for the separator, got number"),
    ("join", ["ab", ","], "join: expected an array, got string"),
    ("split", ["a,b", ""], "split: the separator must not be empty"),
    ("split", [1, ","], "split: expected a string, got number"),
    ("split", ["a", None], "split: expected a string for the separator, got null"),
    ("lower", [1], "lower: expected a string, got number"), ("upper", [None], "upper: expected a string, got null"),
    ("trim", [[" a "]], "trim: expected a string, got array"),
    ("replace", ["a", 1, "b"], "replace: expected a string for the text to replace, got number"),
    ("replace", ["a", "a", None], "replace: expected a string for the replacement, got null"),
    ("replace", [None, "a", "b"], "replace: expected a string, got null"),
    ("contains", ["abc", 1], "contains: expected a string to look for in a string, got number"),
    ("contains", [{"a": 1}, 1], "contains: expected a string key to look for in an object, got number"),
    ("contains", [5, 5], "contains: expected a string, array or object, got number"),
    ("contains", [None, "a"], "contains: expected a string, array or object, got null"),
    ("startsWith", [1, "a"], "startsWith: expected a string, got number"),
    ("startsWith", ["a", None], "startsWith: expected a string for the prefix, got null"),
    ("endsWith", ["a", 1], "endsWith: expected a string for the suffix, got number"),
    ("parseJson", ["{bad"], "parseJson: invalid JSON at line 1, column 2"),
    ("parseJson", ["[1,\n 2,,]"], "parseJson: invalid JSON at line 2, column 4"),
    ("parseJson", [""], "parseJson: invalid JSON at line 1, column 1"),
    ("parseJson", ["NaN"], "parseJson: NaN is not valid JSON"),
    ("parseJson", ["[Infinity]"], "parseJson: Infinity is not valid JSON"),
    ("parseJson", ["-Infinity"], "parseJson: -Infinity is not valid JSON"),
    ("parseJson", ["1e400"], "parseJson: number out of range"),
    ("parseJson", ["[" * 100_000], "parseJson:"),
    ("parseJson", [5], "parseJson: expected a string, got number"),
    ("num", ["abc"], 'num: cannot parse "abc" as a number'), ("num", [""], 'num: cannot parse "" as a number'),
    ("num", ["inf"], "cannot parse"), ("num", ["nan"], "cannot parse"), ("num", ["0x10"], "cannot parse"),
    ("num", ["1_000"], "cannot parse"), ("num", ["1e999"], "num: number out of range"),
    ("num", ["١٢"], "cannot parse"), ("num", ["1 2"], "cannot parse"),
    ("num", [True], "num: expected a number or a string, got bool"),
    ("num", [None], "num: expected a number or a string, got null"),
    ("num", [[1]], "num: expected a number or a string, got array"),
    ("int", ["abc"], 'int: cannot parse "abc" as a number'), ("int", [False], "int: expected a number or a string, got bool"),
    ("int", [{}], "int: expected a number or a string, got object"),
    ("merge", [{"a": 1}, None], "merge: expected an object for the second argument, got null"),
    ("merge", [[1], {}], "merge: expected an object for the first argument, got array"),
    ("pick", [None, ["a"]], "pick: expected an object, got null"),
    ("pick", [{"a": 1}, "a"], "pick: expected an array for the keys, got string"),
    ("pick", [{"a": 1}, [1]], "pick: expected an array of strings, item 0 is number"),
    ("omit", [[1], ["a"]], "omit: expected an object, got array"),
    ("omit", [{"a": 1}, [None]], "omit: expected an array of strings, item 0 is null"),
]


@pytest.mark.parametrize(("name", "args", "message"), SYNC_ERRORS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(SYNC_ERRORS)])
def test_sync_builtin_error(name, args, message):
    with raises_evaluation(message):
        b.BUILTINS[name](*args)


def test_parse_json_error_details():
    try:
        b.b_parseJson('{"a": }')
    except FlowError as e:
        assert e.code == "evaluation"
        assert e.details == {"line": 1, "column": 7, "position": 6}
    else:
        raise AssertionError("no error")


def test_num_error_truncates_long_strings():
    try:
        b.b_num("x" * 100)
    except FlowError as e:
        assert len(e.message) < 80 and "…" in e.message
    else:
        raise AssertionError("no error")


# --- lambda builtins --------------------------------------------------------------

LAMBDA_CASES = [
    ("count", [1, 2, 3], lambda x, i: x > 1, 2), ("count", [], lambda x, i: True, 0),
    ("count", ["a", "b"], lambda x, i: i == 1, 1),
    ("all", [1, 2], lambda x, i: x > 0, True), ("all", [1, -2], lambda x, i: x > 0, False),
    ("all", [], lambda x, i: False, True),
    ("any", [1, 2], lambda x, i: x > 1, True), ("any", [1, 2], lambda x, i: x > 5, False),
    ("any", [], lambda x, i: True, False),
    ("map", [1, 2, 3], lambda x, i: x * 10 + i, [10, 21, 32]), ("map", [], lambda x, i: x, []),
    ("map", [{"a": 1}], lambda x, i: x["a"], [1]),
    ("filter", [1, 2, 3, 4], lambda x, i: x % 2 == 0, [2, 4]), ("filter", [5, 6], lambda x, i: i == 0, [5]),
    ("find", [1, 2, 3], lambda x, i: x > 1, 2), ("find", [1, 2], lambda x, i: x > 5, None),
    ("find", [None, 0], lambda x, i: i == 0, None),
    ("sortBy", [{"n": 3}, {"n": 1}, {"n": 2}], lambda x, i: x["n"], [{"n": 1}, {"n": 2}, {"n": 3}]),
    ("sortBy", ["bb", "a", "ccc"], lambda x, i: -len(x), ["ccc", "bb", "a"]),
    ("sortBy", ["x", "y", "z"], lambda x, i: "k", ["x", "y", "z"]),  # stable
    ("sortBy", [1, 2, 3], lambda x, i: -i, [3, 2, 1]), ("sortBy", [], lambda x, i: 1, []),
    ("sortBy", ["b1", "a1", "b2", "a2"], lambda x, i: x[0], ["a1", "a2", "b1", "b2"]),
    ("sortBy", [1, 2], lambda x, i: 2.5 - x, [2, 1]),
    ("groupBy", ["apple", "bob", "avocado", "cat", "banana"], lambda x, i: x[0],
     [{"key": "a", "items": ["apple", "avocado"]}, {"key": "b", "items": ["bob", "banana"]},
      {"key": "c", "items": ["cat"]}]),
    ("groupBy", [], lambda x, i: "k", []),
    ("groupBy", [1, 2, 3], lambda x, i: "odd" if x % 2 else "even",
     [{"key": "odd", "items": [1, 3]}, {"key": "even", "items": [2]}]),
    ("flatMap", [1, 2], lambda x, i: [x, i], [1, 0, 2, 1]), ("flatMap", [1, 2], lambda x, i: [], []),
    ("flatMap", [[1], [2, [3]]], lambda x, i: x, [1, 2, [3]]),
]
# `reduce` passes (accumulator, item) and takes a start value: tests/lang/test_reduce_flatmap.py.
ITEM_LAMBDA_BUILTINS = b.LAMBDA_BUILTINS - {"reduce"}


@pytest.mark.parametrize(("name", "xs", "fn", "expected"), LAMBDA_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(LAMBDA_CASES)])
def test_lambda_builtin(name, xs, fn, expected):
    got = run(b.BUILTINS[name](xs, lam(fn)))
    assert same(got, expected), (got, expected)


def test_every_lambda_builtin_has_cases():
    assert {c[0] for c in LAMBDA_CASES} == ITEM_LAMBDA_BUILTINS


def test_async_lambda_with_awaits_inside():
    async def f(x, i):
        await asyncio.sleep(0)
        return x > 1
    assert run(b.b_count([1, 2, 3], f)) == 2
    assert run(b.b_filter([1, 2, 3], f)) == [2, 3]


@pytest.mark.parametrize(("name", "stops_after"), [("all", 2), ("any", 2), ("find", 2)])
def test_short_circuit(name, stops_after):
    calls = []

    async def f(x, i):
        calls.append(i)
        return (x == 2) if name != "all" else (x != 2)
    run(b.BUILTINS[name]([1, 2, 3, 4], f))
    assert calls == list(range(stops_after))


@pytest.mark.parametrize("name", sorted(ITEM_LAMBDA_BUILTINS))
def test_lambda_gets_item_and_index_in_order(name):
    calls = []

    async def f(x, i):
        calls.append((x, i))
        # A result that neither fails nor stops early: all() goes on while true.
        return {"groupBy": "k", "map": x, "sortBy": 0, "all": True, "flatMap": []}.get(name, False)
    run(b.BUILTINS[name](["a", "b", "c"], f))
    assert calls == [("a", 0), ("b", 1), ("c", 2)]


LAMBDA_ERRORS = [
    ("count", [1], lambda x, i: 1, "count: the lambda's result must be a bool, got number"),
    ("all", [1], lambda x, i: None, "all: the lambda's result must be a bool, got null"),
    ("any", [1], lambda x, i: "yes", "any: the lambda's result must be a bool, got string"),
    ("filter", [1], lambda x, i: x, "filter: the lambda's result must be a bool, got number"),
    ("find", [1], lambda x, i: [], "find: the lambda's result must be a bool, got array"),
    ("sortBy", [1, 2], lambda x, i: "a" if x == 1 else 1,
     "sortBy: the lambda's results must be all numbers or all strings, got string and number"),
    ("sortBy", [1], lambda x, i: True, "sortBy: the lambda's results must be numbers or strings, got bool"),
    ("sortBy", [1], lambda x, i: None, "got null"),
    ("groupBy", [1], lambda x, i: 1, "groupBy: the lambda must return a string, got number"),
    ("groupBy", [1], lambda x, i: None, "groupBy: the lambda must return a string, got null"),
]


@pytest.mark.parametrize(("name", "xs", "fn", "message"), LAMBDA_ERRORS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(LAMBDA_ERRORS)])
def test_lambda_builtin_error(name, xs, fn, message):
    with raises_evaluation(message):
        run(b.BUILTINS[name](xs, lam(fn)))


@pytest.mark.parametrize("name", sorted(ITEM_LAMBDA_BUILTINS))
@pytest.mark.parametrize(("xs", "type_name"), [(None, "null"), ("abc", "string"), ({"a": 1}, "object")])
def test_lambda_builtin_needs_an_array(name, xs, type_name):
    with raises_evaluation(f"{name}: expected an array, got {type_name}"):
        run(b.BUILTINS[name](xs, lam(lambda x, i: True)))


def test_lambda_errors_propagate():
    async def f(x, i):
        raise FlowError("evaluation", "boom")
    with raises_evaluation("boom"):
        run(b.b_map([1], f))


# --- properties -------------------------------------------------------------------

numbers = st.integers(-(10**6), 10**6) | st.floats(-1e6, 1e6, allow_nan=False)


@given(st.lists(numbers) | st.lists(st.text(max_size=4)))
def test_sort_matches_sorted(xs):
    assert b.b_sort(xs) == sorted(xs)


@given(st.lists(st.tuples(st.integers(0, 3), st.integers())))
def test_sort_by_is_stable(pairs):
    xs = [{"k": k, "v": v} for k, v in pairs]
    got = run(b.b_sortBy(xs, lam(lambda x, i: x["k"])))
    assert got == sorted(xs, key=lambda x: x["k"])


json_scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([1.0, 2.0, 0.5]) | st.text(max_size=2)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=2), inner, max_size=3), max_leaves=10)


@given(st.lists(json_values, max_size=12))
def test_unique_keeps_first_occurrences(xs):
    # Quadratic reference: keep an item when no earlier kept item is deep-equal.
    expected = []
    for x in xs:
        if not any(values.deep_eq(x, y) for y in expected):
            expected.append(x)
    got = b.b_unique(xs)
    assert len(got) == len(expected)
    assert all(g is e for g, e in zip(got, expected, strict=True))


@given(json_values)
def test_json_parse_round_trip(v):
    assert values.deep_eq(b.b_parseJson(b.b_json(v)), v)
    assert b.b_json(b.b_parseJson(b.b_json(v))) == b.b_json(v)


@given(st.integers(-(10**6), 10**6), st.integers(-(10**6), 10**6))
def test_range_matches_python(a, c):
    lo, hi = sorted((a, c))
    if hi - lo <= 1000:
        assert b.b_range(lo, hi) == list(range(lo, hi))


@given(st.floats(-1e9, 1e9, allow_nan=False))
def test_round_is_half_away_from_zero(x):
    r = b.b_round(x)
    assert type(r) is int
    assert abs(r - x) <= 0.5
    if abs(r - x) == 0.5:
        assert abs(r) > abs(x)


@given(st.lists(st.integers()))
def test_sum_of_ints_is_exact_int(xs):
    assert same(b.b_sum(xs), sum(xs))


def test_json_is_render():
    v = {"a": [1.0, {"b": "é"}]}
    assert b.b_json(v) == values.render(v) == json.dumps({"a": [1, {"b": "é"}]}, ensure_ascii=False)

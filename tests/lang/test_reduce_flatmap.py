"""`reduce(xs, init, (acc, x) => …)` and `flatMap(xs, x => [...])`: their types, the
F-codes for a lambda of the wrong arity or result, the code they compile to, and the
sandbox's implementation (flowbox/builtins.py) against Python's own."""

from __future__ import annotations

import asyncio
import functools
import itertools

from hypothesis import given
from hypothesis import strategies as st

from flow_kernel import SourceFile
from flow_kernel.lang import check
from flow_kernel.lang.compiler import compile_source
from tests.sandbox.bootstrap_import import builtins as b
from tests.sandbox.bootstrap_import import raises_evaluation


def found(source: str) -> list[tuple[str, str, str]]:
    result = check(SourceFile("main.flow", source))
    return [(d.code, source[d.span.start:d.span.end], d.message) for d in result.diagnostics]


def type_of(expr: str) -> str:
    """The static type of `expr`, as the F3001 of assigning it to a `bool` names it."""
    messages = [m for code, _, m in found(f"let probe: bool = {expr}\nprint probe") if code == "F3001"]
    assert len(messages) == 1, messages
    return messages[0].removeprefix("expected `bool`, found `").removesuffix("`")


# -- types ----------------------------------------------------------------------------------------
def test_reduce_is_typed_by_its_accumulator() -> None:
    assert type_of("reduce([1, 2], 0, (acc, x) => acc + x)") == "int"
    assert type_of('reduce(["a"], "", (acc, s) => acc + s)') == "string"
    assert type_of("reduce([1.5], 0.0, (acc, x) => acc + x)") == "number"
    assert type_of("reduce([1, 2], [], (acc, x) => [x])") == "int[]"  # the start `[]` fits the lambda's type


def test_flatmap_is_the_array_of_the_lambdas_items() -> None:
    assert type_of('flatMap(["a b"], s => split(s, " "))') == "string[]"
    assert type_of("flatMap([1, 2], (x, i) => [x, i])") == "int[]"


def test_the_lambda_parameters_get_the_accumulator_and_item_types() -> None:
    assert found('let n = reduce(["a"], 0, (acc, s) => acc + len(s))\nprint n') == []
    assert [c for c, _, _ in found('let n = reduce(["a"], 0, (acc, s) => acc + s)\nprint n')] == ["F3004"]  # int + string


# -- diagnostics ----------------------------------------------------------------------------------
def test_a_lambda_of_the_wrong_arity_is_f3019() -> None:
    assert found("print reduce([1], 0, x => x)") == [
        ("F3019", "x => x", "the lambda given to `reduce` must take 2 parameters, found 1")]
    assert found("print flatMap([1], (x, i, j) => [x])") == [
        ("F3019", "(x, i, j) => [x]", "the lambda given to `flatMap` must take 1 or 2 parameters, found 3")]


def test_a_reduce_lambda_that_changes_the_accumulators_type_is_f3001() -> None:
    assert found("print reduce([1.5], 0, (acc, x) => acc + x)") == [
        ("F3001", "acc + x", "the lambda of `reduce` must give the accumulator's type `int` (the start value's), "
                             "found `number`")]


def test_a_flatmap_lambda_that_gives_no_array_is_f3001() -> None:
    assert found("print flatMap([1], x => x + 1)") == [
        ("F3001", "x + 1", "the lambda of `flatMap` must give an array (its items go into the result), found `int`")]


def test_arity_and_argument_kinds_are_the_builtin_codes() -> None:
    assert [c for c, _, _ in found("print reduce([1], 0)")] == ["F3005"]
    assert found('print reduce("abc", 0, (acc, x) => acc)') == [
        ("F3001", '"abc"', "`reduce` expects an array here, found `\"abc\"`")]
    assert [c for c, _, _ in found("print flatMap([1], 2)")] == ["F3001"]


def test_their_lambdas_are_pure() -> None:
    source = 'agent a { model: "scripted", script: ["x"] }\nprint flatMap([1], x => [a("hi")])'
    assert [c for c, _, _ in found(source)] == ["F5020"]


def test_they_compile_to_awaited_runtime_builtins() -> None:
    compiled = compile_source(SourceFile("main.flow", "print reduce([1], 0, (a, x) => a + x)\nprint flatMap([1], x => [x])"))
    assert compiled.python is not None
    assert "await rt.fn_reduce([1], 0, l_" in compiled.python and "await rt.fn_flatMap([1], l_" in compiled.python


# -- the sandbox's implementation -----------------------------------------------------------------
def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def lam(fn):  # type: ignore[no-untyped-def]
    async def f(a, b):  # type: ignore[no-untyped-def]
        return fn(a, b)
    return f


@given(st.lists(st.integers(min_value=-10**6, max_value=10**6), max_size=30), st.integers(-100, 100))
def test_reduce_agrees_with_functools_reduce(xs: list[int], init: int) -> None:
    assert run(b.b_reduce(xs, init, lam(lambda acc, x: acc * 3 - x))) == functools.reduce(lambda acc, x: acc * 3 - x, xs, init)


@given(st.lists(st.lists(st.integers(), max_size=4), max_size=10))
def test_flatmap_agrees_with_chaining_the_lambdas_arrays(xss: list[list[int]]) -> None:
    got = run(b.b_flatMap(xss, lam(lambda xs, i: [*xs, i])))
    assert got == list(itertools.chain.from_iterable([*xs, i] for i, xs in enumerate(xss)))


def test_flatmap_refuses_a_lambda_result_that_is_no_array() -> None:
    with raises_evaluation("flatMap: the lambda must return an array, got number"):
        run(b.b_flatMap([1], lam(lambda x, i: x)))
    with raises_evaluation("reduce: expected an array"):
        run(b.b_reduce("ab", 0, lam(lambda a, x: a)))

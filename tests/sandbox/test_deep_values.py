"""A value nested deeper than values.MAX_DEPTH (256 levels) is a `limit-exceeded` error
where it would be encoded — turned into text, sent to the host, returned — before json's
C encoder recurses into it. Real Flow source builds the values; the same sandbox process
then runs the next program: what a run leaves behind nested that deep is emptied a
container at a time once its reply is written. A value built and freed within a run
recurses on V8's stack as it is freed: the sandbox's 64 MiB stack (sandbox/stack.py) takes
20,000 levels, which V8's default ~1 MiB does not — and a run that goes past the stack
fails `worker-crashed` saying so, at its line (docs/sandbox.md, "The stack")."""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import pytest

import tests.sandbox.bootstrap_import  # noqa: F401 - makes `flowbox` importable
from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.executors import SandboxExecutor
from flow_kernel.runtime.run import run_compiled
from flow_kernel.sandbox import stack
from flow_kernel.sandbox.pool import SandboxPool

values = importlib.import_module("flowbox.values")
FlowError = importlib.import_module("flowbox.errors").FlowError

# 20,000 levels: past where the sandbox's C recursion (json's encoder, repr, hash, ==, and
# freeing the value) overflows V8's stack (~5,000–6,000).
DEEP = """limits {{ steps: 1000000 }}
var x: any = []
var n = 0
while n < 20000 {{
  x = [x]
  n = n + 1
}}
{use}
"""
SHARED = DEEP.replace("var x: any = []", 'let base = [1, [2]]\nvar x: any = base').format(use="{ base: base }")
CASES = {
    "print": ("print(x)\n1", "a value turned into text", 8),
    "interpolation": ('let s = "a ${x}"\nlen(s)', "a value turned into text", 8),
    "result": ("x", "the run's result", None),
    "record": ("{ deep: x }", "the run's result", None),
    "artifact": ('publish "deep.json" x\n1', "the artifact 'deep.json'", 8),
    "agent context": ('agent a { model: "scripted", output: number, script: [1] }\na("hi", context: x)',
                      "the `context` of an agent call", 9),
    "workflow input": ("workflow same(v: any) -> any {\n  return v\n}\nsame(x)", "an input of `same`", 11),
}

# Built and freed (or compared) within the run, each at 20,000 levels; the run's own result comes back.
FREED = {
    "a variable rebound": (DEEP.format(use="x = 1\nn"), 20000),
    "a function's local": ("""limits { steps: 1000000 }
fn build(k: number) -> number {
  var x: any = []
  var i = 0
  while i < k {
    x = [x]
    i = i + 1
  }
  return i
}
build(20000) + 1
""", 20001),
    "a chain of records": ("""limits { steps: 1000000 }
var head: any = null
var n = 0
while n < 20000 {
  head = { v: n, next: head }
  n = n + 1
}
head = null
n
""", 20000),
    # Compared past Python's recursion limit (~480 levels): level by level, not `isolate`.
    "values compared": ("""limits { steps: 1000000 }
var x: any = []
var y: any = []
var n = 0
while n < 20000 {
  x = [x]
  y = [y]
  n = n + 1
}
[x == y, x != y, y in [x], contains([1, x], y), len(unique([x, y, 1])), x == [y], unique([1, 1.0, true])]
""", [True, False, True, True, 2, False, [1, True]]),
}


def test_the_depth_is_exact_and_cycles_and_wide_values_are_answered() -> None:
    def chain(depth: int, wrap: Any = list) -> Any:
        v: Any = 1
        for _ in range(depth):
            v = wrap(v)
        return v

    assert not values.nests_deeper(chain(1000, lambda v: [v]), 1000)
    assert values.nests_deeper(chain(1001, lambda v: [v]), 1000)
    assert values.nests_deeper(chain(1001, lambda v: {"k": v}), 1000)
    assert values.nests_deeper(chain(1001, lambda v: (v,)), 1000)
    assert not values.nests_deeper(chain(5, lambda v: [1, "x", v, {"a": 2}]), 6)  # the last dict: level 6
    assert values.nests_deeper(chain(5, lambda v: [1, "x", v, {"a": 2}]), 5)
    assert not values.nests_deeper("x" * 5000, 0) and not values.nests_deeper([], 1)
    loop: list[Any] = []
    loop.append(loop)
    assert values.nests_deeper(loop, 1000)
    assert not values.is_json(loop)
    assert not values.is_json(chain(100_000, lambda v: [v]))  # no RecursionError: not recursive
    assert values.is_json(chain(values.MAX_DEPTH // 2, lambda v: {"k": [v, 2.5, None, True]}))  # MAX_DEPTH levels
    assert not values.is_json(chain(values.MAX_DEPTH // 2 + 1, lambda v: {"k": [v, 2.5, None, True]}))
    assert not values.is_json([{"k": [1, float("inf")]}]) and not values.is_json({1: 2})
    with pytest.raises(FlowError) as caught:
        values.render(chain(values.MAX_DEPTH + 1, lambda v: [v]))
    assert (caught.value.code, caught.value.details) == ("limit-exceeded", {"limit": "depth", "value": values.MAX_DEPTH})
    assert values.render(chain(3, lambda v: [v])) == "[[[1]]]"


def test_deep_values_from_flow_source_fail_with_limit_exceeded_and_the_sandbox_lives_on() -> None:
    async def go() -> tuple[dict[str, Any], Any, list[int]]:
        pool = SandboxPool(warm=1)
        executor = SandboxExecutor(pool)
        try:
            pids: list[int] = []
            failures = {}
            for name, (use, _, _) in CASES.items():
                compiled = compile_source(SourceFile(f"{name}.flow", DEEP.format(use=use)))
                assert compiled.ok, [d.message for d in compiled.check.errors]
                failures[name] = (await run_compiled(compiled, executor)).error
                pids += pool.pids()
            # A result sharing its containers with a deep value the run leaves behind (which
            # the sandbox empties once the reply is written) is sent whole.
            shared = compile_source(SourceFile("shared.flow", SHARED))
            failures["shared"] = await run_compiled(shared, executor)
            for name, (source, _) in FREED.items():
                failures[name] = await run_compiled(compile_source(SourceFile(f"{name}.flow", source)), executor)
            after = await run_compiled(compile_source(SourceFile("next.flow", "[[1], 2]")), executor)
            # The deepest value allowed reaches the host whole (its decoder must take it).
            deepest = DEEP.replace("20000", str(values.MAX_DEPTH - 1)).format(use="x")
            failures["deepest"] = await run_compiled(compile_source(SourceFile("deepest.flow", deepest)), executor)
            return failures, after, pids + pool.pids()
        finally:
            await executor.close()

    failures, after, pids = asyncio.run(go())
    shared, deepest = failures.pop("shared"), failures.pop("deepest")
    for name, (_, result) in FREED.items():
        outcome = failures.pop(name)
        assert outcome.error is None and outcome.result == result, (name, outcome.error)
    expected: Any = []
    for _ in range(values.MAX_DEPTH - 1):
        expected = [expected]
    assert deepest.error is None and deepest.result == expected, deepest.error
    assert shared.error is None and shared.result == {"base": [1, [2]]}, shared.error
    for name, (_, what, line) in CASES.items():
        error = failures[name]
        assert error is not None, name
        assert (error.code, error.details.get("limit"), error.details.get("value")) == (
            "limit-exceeded", "depth", values.MAX_DEPTH), (name, error.code, error.message)
        assert error.message.startswith(what), (name, error.message)
        if line is not None:
            assert error.span is not None and error.span["line"] == line, (name, error.span)
    assert after.error is None and after.result == [[1], 2]
    assert len(pids) == len(CASES) + 1 and len(set(pids)) == 1, pids  # one process throughout: none ended


def test_past_the_stack_a_run_fails_saying_why_at_its_line_and_the_next_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    # V8's own stack (~1 MiB), where freeing the 20,000-level value of FREED ends the process.
    monkeypatch.setattr(stack, "plan", lambda: stack.StackPlan(None, None))

    async def go() -> tuple[Any, Any, list[int]]:
        pool = SandboxPool(warm=1)
        executor = SandboxExecutor(pool)
        try:
            assert (await run_compiled(compile_source(SourceFile("first.flow", "1")), executor)).result == 1
            pids = pool.pids()
            source = FREED["a variable rebound"][0]
            crashed = await run_compiled(compile_source(SourceFile("freed.flow", source)), executor)
            after = await run_compiled(compile_source(SourceFile("next.flow", "[[1], 2]")), executor)
            return crashed, after, pids + pool.pids()
        finally:
            await executor.close()

    crashed, after, pids = asyncio.run(go())
    error = crashed.error
    assert error is not None and error.code == "worker-crashed", error
    assert error.message.startswith("the sandbox process died: it ran out of stack (1 MiB): most likely a value "
                                    "nested about 4,000 arrays or objects deep or more"), error.message
    assert error.span is not None and (error.span["file"], error.span["line"]) == ("freed.flow", 8), error.span  # `x = 1`
    assert after.error is None and after.result == [[1], 2]
    assert len(pids) == 2 and pids[0] != pids[1], pids  # a fresh process for the next program


def test_a_run_that_grew_the_stack_past_the_default_leaves_its_process_behind() -> None:
    # 60,000 levels freed touch ~9 MB of stack, which Linux never gives back: the pool
    # recycles that process after the run (20,000 levels, ~3 MB, above: the same process).
    async def go() -> tuple[Any, list[int], int]:
        pool = SandboxPool(warm=1)
        executor = SandboxExecutor(pool)
        try:
            assert (await run_compiled(compile_source(SourceFile("first.flow", "1")), executor)).result == 1
            pids = pool.pids()
            freed = await run_compiled(compile_source(SourceFile("freed.flow", DEEP.replace("20000", "60000").format(
                use="x = 1\nn"))), executor)
            assert (await run_compiled(compile_source(SourceFile("next.flow", "2")), executor)).result == 2
            return freed, pids + pool.pids(), stack.stack_bytes(pool.pids()[0])
        finally:
            await executor.close()

    freed, pids, stack_now = asyncio.run(go())
    assert freed.error is None and freed.result == 60000, freed.error
    assert len(pids) == 2 and pids[0] != pids[1], pids
    assert 0 < stack_now <= stack.RECYCLE_STACK  # the new process's, read as the pool reads it

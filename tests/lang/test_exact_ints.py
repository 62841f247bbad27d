"""lang/exact_ints.py: operator calls on operands that can only be ints are written as
Python operators — only those, and with the same outcome (result, prints, steps, error
code, message and Flow span) as the runtime calls they replace."""

from __future__ import annotations

import ast as py
import asyncio
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang import exact_ints
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.run import run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor

LIMITS = "limits { steps: 1000000 }\n"
WF_LIMITS = "  limits { steps: 1000000 }\n"

# Each program does its work in a workflow (top-level bindings go through rt.bind and stay calls).
PROGRAMS = {
    "primes": LIMITS + """workflow primes(n: int) -> int {
""" + WF_LIMITS + """  var found = 0
  for x in range(2, n) {
    var d = 2
    var prime = true
    while d * d <= x { if x % d == 0 { prime = false
      break }
      d = d + 1 }
    if prime { found = found + 1 }
  }
  return found
}
primes(200)""",
    "big ints and negatives": LIMITS + """workflow big(n: int) -> int[] {
""" + WF_LIMITS + """  var a = 1
  for i in range(70) { a = a * 2 }
  let b = -5
  var c = 0 - a
  for k, i in [3, 4] { c = c + i * 10 - k }
  return [a, a * a - 1, b * 3, c, a == a + 0 ? 1 : 0, b < -4 ? 1 : 0, len("abc") * b]
}
big(1)""",
    "ints meet any": LIMITS + """workflow mixed(n: int) -> any {
""" + WF_LIMITS + """  let f: any = 2.5
  let t: any = true
  var z = 0
  z = z + 1
  var w = 0
  w = f
  var s = 0
  for x in [1, 2, 3] { s = s + x }
  return [z + 1, w + 1, s * 2, n + 1, z == 1, w > 2]
}
mixed(4)""",
    "an error beside inlined ints": LIMITS + """workflow fails(n: int) -> int {
""" + WF_LIMITS + """  var d = 3
  var i = 0
  while i < 10 { d = d - 1
    i = i + d % d }
  return i
}
fails(1)""",
    "a bool where an int was": LIMITS + """workflow bad(n: int) -> any {
""" + WF_LIMITS + """  let t: any = true
  var k = 1
  k = t
  var j = 1
  j = j * 3
  return [j, k + 1]
}
bad(1)""",
    "step ceiling inside inlined loop": "limits { steps: 500 }\n" + """workflow spin(n: int) -> int {
  limits { steps: 500 }
  var i = 0
  while i >= 0 { i = i + 1 }
  return i
}
spin(1)""",
}


def compiled(source: str) -> Any:
    result = compile_source(SourceFile("t.flow", source))
    assert result.ok, [d.message for d in result.check.errors]
    return result


def outcome(result: Any) -> tuple[Any, ...]:
    out = asyncio.run(run_compiled(result, InProcessExecutor()))
    error = out.error
    prints = [e["data"]["text"] for e in out.events if e.get("type") == "print"]
    return (out.result, out.steps, prints,
            None if error is None else (error.code, error.message, error.details, getattr(error, "span", None)))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_same_outcome_as_the_runtime_calls(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    inlined = compiled(PROGRAMS[name])
    operators = [n for n in py.walk(py.parse(inlined.python)) if isinstance(n, py.BinOp | py.Compare)]
    assert operators, "the program should exercise the inline operators"
    got = outcome(inlined)
    # The same program with every operator a runtime call (the error's span is looked up
    # while the generator is still patched: the source map builds the module again).
    monkeypatch.setattr(exact_ints.IntTracker, "inline", lambda self: None)
    calls = compiled(PROGRAMS[name])
    assert not [n for n in py.walk(py.parse(calls.python)) if isinstance(n, py.BinOp)]
    assert got == outcome(calls)


def test_only_operands_that_can_only_be_ints_are_inlined() -> None:
    text = compiled(PROGRAMS["ints meet any"]).python
    assert "v_z = v_z + 1" in text  # bound only to ints
    assert "rt.add(v_w, 1)" in text  # bound to an `any`
    assert "rt.add(v_s, v_x)" in text and "rt.mul(v_s, 2)" in text  # the item of a list that is not a range
    assert "rt.add(v_n, 1)" in text  # a parameter: its value came from outside
    assert "rt.gt(v_w, 2)" in text and "v_z == 1" in text
    big = compiled(PROGRAMS["big ints and negatives"]).python
    # `for k, i in [3, 4]`: the index `i` of a `for` is an int, its item `k` here is not
    assert "v_c = rt.sub(rt.add(v_c, v_i * 10), v_k)" in big  # so `c` is not an int either
    bad = compiled(PROGRAMS["a bool where an int was"]).python
    assert "v_j = v_j * 3" in bad and "rt.add(v_k, 1)" in bad

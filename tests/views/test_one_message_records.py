"""The live view's records say a failure's message once (views/run_stream.py `Compactor`):
on the failed call, or on the innermost failed scope when nothing inside it said it; the
scopes around carry the code alone. From real runs' events (in-process sandbox)."""

from __future__ import annotations

import asyncio
from typing import Any

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.run import run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor
from flow_kernel.views.run_stream import Compactor

OVER_BUDGET = """agent tagger { model: "scripted", output: string, script: ["a", "b", "c"] }
workflow tag_all(titles: string[]) -> string[] {
  limits { agent_runs: 2, concurrency: 1 }
  return parallelMap(titles, t => tagger(t), concurrency: 1)
}
tag_all(["a", "b", "c"])
"""
SPIN = """workflow spin() -> int {
  limits { steps: 20 }
  var k = 0
  while k < 1000 { k = k + 1 }
  return k
}
spin()
"""


def failed_records(source: str) -> tuple[str, list[dict[str, Any]]]:
    """The run's error message and the records its view is sent."""
    compiled = compile_source(SourceFile("cell.flow", source))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    outcome = asyncio.run(run_compiled(compiled, InProcessExecutor()))
    assert outcome.error is not None
    compact = Compactor()  # one a run, as the live view has: what it is sent, in wire form
    return outcome.error.message, [r for r in map(compact, outcome.events) if r is not None]


def test_a_failed_call_says_it_and_the_scopes_around_give_the_code() -> None:
    message, sent = failed_records(OVER_BUDGET)
    saying = [r for r in sent if r.get("m") == message]
    assert [r["e"] for r in saying] == ["b"]  # the call that failed, once
    scopes = [r for r in sent if r["e"] == "x" and r["s"] == "failed"]
    assert len(scopes) == 2 and all(r["c"] == "limit-exceeded" and "m" not in r for r in scopes)


def test_a_scope_that_failed_by_itself_says_it() -> None:
    message, sent = failed_records(SPIN)
    saying = [r for r in sent if r.get("m") == message]
    assert [r["e"] for r in saying] == ["x"]  # the innermost workflow, spin
    outer = [r for r in sent if r["e"] == "x" and r["s"] == "failed" and r is not saying[0]]
    assert outer and all("m" not in r for r in outer)

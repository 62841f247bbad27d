"""User functions and `reduce`/`flatMap` run end to end: in the real sandbox (one session,
one sandbox run per behaviour), a runaway recursion ends with the `steps` limit, one that
runs out of stack first (a high `steps`) with `limit-exceeded`, never a crash; a function's agent calls are journaled like any,
so a resumed run in a new session (whose declarations came from an earlier cell) replays
them."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flow_kernel import Session
from flow_kernel.runtime.durable.journal import read_checkpoint
from flow_kernel.runtime.run import RunOutcome
from tests.runtime.test_resume_declarations import waiting_run

FUNCTIONS = '''agent namer {
  model: "scripted"
  script: [when("1", "one"), when("2", "two"), "many"]
}
## The name of a small number, by the agent.
fn name_of(n: int) -> string {
  return namer("Name ${n}")
}
fn fact(n: int) -> int {
  if n <= 1 { return 1 }
  return n * fact(n - 1)
}'''


class SandboxSession:
    """One sandboxed session for the module, cells run one after another."""

    def __init__(self, folder: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.session = Session(directory=folder, operator="none")

    def run(self, source: str) -> RunOutcome:
        return self.loop.run_until_complete(self.session.run_async(source))

    def close(self) -> None:
        self.loop.run_until_complete(self.session.aclose())
        self.loop.close()


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxSession]:
    sandboxed = SandboxSession(tmp_path_factory.mktemp("functions"))
    first = sandboxed.run(FUNCTIONS)
    assert first.error is None, first.to_json()
    yield sandboxed
    sandboxed.close()


def test_a_later_cell_calls_the_functions_inside_map_parallelmap_and_reduce(box: SandboxSession) -> None:
    outcome = box.run('''let facts = map(range(1, 6), n => fact(n))
let names = parallelMap([1, 2, 3], n => name_of(n))
let total = reduce(facts, 0, (acc, f) => acc + f)
let both = flatMap(names, s => [s, upper(s)])
{ facts: facts, names: names, total: total, both: both }''')
    assert outcome.error is None, outcome.to_json()
    assert outcome.result == {"facts": [1, 2, 6, 24, 120], "names": ["one", "two", "many"], "total": 153,
                              "both": ["one", "ONE", "two", "TWO", "many", "MANY"]}


def test_a_runaway_recursion_ends_at_the_steps_limit(box: SandboxSession) -> None:
    outcome = box.run("fn down(n: int) -> int {\n  return down(n + 1)\n}\ndown(0)")
    assert outcome.error is not None
    assert outcome.error.code == "limit-exceeded"
    assert outcome.error.message == "the `steps` limit of 1000 of `<cell>` is exceeded"


def test_a_recursion_that_runs_out_of_stack_is_limit_exceeded_not_a_crash(box: SandboxSession) -> None:
    outcome = box.run('limits { steps: 1000000 }\nfn down(n: int) -> int[] {\n  return map([n], x => down(x + 1)[0])\n}\ndown(0)')
    assert outcome.error is not None and outcome.error.code == "limit-exceeded", outcome.to_json()
    assert outcome.error.details == {"limit": "depth"}
    assert outcome.error.message.startswith("function calls nested too deeply")
    after = box.run("fact(10)")  # the same sandbox still runs
    assert after.error is None and after.result == 3628800


def test_a_deep_but_finite_recursion_completes(box: SandboxSession) -> None:
    outcome = box.run("limits { steps: 100000 }\nfn depth(n: int) -> int {\n  return n == 0 ? 0 : 1 + depth(n - 1)\n}\ndepth(900)")
    assert outcome.error is None, outcome.to_json()
    assert outcome.result == 900


CELL = '''let named = name_of(2)
let ok = approve "Keep ${named}?"
ok ? named : "dropped"'''


def test_a_resumed_run_replays_a_functions_agent_call_with_the_journaled_declarations(tmp_path: Path) -> None:
    run = waiting_run(tmp_path, FUNCTIONS, CELL)
    header = read_checkpoint(tmp_path / ".flow" / "runs" / f"{run}.jsonl").header
    assert header is not None and {"name_of", "fact", "namer"} <= set(header["session_sources"])
    assert header["session_sources"]["name_of"].startswith("fn name_of(n: int) -> string {")
    fresh = Session(directory=tmp_path, operator="defer", sandbox=False)
    outcome = fresh.resume(run)
    assert outcome.status == "completed", outcome.to_json()
    assert outcome.result == "two"
    assert "name_of" in fresh.scope.decls


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=-1000, max_value=1000), max_size=12), st.integers(-50, 50))
def test_compiled_reduce_and_a_recursive_function_agree_with_python(xs: list[int], init: int) -> None:
    """Through the whole pipeline (check, codegen, verify, the flowbox runtime in-process):
    `reduce` is functools.reduce, and a recursive fold over the same items gives the same."""
    source = f'''fn fold(xs: int[], acc: int) -> int {{
  return len(xs) == 0 ? acc : fold(slice(xs, 1), acc * 3 - xs[0])
}}
let items: int[] = {xs}
[reduce(items, {init}, (acc, x) => acc * 3 - x), fold(items, {init})]'''
    outcome = IN_PROCESS.run(source)
    expected = functools.reduce(lambda acc, x: acc * 3 - x, xs, init)
    assert outcome.error is None and outcome.result == [expected, expected], outcome.to_json()


IN_PROCESS = Session(operator="none", journal_dir=None, sandbox=False)

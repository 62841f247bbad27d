"""Budgets checked before anything runs (docs/language-guide.md, "Limits and budgets").

A workflow whose text alone makes more agent calls than `agent_runs` (F6008) or takes
more steps than `steps` (F6009) is an error naming the figure to set; calls only some
paths make are a warning with the most the text allows (F6006). The step counts are held
to what a real sandbox run takes, and a `steps` limit that stops a `parallelMap` whose
items are only known at run time names the figure that lets it finish."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.lang.check import check
from flow_kernel.runtime.run import RunOutcome
from flow_kernel.runtime.session import Session
from flow_kernel.source import SourceFile

REVIEWER = 'agent reviewer {\n  model: "scripted"\n  script: ["Fine"]\n}\n'


def found(source: str) -> list[tuple[str, str, str]]:
    """(code, severity, message) of the budget diagnostics of `source`."""
    result = check(SourceFile("budget.flow", REVIEWER + source))
    return [(d.code, d.severity.value, d.message) for d in result.diagnostics if d.code in ("F6006", "F6008", "F6009")]


def workflow(limits: str, *body: str, params: str = "") -> str:
    lines = "\n".join(f"  {line}" for line in body)
    return f"workflow w({params}) -> any {{\n  limits {{ {limits} }}\n{lines}\n}}\n"


# -- agent_runs ----------------------------------------------------------------------------------
def test_a_parallel_map_over_range_past_agent_runs_is_an_error_naming_the_figure() -> None:
    source = workflow("agent_runs: 3", 'return parallelMap(range(5), i => reviewer("Review part ${i}"))')
    assert found(source) == [
        ("F6008", "error", "this workflow makes at least 5 agent calls; `agent_runs` is 3: set `agent_runs: 5`")]
    assert found(source.replace("agent_runs: 3", "agent_runs: 5")) == []


@pytest.mark.parametrize(("body", "calls"), [
    (['return parallel { a: reviewer("a"), b: reviewer("b"), c: reviewer("c") }'], 3),
    (['return parallelMap(["x", "y", "z", "t"], f => reviewer("Review ${f}"))'], 4),
    (['return parallelMap(range(2, 6), i => reviewer("Review ${i}"))'], 4),
    (['return parallelMap(range(3), i => parallelMap(range(4), j => reviewer("${i}.${j}")))'], 12),
    (['for i in range(4) {', '  let r = reviewer("Part ${i}")', '  log r', '}', 'return 1'], 4),
    (['let first = reviewer("one")', 'let rest = parallelMap([1, 2], i => reviewer("${i}"))',
      "return [first, rest[0]]"], 3),
])
def test_static_fan_outs_multiply_and_add(body: list[str], calls: int) -> None:
    limit = calls - 1
    assert found(workflow(f"agent_runs: {limit}", *body)) == [
        ("F6008", "error", f"this workflow makes at least {calls} agent calls; `agent_runs` is {limit}: "
                           f"set `agent_runs: {calls}`")]
    assert found(workflow(f"agent_runs: {calls}", *body)) == []


def test_calls_under_a_condition_are_a_warning_with_the_most_the_text_allows() -> None:
    source = workflow("agent_runs: 2", 'let summary = reviewer("Review the summary")', "if deep {",
                      '  return parallelMap(["a", "b"], f => reviewer("Review ${f}"))', "}", "return [summary]",
                      params="deep: bool")
    assert found(source) == [
        ("F6006", "warning", "this workflow makes up to 3 agent calls (at least 1); `agent_runs` is 2: "
                             "set `agent_runs: 3` if they can all run")]


@pytest.mark.parametrize("body", [
    ["if stop { return [] }", 'return parallelMap(range(5), i => reviewer("${i}"))'],   # may return first
    ['try { return parallelMap(range(5), i => reviewer("${i}")) } catch { return [] }'],  # may fail early
    ['return stop ? [] : parallelMap(range(5), i => reviewer("${i}"))'],
    ["for i in range(5) {", "  if stop { break }", '  log reviewer("${i}")', "}", "return []"],
])
def test_what_may_stop_early_is_never_an_error(body: list[str]) -> None:
    assert [code for code, _, _ in found(workflow("agent_runs: 3", *body, params="stop: bool"))] == ["F6006"]


def test_a_fan_out_over_input_is_not_counted() -> None:
    assert found(workflow("agent_runs: 3", 'return parallelMap(items, i => reviewer("${i}"))', params="items: int[]")) == []


def test_a_cell_is_checked_against_its_own_limits() -> None:
    source = 'limits { agent_runs: 2 }\nparallelMap([1, 2, 3], i => reviewer("${i}"))\n'
    assert found(source) == [
        ("F6008", "error", "this cell makes at least 3 agent calls; `agent_runs` is 2: set `agent_runs: 3`")]


# -- steps ---------------------------------------------------------------------------------------
def test_a_thousand_item_parallel_map_past_the_default_steps_is_an_error_naming_the_figure() -> None:
    body = 'return parallelMap(range(1000), i => reviewer("Tag item ${i}"))'
    assert found(workflow("agent_runs: 1000", body)) == [
        ("F6009", "error", "this workflow takes at least 2003 steps; `steps` is 1000: set `steps: 2003`")]
    assert found(workflow("agent_runs: 1000, steps: 2003", body)) == []


# -- flow check ----------------------------------------------------------------------------------
def test_flow_check_fails_on_the_error_and_passes_the_warning(tmp_path: Path) -> None:
    error = tmp_path / "over.flow"
    error.write_text(REVIEWER + workflow("agent_runs: 3", 'return parallelMap(range(5), i => reviewer("${i}"))'))
    warned = tmp_path / "maybe.flow"
    warned.write_text(REVIEWER + workflow("agent_runs: 3", 'return deep ? parallelMap(range(5), i => reviewer("${i}")) : []',
                                          params="deep: bool"))
    cli = [sys.executable, "-m", "flow_kernel.cli", "check"]
    failed = subprocess.run([*cli, str(error)], capture_output=True, text=True, timeout=120)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "[F6008] error: this workflow makes at least 5 agent calls; `agent_runs` is 3: set `agent_runs: 5`" in failed.stdout
    passed = subprocess.run([*cli, str(warned)], capture_output=True, text=True, timeout=120)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert ("[F6006] warning: this workflow makes up to 5 agent calls; `agent_runs` is 3: set `agent_runs: 5` "
            "if they can all run") in passed.stdout


# -- against the sandbox -------------------------------------------------------------------------
def run(declarations: str, workflow_name: str, given: dict[str, Any]) -> RunOutcome:
    async def go() -> RunOutcome:
        async with Session(journal_dir=None) as session:
            declared = await session.run_async(declarations)
            assert declared.error is None, declared.to_json()
            return await session.run_async("1", workflow=workflow_name, input=given)
    return asyncio.run(go())


def least_steps(source: str) -> int:
    """The steps the checker says `source`'s workflow takes at least (its F6009 figure)."""
    messages = [m for code, _, m in found(source) if code == "F6009"]
    assert len(messages) == 1, found(source)
    return int(re.search(r"takes at least (\d+) steps", messages[0]).group(1))  # type: ignore[union-attr]


STRAIGHT = [  # every path is the same: the count is exact
    ['return parallelMap(range(20), i => reviewer("Tag ${i}"))'],
    ["var n = 0", "for i in range(3) {", "  let xs = map([1, 2, 3, 4], x => {", "    let y = x * 2", "    return y",
     "  })", "  n = n + len(xs)", "}", 'let p = parallel { a: reviewer("a"), b: reviewer("b") }',
     'log "${n} ${len(keys(p))}"', "return n"],
    ['if len("ab") > 1 { log "a" } else if len("ab") > 0 { log "b" } else { log "c" }',
     'pipeline "p" {', '  stage "one" { log reviewer("1") }', '  stage "two" { log "2" }', "}",
     'stage "solo" { log "s" }', 'async t { log reviewer("task") }', "await t", 'verify 1 > 0 : "positive"',
     "emit progress { done: 1, total: 2 }", "return 1"],
]
BRANCHING = [  # the count is a lower bound
    ["var n = 0", "while n < 7 { n = n + 1 }", 'if n > 3 { log "big" } else { log "small" }',
     'return n > 0 ? parallelMap(range(4), i => reviewer("${i}")) : []'],
    ['try { log reviewer("x") } catch { log "failed" }', "return filter(range(30), i => i > 10)"],
]


@pytest.mark.parametrize("body", STRAIGHT + BRANCHING)
def test_the_step_count_is_what_the_sandbox_counts_or_less(body: list[str]) -> None:
    source = workflow("agent_runs: 1000, steps: 2", *body)
    counted = least_steps(source)
    outcome = run(REVIEWER + source.replace("steps: 2", "steps: 100000"), "w", {})
    assert outcome.error is None, outcome.to_json()
    if body in STRAIGHT:
        assert counted == outcome.steps
    else:
        assert 0 < counted < outcome.steps


def test_a_steps_limit_that_stops_a_parallel_map_names_the_figure_that_lets_it_finish() -> None:
    def tag_all(limits: str) -> str:
        return REVIEWER + workflow(f"agent_runs: 1000{limits}", 'return parallelMap(items, i => reviewer("Tag item ${i}"))',
                                   params="items: int[]").replace("workflow w(", "workflow tag_all(")
    items = {"items": list(range(1000))}
    stopped = run(tag_all(""), "tag_all", items)
    assert stopped.error is not None and stopped.error.code == "limit-exceeded"
    assert stopped.error.message == ("the `steps` limit of 1000 of `tag_all` is exceeded: this `parallelMap` of 1000 items "
                                     "takes about 2 steps an item; set `steps: 2002` in the `limits` of `tag_all`")
    assert stopped.error.details["needed"] == 2002
    finished = run(tag_all(", steps: 2002"), "tag_all", items)
    assert finished.error is None and len(finished.result) == 1000
    short = run(tag_all(", steps: 2001"), "tag_all", items)
    assert short.error is not None and short.error.details["needed"] == 2002

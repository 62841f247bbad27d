"""A session's `RunContext`: built from its keywords, derived for each run, read by the run
path (run_compiled, the host, an eval's items) instead of parameter lists."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from flow_kernel import RunContext, Session
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.eval.api import EvalOptions
from flow_kernel.runtime.eval.runner import EvalUsageError
from flow_kernel.runtime.policy.ceilings import Ceilings
from flow_kernel.runtime.policy.operator import Operator
from flow_kernel.runtime.policy.trust import Trust
from flow_kernel.runtime.run import run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor
from flow_kernel.source import SourceFile


def test_the_session_builds_its_context_from_its_keywords(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    ceilings = Ceilings(steps=1000)
    s = Session(directory=tmp_path, operator="auto-deny", allow_run=["git"], journal_dir="runs", sandbox=False,
                context=RunContext(sinks=[seen.append], ceilings=ceilings, debug=True))
    context = s.context
    assert context.operator.policy == "auto-deny" and "git" in context.allow_run
    assert context.journal_dir == tmp_path / "runs" and context.ceilings is ceilings and context.debug
    assert context.sinks == (seen.append,) and context.sources is s.sources
    assert context.resilience is not None  # the session's provider guards, shared by its runs
    assert s.operator is context.operator and s.ceilings is ceilings  # the attributes are views of it


def test_setting_an_attribute_gives_the_session_a_new_context(tmp_path: Path) -> None:
    s = Session(directory=tmp_path, sandbox=False, journal_dir=None)
    before = s.context
    s.allow_run |= {"echo"}
    s.operator = Operator("auto-approve")
    assert s.context is not before and before.allow_run == frozenset() and before.operator.policy != "auto-approve"
    assert s.context.allow_run == {"echo"} and s.context.operator.policy == "auto-approve"
    assert s.run('run "echo" ["hi"]').result["stdout"] == "hi\n"  # the run read the new context


def test_each_run_gets_its_own_context_with_its_id_and_sinks(tmp_path: Path) -> None:
    session_events: list[dict[str, Any]] = []
    run_events: list[dict[str, Any]] = []
    s = Session(directory=tmp_path, sandbox=False, journal_dir=None, context=RunContext(sinks=[session_events.append]))

    async def go() -> Any:
        first = await s.run_async('print "one"', sinks=[run_events.append], run_id="rfirst")
        second = await s.run_async('print "two"')
        return first, second

    first, second = asyncio.run(go())
    assert first.run_id == "rfirst" and second.run_id not in ("rfirst", "")
    assert {e["run"] for e in run_events} == {"rfirst"}  # a run's own sinks: that run only
    assert {e["run"] for e in session_events} == {"rfirst", second.run_id}
    assert s.context.run_id is None and s.context.sinks == (session_events.append,)  # the session's is unchanged


def test_a_context_that_sets_what_a_keyword_decides_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="operator, allow_run"):
        Session(directory=tmp_path, context=RunContext(operator=Operator("auto-approve"), allow_run={"sh"}))
    with pytest.raises(ValueError, match="journal_dir"):
        Session(directory=tmp_path, context=RunContext(journal_dir=tmp_path))


def test_a_front_ends_trust_comes_as_allow_and_gets_the_keywords_grants(tmp_path: Path) -> None:
    trust = Trust(tmp_path, environ={})
    s = Session(allow=trust, allow_run=["git"], journal_dir=None, sandbox=False)
    assert s.trust is trust and s.directory == trust.folder
    assert "git" in trust.executables() and "git" in s.allow_run


def test_sandbox_one_keeps_no_spare_and_false_runs_in_process(tmp_path: Path) -> None:
    one = Session(directory=tmp_path, journal_dir=None, sandbox="one")
    pooled = Session(directory=tmp_path, journal_dir=None)
    here = Session(directory=tmp_path, journal_dir=None, sandbox=False)
    assert (one.sandbox, one.spare_sandbox) == (True, False)
    assert (pooled.sandbox, pooled.spare_sandbox) == (True, True)
    assert (here.sandbox, here.spare_sandbox) == (False, False)


def test_run_compiled_reads_the_journal_folder_run_id_and_sinks_from_the_context(tmp_path: Path) -> None:
    compiled = compile_source(SourceFile("c.flow", 'print "x"\n1'))
    kept: list[dict[str, Any]] = []
    context = RunContext(journal_dir=tmp_path, run_id="rctx", sinks=[kept.append])
    outcome = asyncio.run(run_compiled(compiled, InProcessExecutor(), context))
    assert outcome.result == 1 and outcome.run_id == "rctx" and outcome.journal == tmp_path / "rctx.jsonl"
    journaled = [json.loads(line) for line in (tmp_path / "rctx.jsonl").read_text().splitlines()]
    assert [e["seq"] for e in kept] == [e["seq"] for e in journaled if "seq" in e]  # the journal, then the sinks
    assert context.run_id == "rctx" and context.sinks == (kept.append,)  # the caller's context is unchanged


def test_eval_options_name_a_keyword_that_is_none(tmp_path: Path) -> None:
    assert EvalOptions.of({"epochs": 2, "concurrency": 3}) == EvalOptions(epochs=2, concurrency=3)
    with pytest.raises(EvalUsageError, match="no eval option concurency"):
        EvalOptions.of({"concurency": 3})
    s = Session(directory=tmp_path, sandbox=False, journal_dir=None)
    (tmp_path / "cases.jsonl").write_text('{"input": {"n": 1}}\n')
    with pytest.raises(EvalUsageError, match="no eval option"):
        s.eval("w", "cases.jsonl", program="workflow w(n: int) -> int { return n }", epoch=2)
    report = s.eval("w", "cases.jsonl", program="workflow w(n: int) -> int { return n }", epochs=2)
    assert [r.output for r in report.results] == [1, 1]

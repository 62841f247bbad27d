"""`flow_kernel.Session`: cells that build on each other, tools, configuration, history."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from flow_kernel import CompileError, Session
from flow_kernel.runtime.context import RunContext


def session(tmp_path: Path, **kw: object) -> Session:
    return Session(directory=tmp_path, operator="none", sandbox=False, **kw)  # type: ignore[arg-type]


def test_cells_accumulate_bindings_and_declarations(tmp_path: Path) -> None:
    s = session(tmp_path)

    async def cells() -> list[object]:
        a = await s.run_async('type N = { n: int }\nlet base: N = { n: 40 }\nvar xs = [base.n]')
        b = await s.run_async("xs = xs + [base.n + 2]\nlen(xs)")
        c = await s.run_async("let total = xs[0] + xs[1]\ntotal")
        return [a.result, b.result, c.result]

    assert asyncio.run(cells()) == [None, 2, 82]
    assert s.values == {"base": {"n": 40}, "xs": [40, 42], "total": 82}
    assert [o.ok for o in s.history] == [True, True, True]


def test_bindings_made_before_a_failure_persist(tmp_path: Path) -> None:
    s = session(tmp_path)
    outcome = s.run('let a = 1\nlet b = [1][5]\nlet c = 3')
    assert outcome.error is not None and outcome.error.code == "evaluation"
    assert s.values == {"a": 1}
    assert s.run("a + 1").result == 2


def test_compile_errors_raise_with_the_diagnostics_and_run_nothing(tmp_path: Path) -> None:
    s = session(tmp_path)
    with pytest.raises(CompileError) as info:
        s.run("let x = undefined_name")
    assert [d.code for d in info.value.diagnostics if d.is_error] == ["F2001"]
    assert s.history == [] and s.values == {}


def test_a_workflow_declared_in_an_earlier_cell_runs_with_input(tmp_path: Path) -> None:
    s = session(tmp_path)
    s.run("workflow double(x: int) -> int { return x * 2 }")
    outcome = s.run("", workflow="double", input={"x": 21})
    assert outcome.result == 42
    bad = s.run("", workflow="double", input={"x": "no"})
    assert bad.error is not None and bad.error.code == "workflow-input-validation"


def test_reset_forgets_the_session(tmp_path: Path) -> None:
    s = session(tmp_path)
    s.run("let a = 1")
    s.reset()
    with pytest.raises(CompileError):
        s.run("a")


def test_use_resolves_against_the_session_directory(tmp_path: Path) -> None:
    (tmp_path / "lib.flow").write_text("workflow inc(x: int) -> int { return x + 1 }\n", encoding="utf-8")
    assert session(tmp_path).run('use "lib.flow"\ninc(x: 1)').result == 2


def test_flow_toml_sets_default_model_operator_and_allow_run(tmp_path: Path,
                                                            trust_folder: Callable[[Path], None]) -> None:
    (tmp_path / "flow.toml").write_text('default_model = "mock"\noperator = "auto-approve"\nallow_run = ["echo"]\n',
                                        encoding="utf-8")
    trust_folder(tmp_path)  # `flow trust`: a discovered flow.toml applies only in a trusted folder
    s = Session(directory=tmp_path, sandbox=False)
    assert s.operator.policy == "auto-approve" and "echo" in s.allow_run
    outcome = s.run('agent a { model: "default" }\nlet ok = approve "go?"\nlet said = a("hi")\n'
                    'let out = run "echo" ["hi"]\n[ok, said, out.stdout]')
    assert outcome.error is None, outcome.to_json()
    ok, said, echoed = outcome.result
    assert ok is True and isinstance(said, str) and echoed == "hi\n"


def test_default_model_without_configuration_is_a_clear_error(tmp_path: Path) -> None:
    outcome = session(tmp_path).run('agent a { model: "default" }\na("hi")')
    assert outcome.error is not None and outcome.error.code == "agent-invocation"
    assert "default_model" in outcome.error.message


def test_the_journal_is_written_in_the_session_directory(tmp_path: Path) -> None:
    s = Session(directory=tmp_path, operator="none", sandbox=False)
    outcome = s.run('print "hi"')
    assert outcome.journal is not None and outcome.journal.parent == tmp_path / ".flow" / "runs"
    lines = [json.loads(line) for line in outcome.journal.read_text().splitlines()]
    assert lines[0]["journal"] == "header" and lines[-1]["journal"] == "end"  # the checkpoint records around
    kinds = [line["type"] for line in lines if "type" in line]
    assert kinds[0] == "workflow.started" and "print" in kinds and kinds[-1] == "workflow.completed"


def test_record_then_replay_across_cells(tmp_path: Path) -> None:
    agent = 'agent a { model: "mock", output: { n: int } }\n'
    recording = session(tmp_path, record="tape.jsonl")
    first = [recording.run(agent + 'a("one")').result, recording.run('a("two")').result,
             recording.run('a("one")').result]
    lines = (tmp_path / "tape.jsonl").read_text().splitlines()
    assert len(lines) == 3  # one cassette for the session; the same label in two cells is two entries
    replaying = session(tmp_path, replay="tape.jsonl", context=RunContext(providers={"mock": _Unreachable()}))
    again = [replaying.run(agent + 'a("one")').result, replaying.run('a("two")').result,
             replaying.run('a("one")').result]
    assert again == first


class _Unreachable:
    async def attempt(self, request: object) -> object:
        raise AssertionError("a replay must not call the provider")


def test_the_sandbox_is_what_runs_by_default(tmp_path: Path) -> None:
    async def go() -> tuple[object, object]:
        async with Session(directory=tmp_path, operator="none") as s:
            first = await s.run_async("let x = 6 * 7")
            second = await s.run_async("x")
            return first.error, second.result

    assert asyncio.run(go()) == (None, 42)


def test_the_history_keeps_the_recent_runs() -> None:
    from flow_kernel.runtime.session import HISTORY

    session = Session(operator="none", journal_dir=None, sandbox=False)
    for i in range(HISTORY + 5):
        session.run(f"{i}")
    assert len(session.history) == HISTORY
    assert session.history[-1].result == HISTORY + 4 and session.history[0].result == 5


def test_the_history_keeps_the_newest_runs_within_twice_the_output_ceiling() -> None:
    from flow_kernel.runtime.policy.ceilings import Ceilings
    from flow_kernel.runtime.run import RunOutcome
    from flow_kernel.runtime.session import HISTORY

    session = Session(operator="none", journal_dir=None, sandbox=False,
                      context=RunContext(ceilings=Ceilings(output_bytes=1000)))
    sizes = [300, 700, 5, 900, 2500, 10, 10, 400, 1999, 1, 0, 600, 600, 600, *[1] * (HISTORY + 3), 2000, 3]
    for n, size in enumerate(sizes):
        session.history.append(RunOutcome(f"r{n}", output_bytes=size))
        del session.history[:-HISTORY]
        session._bound_history()
        # the newest runs whose bytes fit 2 x 1000, at least the newest one
        expected, total = [], 0
        for m in range(n, max(-1, n - HISTORY), -1):
            if total + sizes[m] > 2000 and expected:
                break
            total += sizes[m]
            expected.append(f"r{m}")
        assert [o.run_id for o in reversed(session.history)] == expected, n

"""`RunContext`: frozen, derived per run, with defaults a bare run can use."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest

from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable.cassette import CassettePlayer, CassetteRecorder
from flow_kernel.runtime.policy.ceilings import Ceilings
from flow_kernel.runtime.policy.operator import Operator


def test_a_context_cannot_be_changed_in_place() -> None:
    context = RunContext()
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.debug = True  # type: ignore[misc]
    with pytest.raises((AttributeError, TypeError)):
        context.unknown = 1  # type: ignore[attr-defined]  # slots: no new attributes either


def test_what_a_caller_passes_is_copied_into_values_it_cannot_change() -> None:
    allowed, sinks, providers = {"git"}, [print], {"mock": object()}
    context = RunContext(allow_run=allowed, sinks=sinks, providers=providers, journal_dir="runs")  # type: ignore[arg-type]
    allowed.add("sh")
    sinks.append(len)
    providers["other"] = object()
    assert context.allow_run == frozenset({"git"})
    assert context.sinks == (print,)
    assert set(context.providers) == {"mock"}
    assert context.journal_dir == Path("runs")


def test_a_context_travels_pickled_as_it_is(tmp_path: Path) -> None:
    context = RunContext(allow_run={"git"}, providers={"p": "provider"}, journal_dir=tmp_path, debug=True)  # type: ignore[dict-item]
    again = pickle.loads(pickle.dumps(context))
    assert again.replace(tools=context.tools) == context  # a registry compares by identity
    assert again.providers == {"p": "provider"} and again.allow_run == {"git"} and again.debug


def test_defaults_are_a_run_with_no_grants() -> None:
    context = RunContext()
    assert context.operator.policy == "none"
    assert context.allow_run == frozenset()
    assert context.ceilings == Ceilings.from_env()
    assert context.journal_dir is None and context.resume is None and context.run_id is None
    assert context.recorder is None and context.player is None and context.cassette_scope is None
    assert not context.debug and context.sinks == () and context.trace_sinks == ()
    assert RunContext().tools is not context.tools  # each context its own registry


def test_for_run_derives_a_run_and_leaves_the_session_context_as_it_was() -> None:
    events: list[object] = []
    session = RunContext(operator=Operator("auto-approve"), sinks=(events.append,), cassette_scope="eval item 3")
    run = session.for_run(run_id="r1", sinks=[print])
    assert run.run_id == "r1" and run.operator is session.operator
    assert run.sinks == (events.append, print)  # the run's own sinks after the session's
    assert run.cassette_scope == "eval item 3"  # kept when the run names none
    assert session.run_id is None and session.sinks == (events.append,)
    assert session.for_run(cassette_scope="item 4").cassette_scope == "item 4"


def test_sources_stay_the_shared_mapping_a_session_adds_cells_to() -> None:
    sources: dict[str, str] = {}
    context = RunContext(sources=sources).for_run(run_id="r2")
    sources["<cell 1>"] = "let x = 1"
    assert context.sources["<cell 1>"] == "let x = 1"


def test_replace_changes_one_setting() -> None:
    context = RunContext(allow_run=frozenset({"git"}))
    debugged = context.replace(debug=True)
    assert debugged.debug and not context.debug and debugged.allow_run == context.allow_run


def test_a_run_records_or_replays_never_both(tmp_path: Path) -> None:
    tape = tmp_path / "tape.jsonl"
    tape.write_text("")
    with pytest.raises(ValueError, match="not both"):
        RunContext(recorder=CassetteRecorder(tape), player=CassettePlayer(tape))

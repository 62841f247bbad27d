"""HostServices builds the agent pipeline on a run's first agent call (runtime/host.py):
a run that calls no agent builds none, one that does builds one and gets its traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flow_kernel.runtime import host as host_module
from flow_kernel.runtime.agents import AgentPipeline
from flow_kernel.runtime.session import Session


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[AgentPipeline]:
    """Every pipeline the host builds from here on."""
    made: list[AgentPipeline] = []

    class Counted(AgentPipeline):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(host_module, "AgentPipeline", Counted)
    return made


def test_a_run_without_agent_calls_builds_no_pipeline(tmp_path: Path, built: list[AgentPipeline]) -> None:
    outcome = Session(directory=tmp_path, sandbox=False).run('agent a { model: "scripted", script: ["ok"] }\n1 + 1')
    assert outcome.result == 2 and outcome.error is None
    assert built == [] and outcome.traces == []


def test_a_run_with_agent_calls_builds_one_and_keeps_its_traces(tmp_path: Path, built: list[AgentPipeline]) -> None:
    outcome = Session(directory=tmp_path, sandbox=False).run(
        'agent a { model: "scripted", script: ["ok"] }\nlet x = a("one")\nlet y = a("two")\nlen(x) + len(y)')
    assert outcome.error is None and outcome.result == 4
    assert len(built) == 1
    assert len(outcome.traces) == 2 and outcome.traces is built[0].traces

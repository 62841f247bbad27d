"""A `null` never becomes a command-line argument. The checker refuses a `run` argument that
can be `null` (F5014, tests/lang/test_run_arguments.py); a value typed `any` that turns out
`null` at run time stops in the sandbox (`evaluation`); and a bypassed sandbox sending a
`null` (or any non-text) argument gets `capability-violation` from the host, no process.
The reopened twin switches the host's guard back to rendering every argument with `str`,
and the same forged request starts `echo` with the argument `None`."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.runtime import host
from flow_kernel.runtime.session import Session
from tests.sandbox.sandbox_helpers import Sandbox, sandbox
from tests.security.test_flow_doors import ask_host, host_for

__all__ = ["sandbox"]

FORGED: list[tuple[str, Any]] = [
    ("process", {"executable": "echo", "arguments": ["null-door", None], "stdin": None, "timeout_ms": 5000}),
    ("process", {"executable": "echo", "arguments": ["null-door", 7], "stdin": None, "timeout_ms": 5000}),
]


def test_a_forged_null_argument_is_a_capability_violation(sandbox: Sandbox, tmp_path: Path) -> None:
    results = ask_host(sandbox, host_for("1", tmp_path, allow_run=frozenset({"echo"})), FORGED)
    assert results == [
        ["error", "capability-violation", "`run`: the arguments for 'echo' must be strings, found null"],
        ["error", "capability-violation", "`run`: the arguments for 'echo' must be strings, found int"]]


def test_the_reopened_door_runs_echo_with_none(sandbox: Sandbox, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host, "_argv", lambda exe, arguments: [str(a) for a in arguments])
    results = ask_host(sandbox, host_for("1", tmp_path, allow_run=frozenset({"echo"})), FORGED[:1])
    assert results[0][0] == "ok" and results[0][1]["stdout"] == "null-door None\n", results


@pytest.fixture()
def session(tmp_path: Path) -> Iterator[Session]:
    s = Session(directory=tmp_path, operator="none", allow_run=["echo"])
    yield s
    asyncio.run(s.aclose())


def test_a_null_that_arrives_typed_any_stops_in_the_sandbox(session: Session) -> None:
    outcome = session.run('let args = parseJson("[\\"null-door\\", null]")\nlet out = run "echo" args\nout.stdout')
    assert outcome.error is not None, outcome.to_json()
    assert (outcome.error.code, outcome.error.message) == (
        "evaluation", "`run` arguments must be strings, numbers or booleans, got null")
    assert not any(e["type"].startswith("process.") for e in outcome.events)
    scalars = session.run('let args = parseJson("[\\"null-door\\", 1, true]")\nlet out = run "echo" args\nout.stdout')
    assert scalars.result == "null-door 1 true\n", scalars.to_json()

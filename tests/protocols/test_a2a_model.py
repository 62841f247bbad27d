"""A remote A2A agent as the model of a Flow agent (issue 20, item 4): `model: "a2a/remote"`
with [a2a.remote] in flow.toml, against tests/protocols/a2a_agent.py (the a2a-sdk server on
loopback): the reply checked against the output contract, a repair as a follow-up in the same
A2A context, `input-required` as an operator question, a failed task an `agent-invocation`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_kernel import Session
from tests.protocols.helpers import HERE, PYTHON, free_port, server_process

TOKEN = "remote-agent-token-0123456789"


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    port = free_port()
    with server_process([PYTHON, str(HERE / "a2a_agent.py"), str(port)], port, env={"A2A_AGENT_TOKEN": TOKEN}):
        yield f"http://127.0.0.1:{port}"


def session(tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch, operator: str = "auto-deny",
            token_env: str = "REMOTE_TOKEN") -> Session:
    monkeypatch.setenv("REMOTE_TOKEN", TOKEN)
    (tmp_path / "flow.toml").write_text(f'[a2a.remote]\nurl = "{url}"\ntoken_env = "{token_env}"\ntimeout_ms = 10000\n')
    return Session(directory=tmp_path, config=tmp_path / "flow.toml", operator=operator, sandbox=False, journal_dir=None)


def agent(output: str, repair: int = 1) -> str:
    return f'agent remote_one {{ model: "a2a/remote", output: {output}, repair: {repair} }}\n'


def test_a_reply_outside_the_contract_is_repaired_in_the_same_context(
        tmp_path: Path, agent_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    s = session(tmp_path, agent_url, monkeypatch)
    outcome = s.run(agent('"positive" | "negative"') + 'remote_one("Classify: I love it")')
    assert outcome.error is None, outcome.to_json()
    assert outcome.result == "positive"
    completed = next(e for e in outcome.events if e["type"] == "agent.completed")["data"]
    assert [a["kind"] for a in completed["attempts"]] == ["attempt", "repair"]
    assert completed["attempts"][0]["output"] == "great"  # the remote's first answer, refused by the contract
    # without a repair turn the contract fails the call: the remote only fixes it in the same context
    failed = s.run(agent('"positive" | "negative"', repair=0) + 'remote_one("Classify: so so")')
    assert failed.error is not None and failed.error.code == "output-validation"


def test_input_required_becomes_an_operator_question(tmp_path: Path, agent_url: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"`remote_one` asks: Which tone?": "formal"}))
    s = session(tmp_path, agent_url, monkeypatch, operator=f"answers:{answers}")
    outcome = s.run(agent("{ tone: string }") + 'remote_one("Tone of the reply?")')
    assert outcome.error is None, outcome.to_json()
    assert outcome.result == {"tone": "formal"}
    asked = [e["data"] for e in outcome.events if e["type"] == "approval.resolved"]
    assert asked[0]["kind"] == "ask" and asked[0]["answer"] == "formal"
    # no one to answer: the call fails, the question was shown
    unanswered = session(tmp_path, agent_url, monkeypatch, operator="none").run(
        agent("{ tone: string }") + 'remote_one("Tone of the reply?")')
    assert unanswered.error is not None and unanswered.error.code == "operator-unavailable"


def test_the_contract_travels_and_failures_are_invocation_errors(
        tmp_path: Path, agent_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    s = session(tmp_path, agent_url, monkeypatch)
    outcome = s.run(agent("{ schema: any }") + 'remote_one("Schema please")')
    assert outcome.error is None, outcome.to_json()
    assert outcome.result["schema"]["required"] == ["schema"]  # what the Flow agent's output contract is
    failed = s.run(agent("string") + 'remote_one("Something else")')
    assert failed.error is not None and failed.error.code == "agent-invocation"
    assert "failed: cannot do that" in failed.error.message


def test_an_agent_needs_its_token_and_a_declaration(tmp_path: Path, agent_url: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    s = session(tmp_path, agent_url, monkeypatch, token_env="UNSET_TOKEN_VARIABLE")
    outcome = s.run(agent("string") + 'remote_one("Classify: x")')
    assert outcome.error is not None and "UNSET_TOKEN_VARIABLE" in outcome.error.message
    monkeypatch.setenv("WRONG_TOKEN", "not-the-token-at-all-000")
    wrong = session(tmp_path, agent_url, monkeypatch, token_env="WRONG_TOKEN").run(
        agent("string") + 'remote_one("Classify: x")')
    assert wrong.error is not None and wrong.error.code == "agent-invocation"
    none = Session(directory=tmp_path, config=_empty(tmp_path), sandbox=False, journal_dir=None).run(
        'agent other { model: "a2a/nobody", output: string }\nother("hi")')
    assert none.error is not None and "no A2A agent `nobody`" in none.error.message


def _empty(tmp_path: Path) -> Any:
    path = tmp_path / "empty" / "flow.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text("")
    return path

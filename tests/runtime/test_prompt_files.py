"""Prompt files (`instructions: file("prompts/triage.md")`) and models chosen by purpose
(`model: "for:deep-judgement"`), through a real Session: the file's text is what the agent
is told, an edited file is a replay miss, a missing one is F2011 with its path; a purpose
resolves through `[models]` and fails closed at run time in a notebook, at compile time
in a file (`flow check`, `flow run`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow_kernel.cli import main
from flow_kernel.kernel.assist import inspect
from flow_kernel.runtime.config import ConfigError, FlowConfig, parse_config
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.session import Session

AGENT = '''agent triager {
  model: "scripted"
  instructions: file("prompts/triage.md")
  hints: ["Be brief", file("prompts/hints.md")]
  script: ["ok"]
}
'''


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "triage.md").write_text("Classify the ticket.\nUse one sentence.\n", encoding="utf-8")
    (tmp_path / "prompts" / "hints.md").write_text("Refunds are high severity.", encoding="utf-8")
    return tmp_path


def _session(folder: Path, **kw: object) -> Session:
    return Session(directory=folder, sandbox=False, journal_dir=None, context=RunContext(debug=True), **kw)  # type: ignore[arg-type]


def test_the_files_text_is_the_agents_instructions(tmp_path: Path) -> None:
    session = _session(_folder(tmp_path))
    outcome = session.run(AGENT + 'print triager("Ticket 1")')
    assert outcome.ok, outcome.error
    system = outcome.traces[0]["prompt"]["system"]
    assert "Classify the ticket.\nUse one sentence." in system
    assert "Hint: Be brief" in system and "Hint: Refunds are high severity." in system


def test_a_missing_file_is_F2011_with_its_path(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "prompts" / "triage.md").unlink()
    result = _session(folder).check(AGENT + 'print triager("Ticket 1")')
    assert [d.code for d in result.errors] == ["F2011"]
    message = result.errors[0].message
    assert '"prompts/triage.md" not found' in message and str(folder / "prompts" / "triage.md") in message
    assert result.errors[0].span.start_pos.line == 3


def test_editing_a_prompt_file_invalidates_its_replay_entries(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    tape = folder / "tape.jsonl"
    program = AGENT + 'print triager("Ticket 1")'
    assert _session(folder, record=tape).run(program).ok
    assert _session(folder, replay=tape).run(program).ok  # unchanged: answered from the cassette
    (folder / "prompts" / "triage.md").write_text("Classify the ticket.\nUse two sentences.\n", encoding="utf-8")
    missed = _session(folder, replay=tape).run(program)
    assert not missed.ok and missed.error is not None and missed.error.code == "agent-invocation"
    assert "prompt file prompts/triage.md (instructions)" in missed.error.message  # the diff names the file
    (folder / "prompts" / "hints.md").write_text("Edited.", encoding="utf-8")  # the other file alone: a miss too
    (folder / "prompts" / "triage.md").write_text("Classify the ticket.\nUse one sentence.\n", encoding="utf-8")
    assert not _session(folder, replay=tape).run(program).ok


def test_a_cassette_of_an_agent_without_prompt_files_is_unchanged(tmp_path: Path) -> None:
    """The prompt identity gains lines only for prompt files: older cassettes still replay."""
    from flow_kernel.runtime.agents import prompt_files_identity
    from flow_kernel.runtime.durable.cassette import prompt_hash

    assert prompt_files_identity([]) == ""
    tape = tmp_path / "tape.jsonl"
    program = 'agent a { model: "scripted", script: ["hi"] }\nprint a("hello")'
    assert _session(tmp_path, record=tape).run(program).ok
    assert f'"prompt_hash":"{prompt_hash("hello")}"' in tape.read_text(encoding="utf-8")


def test_hover_shows_where_a_prompt_comes_from(tmp_path: Path) -> None:
    session = _session(_folder(tmp_path))
    assert session.run(AGENT).ok
    reply = inspect("triager", 3, session.scope)
    text = reply["data"]["text/plain"]
    assert 'instructions: file("prompts/triage.md")' in text and 'hints[2]: file("prompts/hints.md")' in text


PURPOSE = 'agent judge { model: "for:deep-judgement" }\nprint judge("Decide")\n'


def test_a_purpose_resolves_through_the_models_table(tmp_path: Path) -> None:
    outcome = _session(tmp_path, config=FlowConfig(models={"deep-judgement": "mock"})).run(PURPOSE)
    assert outcome.ok, outcome.error
    started = next(e for e in outcome.events if e["type"] == "agent.started")
    assert started["data"]["provider"] == "mock"


def test_an_unset_purpose_fails_closed_at_run_time_in_a_notebook(tmp_path: Path) -> None:
    session = _session(tmp_path)
    assert session.check(PURPOSE).ok  # a notebook's configuration may still change: checked when it runs
    outcome = session.run(PURPOSE)
    assert outcome.error is not None and outcome.error.code == "agent-invocation"
    assert 'deep-judgement = "provider/model"' in outcome.error.message and "[models]" in outcome.error.message
    assert outcome.error.details["key"] == "models.deep-judgement"


def test_the_models_table_is_checked() -> None:
    assert parse_config({"models": {"deep-judgement": "anthropic/claude-sonnet-4-5"}}).models == {
        "deep-judgement": "anthropic/claude-sonnet-4-5"}
    for bad in ({"deep-judgment": "openai/gpt-4o"}, {"deep-judgement": "nowhere/x"}, {"deep-judgement": 3}, "x"):
        try:
            parse_config({"models": bad})
        except ConfigError as exc:
            assert "models" in str(exc)
        else:
            raise AssertionError(f"accepted {bad!r}")


def _flow(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`flow ARGS` in this process: (exit code, stdout, stderr)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_an_unset_purpose_fails_closed_at_compile_time_in_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.flow").write_text(PURPOSE, encoding="utf-8")
    code, out, _ = _flow(capsys, "check", "p.flow")
    assert code == 1 and "F4026" in out and 'deep-judgement = "provider/model"' in out
    code, _, err = _flow(capsys, "run", "p.flow")
    assert code == 2 and "F4026" in err
    (tmp_path / "flow.toml").write_text('[models]\ndeep-judgement = "mock"\n', encoding="utf-8")
    code, out, err = _flow(capsys, "run", "p.flow", "--config", "flow.toml")  # a config the person names applies
    assert code == 0, err


def test_a_prompt_file_gone_since_its_cell_fails_the_call_not_silently(tmp_path: Path) -> None:
    """An agent declared in an earlier cell whose prompt file was deleted since: the later
    call fails with the file's problem instead of running without its instructions."""
    folder = _folder(tmp_path)
    session = _session(folder)
    assert session.run(AGENT).ok
    (folder / "prompts" / "triage.md").unlink()
    outcome = session.run('print triager("Ticket 1")')
    assert outcome.error is not None and outcome.error.code == "agent-invocation"
    assert '"prompts/triage.md" not found' in outcome.error.message

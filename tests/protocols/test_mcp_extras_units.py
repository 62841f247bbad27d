"""The parts of `flow serve --mcp` beyond tools, without a server: prompt files read and
filled (serve/mcp_prompts.py), runs kept per caller (serve/mcp_runs.py), log levels and
enum completion (serve/mcp.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow_kernel.errors import FlowError
from flow_kernel.runtime.run import RunOutcome
from flow_kernel.serve.mcp import enum_values
from flow_kernel.serve.mcp_logging import LogLevels
from flow_kernel.serve.mcp_prompts import MAX_PROMPT_BYTES, PromptArgumentsError, read_prompts
from flow_kernel.serve.mcp_runs import ServedRuns, run_id_of


def test_prompt_files_read_and_left_out(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "a.md").write_text("## Summarise {{topic}}\nfor {{ reader }} about {{topic}}")
    (prompts / "big.md").write_bytes(b"x" * (MAX_PROMPT_BYTES + 1))
    (prompts / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    (prompts / "folder.md").mkdir()
    (prompts / "-dash.md").write_text("a name must start with a letter or digit")
    found, skipped = read_prompts(tmp_path)
    assert list(found) == ["a"]
    assert (found["a"].description, found["a"].arguments) == ("Summarise {{topic}}", ("topic", "reader"))
    assert found["a"].render({"topic": "{{reader}}", "reader": "Ada"}) == \
        "## Summarise {{reader}}\nfor Ada about {{reader}}"
    assert sorted(s.split(":")[0] for s in skipped) == [
        "prompts/-dash.md", "prompts/big.md", "prompts/folder.md", "prompts/latin1.md"]
    with pytest.raises(PromptArgumentsError, match="missing reader"):
        found["a"].render({"topic": "x"})
    assert read_prompts(tmp_path / "nowhere") == ({}, [])
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "prompts").symlink_to(prompts)  # the folder itself a link: nothing read through it
    assert read_prompts(linked) == ({}, ["prompts/: a link (links are not followed)"])


def _outcome(run_id: str, events: list[dict[str, object]] | None = None, error: FlowError | None = None,
             journal: Path | None = Path("j.jsonl")) -> RunOutcome:
    return RunOutcome(run_id, result="done" if error is None else None, error=error, events=events or [],
                      journal=journal)


def test_runs_are_kept_per_caller_and_bounded() -> None:
    runs = ServedRuns(limit=2)
    runs.add("ada", "w", _outcome("r000000000001"))
    runs.add("bob", "w", _outcome("r000000000002"))
    runs.add("ada", "w", _outcome("r000000000003"))
    runs.add("ada", "w", _outcome("r000000000004", journal=None))  # refused before it started: no run
    assert [r.run_id for r in runs.of("ada")] == ["r000000000003"]  # the oldest dropped
    assert runs.get("bob", "flow://runs/r000000000002") is not None
    assert runs.get("ada", "flow://runs/r000000000002") is None
    assert run_id_of("flow://runs/r000000000002/x") is None and run_id_of("flow://runs/../r1") is None


def test_the_primary_artifact_comes_right_after_the_summary() -> None:
    events: list[dict[str, object]] = [
        {"type": "artifact.published", "data": {"name": "notes.txt", "text": "n"}},
        {"type": "artifact.published", "data": {"name": "report.md", "text": "# R", "primary": True}},
    ]
    outcome = _outcome("r000000000001", events)
    runs = ServedRuns()
    runs.add("ada", "w", outcome)
    run = runs.get("ada", "flow://runs/r000000000001")
    assert run is not None
    assert [(c.uri.rsplit("/", 1)[-1], c.text) for c in run.contents][1:] == [
        ("report.md", "# R"), ("result", '"done"'), ("notes.txt", "n")]


def test_log_levels_per_connection() -> None:
    levels = LogLevels(limit=1)
    assert not levels.wants(("ada", "s1"), "emergency")  # no level set: nothing
    levels.set(("ada", "s1"), "warning")
    assert levels.wants(("ada", "s1"), "error") and not levels.wants(("ada", "s1"), "info")
    assert not levels.wants(("bob", "s1"), "error")
    levels.set(("bob", "s2"), "debug")
    assert not levels.wants(("ada", "s1"), "error")  # the oldest connection forgotten


def test_enum_values_of_a_parameter() -> None:
    schema = {"type": "object", "properties": {
        "size": {"$ref": "#/$defs/Size"}, "crust": {"type": "string", "enum": ["thin", "thick"]},
        "maybe": {"anyOf": [{"$ref": "#/$defs/Size"}, {"type": "null"}]}, "n": {"type": "integer", "enum": [1, 2]}},
        "$defs": {"Size": {"type": "string", "enum": ["s", "m"]}}}
    assert enum_values(schema, "size") == ["s", "m"] and enum_values(schema, "crust") == ["thin", "thick"]
    assert enum_values(schema, "maybe") == ["s", "m"]
    assert enum_values(schema, "n") == [] and enum_values(schema, "missing") == []

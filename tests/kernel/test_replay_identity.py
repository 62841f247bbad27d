"""Replay identity over the real kernel protocol (issue 17, item 1): under `%replay`, an
unchanged cell replays every time it runs, an edited prompt misses with the nearest recorded
request and a diff, and `%record` of the same cell again replaces its entries only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kernel.kernel_helpers import execute, start

CELL = 'parallelMap(range(2), i => a("Summarise the notes for users"))'
OTHER = 'a("bye", label: "bye")'


@pytest.fixture()
def kernel(tmp_path: Path) -> Iterator[tuple[Path, object]]:
    km, kc = start(tmp_path, live_view=False)
    yield tmp_path, kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def entries(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_rerun_edit_and_rerecord_cells_under_replay(kernel: tuple[Path, object]) -> None:
    folder, kc = kernel
    assert execute(kc, 'agent a { model: "scripted", script: ["one", "two"] }').status == "ok"
    assert execute(kc, "%record tape.jsonl").status == "ok"
    assert execute(kc, CELL).result == '["one", "two"]'
    assert execute(kc, OTHER).result == 'one'
    recorded = entries(folder / "tape.jsonl")
    assert execute(kc, CELL).status == "ok"  # recording the same cell again
    assert len(entries(folder / "tape.jsonl")) == len(recorded) == 3  # replaced, not piled up
    assert [e["output"] for e in entries(folder / "tape.jsonl") if e["label"] == "bye"] == ["one"]  # kept

    # The live agent would now answer otherwise: only a replay gives the recorded answers.
    assert execute(kc, 'agent a { model: "scripted", script: ["live"] }').status == "ok"
    assert execute(kc, "%replay tape.jsonl").status == "ok"
    for _ in range(2):  # the same cell, run again: execution counts change, its answers do not
        again = execute(kc, CELL)
        assert again.status == "ok", again.error
        assert again.result == '["one", "two"]'
    assert execute(kc, OTHER).result == 'one'
    edited = execute(kc, CELL.replace("for users", "for developers"))
    assert edited.status == "error"
    evalue = str(edited.content["evalue"])
    assert "nearest recorded request" in evalue
    assert "-Summarise the notes for users" in evalue and "+Summarise the notes for developers" in evalue


def test_reordered_cells_replay_and_an_edit_that_keeps_the_prompt_says_so(kernel: tuple[Path, object]) -> None:
    """The must-show of issue 17: cells run in another order than they were recorded in (and
    one run twice in between) replay their own answers; an edited cell misses, with the diff
    when its prompt changed and saying the prompt is the same when only the cell changed."""
    folder, kc = kernel
    first = 'a("Draft the release note")'
    second = 'a("Review the release note", label: "review")'
    assert execute(kc, 'agent a { model: "scripted", script: [when("Draft", "draft"), when("Review", "looks good")] }').status == "ok"
    assert execute(kc, "%record tape.jsonl").status == "ok"
    assert [execute(kc, first).result, execute(kc, second).result] == ["draft", "looks good"]
    assert execute(kc, 'agent a { model: "scripted", script: ["live"] }').status == "ok"
    assert execute(kc, "%replay tape.jsonl").status == "ok"
    # Reordered: the second cell first, then the first twice; then the second again.
    assert [execute(kc, cell).result for cell in (second, first, first, second)] == \
        ["looks good", "draft", "draft", "looks good"]
    changed = execute(kc, first.replace("Draft", "Write"))
    assert changed.status == "error"
    assert "-Draft the release note" in str(changed.content["evalue"])
    assert "+Write the release note" in str(changed.content["evalue"])
    moved = execute(kc, "let note = " + first)  # the same prompt, the call written elsewhere
    assert moved.status == "error"
    assert "with the same prompt: the cell's or file's text changed" in str(moved.content["evalue"])
    assert "record it again" in str(moved.content["evalue"])
    assert len(entries(folder / "tape.jsonl")) == 2  # replaying wrote nothing

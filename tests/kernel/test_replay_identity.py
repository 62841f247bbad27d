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

"""The doors of `%eval` / `flow eval` (issue 21).

- A notebook's `%eval` reads its data and writes its results only inside the notebook's
  folder unless the person grants a path: `--out ../victim` from a stranger's notebook is
  refused (CapabilityDenied) and nothing is written; the same magic with the grant check
  removed (the door reopened) overwrites the victim.
- The results file is never written through a symbolic link planted at `--out`: the eval
  is a usage error and the link's target is untouched; with the no-follow open replaced by
  a plain one (the door reopened), the target is overwritten.
- A notebook cannot name a Ray cluster (`--ray-address`): the program, providers and
  configuration would travel to it. `%eval` has no such option.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from flow_kernel.frontend import eval_magic
from flow_kernel.frontend.magics import MagicError, notebook_trust
from flow_kernel.runtime.eval import results as results_module
from flow_kernel.runtime.eval.runner import EvalUsageError
from flow_kernel.runtime.policy.trust import CapabilityDenied
from flow_kernel.runtime.session import Session

PROGRAM = "workflow double(n: int) -> int { return n * 2 }\n"
PRECIOUS = "the person's own file\n"


@pytest.fixture()
def notebook(tmp_path: Path) -> tuple[Session, Path]:
    folder = tmp_path / "notebook"
    folder.mkdir()
    (folder / "cases.jsonl").write_text('{"n": 1, "expected": 2}\n{"n": 2, "expected": 4}\n')
    victim = tmp_path / "victim.txt"
    victim.write_text(PRECIOUS)
    session = Session(directory=folder, allow=notebook_trust(folder), sandbox=False, journal_dir=None)
    session.run(PROGRAM)
    return session, victim


def test_eval_out_of_the_folder_is_refused(notebook: tuple[Session, Path]) -> None:
    session, victim = notebook
    with pytest.raises(CapabilityDenied, match=r"victim\.txt"):
        asyncio.run(eval_magic.run_eval_magic(session, "double --data cases.jsonl --out ../victim.txt"))
    with pytest.raises(CapabilityDenied):
        asyncio.run(eval_magic.run_eval_magic(session, f"double --data {victim}"))
    assert victim.read_text() == PRECIOUS


def test_the_door_reopened_overwrites_the_victim(notebook: tuple[Session, Path],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    session, victim = notebook
    monkeypatch.setattr(eval_magic, "eval_needs", lambda session, args: [])  # the grant check removed
    asyncio.run(eval_magic.run_eval_magic(session, "double --data cases.jsonl --out ../victim.txt"))
    assert victim.read_text() != PRECIOUS and '"kind":"eval"' in victim.read_text()


def test_a_notebook_names_no_ray_cluster(notebook: tuple[Session, Path]) -> None:
    with pytest.raises(MagicError, match="unrecognized arguments: --ray-address"):
        eval_magic.parse_eval("double --data cases.jsonl --executor ray --ray-address 203.0.113.9:6379")


def test_results_are_not_written_through_a_link(notebook: tuple[Session, Path]) -> None:
    session, victim = notebook
    os.symlink(victim, session.directory / "results.jsonl")
    person = Session(directory=session.directory, sandbox=False, journal_dir=None)
    with pytest.raises(EvalUsageError, match="symbolic link"):
        person.eval("double", "cases.jsonl", program=PROGRAM, out="results.jsonl")
    assert victim.read_text() == PRECIOUS


def test_a_link_followed_would_overwrite_the_target(notebook: tuple[Session, Path],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    session, victim = notebook
    os.symlink(victim, session.directory / "results.jsonl")

    def plain_open(path: Path, *, append: bool) -> int:  # the door reopened: a link is followed
        return os.open(path, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC), 0o644)

    monkeypatch.setattr(results_module, "_open_no_link", plain_open)
    Session(directory=session.directory, sandbox=False, journal_dir=None).eval(
        "double", "cases.jsonl", program=PROGRAM, out="results.jsonl")
    assert victim.read_text() != PRECIOUS

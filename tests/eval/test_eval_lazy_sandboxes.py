"""An eval's sandboxes start as its items need them (sandbox/pool.py): 200 scripted cases at
concurrency 8 run in one sandbox when none waits long enough to need another, and give
the same results, scores and report as at concurrency 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow_kernel.runtime.session import Session
from flow_kernel.sandbox import pool as pool_module
from flow_kernel.sandbox.pool import SandboxPool
from tests.eval.cases import PROGRAM, SCORERS, write_cases


def test_200_items_at_concurrency_8_start_one_sandbox_and_match_concurrency_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No run waits 30 s here: a second sandbox would be one the work did not need (before
    # the pool started them lazily, the eval started one per concurrent item, and a spare).
    # (How long a start takes, the wait's usual length, depends on the machine's load.)
    monkeypatch.setattr(pool_module, "SPAWN_AFTER", 30.0)
    monkeypatch.setattr(pool_module, "SPAWN_AFTER_BOUNDS", (30.0, 30.0))
    started: list[int] = []
    close = SandboxPool.close

    async def counting_close(self: SandboxPool) -> None:
        started.append(self.started)
        await close(self)

    monkeypatch.setattr(SandboxPool, "close", counting_close)
    write_cases(tmp_path / "cases.jsonl")
    reports = {}
    for concurrency in (1, 8):
        session = Session(directory=tmp_path, journal_dir=None)
        reports[concurrency] = session.eval("classify", "cases.jsonl", program=PROGRAM, scorers=SCORERS,
                                            concurrency=concurrency)
    assert started == [1, 1]

    def outcome(report: object) -> list[tuple[object, ...]]:
        return [(r.id, r.output, r.error, {k: (s.score, s.passed) for k, s in r.scores.items()})
                for r in report.results]  # type: ignore[attr-defined]

    assert outcome(reports[8]) == outcome(reports[1])
    one, eight = reports[1].summary, reports[8].summary
    assert (eight.items, eight.completed, eight.failures) == (one.items, one.completed, one.failures)
    assert {n: (s.mean, s.pass_rate) for n, s in eight.scorers.items()} == \
           {n: (s.mean, s.pass_rate) for n, s in one.scorers.items()}

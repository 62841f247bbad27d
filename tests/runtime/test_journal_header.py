"""A run's header is made while the sandbox starts the run, and is still its journal's first
line: written before any other line, at the latest when the journal closes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable import journal as journal_module
from flow_kernel.runtime.durable.journal import Journal, read_checkpoint
from flow_kernel.runtime.executors import SandboxExecutor
from flow_kernel.runtime.run import run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor
from flow_kernel.sandbox.pool import SandboxPool

EVENT = {"type": "print", "seq": 1, "data": {"text": "hi"}}


def _kinds(path: Path) -> list[str]:
    return [line.get("journal") or line["type"] for line in map(json.loads, path.read_text().splitlines())]


def _journal_with_a_first_record(tmp_path: Path, made: list[int]) -> Journal:
    journal = Journal(tmp_path, "r000000000001")
    journal.record_first("header", lambda: {"n": made.append(1) or len(made)})
    assert journal.path.read_text() == "" and made == []  # nothing made or written yet
    return journal


def test_the_first_record_comes_before_an_event(tmp_path: Path) -> None:
    made: list[int] = []
    journal = _journal_with_a_first_record(tmp_path, made)
    journal(EVENT)
    journal.close()
    assert _kinds(journal.path) == ["header", "print"] and made == [1]
    assert read_checkpoint(journal.path).header is not None  # sealed first in the chain


def test_the_first_record_comes_before_another_record(tmp_path: Path) -> None:
    journal = _journal_with_a_first_record(tmp_path, [])
    journal.record("effect", {"key": "now:1"}, sync=False)
    journal.close()
    assert _kinds(journal.path) == ["header", "effect"]
    assert set(read_checkpoint(journal.path).effects) == {"now:1"}


def test_the_first_record_is_written_once_at_the_latest_on_close(tmp_path: Path) -> None:
    made: list[int] = []
    journal = _journal_with_a_first_record(tmp_path, made)
    journal.write_first()
    journal.write_first()
    journal.close()
    assert _kinds(journal.path) == ["header"] and made == [1]
    other = _journal_with_a_first_record(tmp_path / "b", [])
    other.close()
    assert _kinds(other.path) == ["header"]


def test_a_journal_that_cannot_be_sealed_says_so_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable() -> bytes:
        raise journal_module.JournalForged("the journal key is unreadable")

    monkeypatch.setattr(journal_module, "_seal_key", unreadable)
    journal = Journal(tmp_path, "r000000000001")
    with pytest.raises(ValueError, match="unreadable"):
        journal.record_first("header", dict)
    journal.close()


def test_an_in_process_run_journals_its_header_first(tmp_path: Path) -> None:
    compiled = compile_source(SourceFile("h.flow", 'print "now"\nlet t = now()\n1'))
    outcome = asyncio.run(run_compiled(compiled, InProcessExecutor(), RunContext(journal_dir=tmp_path)))
    assert outcome.ok and outcome.journal is not None
    kinds = _kinds(outcome.journal)
    assert kinds[0] == "header" and kinds.count("header") == 1 and kinds[-1] == "end"
    assert read_checkpoint(outcome.journal).effects  # `now()` journaled after the header


def test_the_header_is_written_after_the_run_request_went_to_the_sandbox(tmp_path: Path) -> None:
    compiled = compile_source(SourceFile("h.flow", "1 + 1"))
    seen: list[int] = []

    async def go() -> Any:
        pool = SandboxPool()
        await pool.prestart()  # a warm process: the request goes out in the run's own turn
        executor = SandboxExecutor(pool)
        original = pool.run

        async def run_and_look(*a: Any, **kw: Any) -> Any:
            bind = kw["bind"]

            def bind_and_look(process: Any) -> None:  # the request is written (SandboxPool.run)
                seen.extend(p.stat().st_size for p in tmp_path.glob("*.jsonl"))
                bind(process)

            kw["bind"] = bind_and_look
            return await original(*a, **kw)

        pool.run = run_and_look  # type: ignore[method-assign]
        try:
            return await run_compiled(compiled, executor, RunContext(journal_dir=tmp_path))
        finally:
            await pool.close()

    outcome = asyncio.run(go())
    assert outcome.result == 2 and seen == [0]  # the journal was there, empty, when Node had the run
    assert _kinds(outcome.journal)[0] == "header"

"""Cancelling a run by id (runtime/durable/cancel.py, docs/durability.md): a waiting run
cancelled in its journal, a running one by a request its own process sees, the refusals
with their codes (an ended run, an unknown run, an id that is not one), and a request file
that cannot be planted or forged into more than a cancel. In-process: the sandbox-backed
run cancelled from another process is tests/test_cli_cancel.py."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable import cancel
from flow_kernel.runtime.durable.cancel import (
    CancelWatch,
    cancel_run,
    read_request,
    request_path,
    settle,
    watch_for,
)
from flow_kernel.runtime.durable.journal import locked_for_append, read_checkpoint
from flow_kernel.runtime.durable.resume import ResumeRefused, list_runs, runs_table
from flow_kernel.runtime.providers.base import ProviderReply, ProviderRequest
from flow_kernel.runtime.session import Session

WAITS = 'let ok = approve "Ship it?"\nok ? "shipped" : "kept"\n'


def journals(tmp_path: Path) -> Path:
    return tmp_path / ".flow" / "runs"


def waiting_run(tmp_path: Path) -> tuple[Session, str]:
    session = Session(directory=tmp_path, operator="defer", sandbox=False)
    outcome = session.run(WAITS)
    assert outcome.status == "waiting"
    return session, outcome.run_id


def refusal(journal_dir: Path | None, run: str) -> ResumeRefused:
    with pytest.raises(ResumeRefused) as refused:
        cancel_run(journal_dir, run, "flow cancel")
    return refused.value


def test_a_waiting_run_is_cancelled_in_its_journal_and_is_over(tmp_path: Path) -> None:
    session, run = waiting_run(tmp_path)
    done = cancel_run(journals(tmp_path), run, "flow cancel")
    assert done.to_json() == {"run": run, "status": "cancelled", "by": "flow cancel"}
    checkpoint = read_checkpoint(journals(tmp_path) / f"{run}.jsonl")  # the end record is sealed: it verifies
    assert checkpoint.status == "cancelled" and checkpoint.ends[-1]["by"] == "flow cancel"
    assert checkpoint.ends[-1]["user"]
    (info,) = list_runs(journals(tmp_path))
    assert info.status == "cancelled" and info.to_json()["ended"] == "cancelled by flow cancel"
    assert "cancelled by flow cancel" in runs_table([info])
    assert list_runs(journals(tmp_path), waiting=True) == []

    with pytest.raises(ResumeRefused) as resumed:
        session.resume(run)
    assert resumed.value.code == "run-ended" and "cancelled by flow cancel" in resumed.value.message
    pending = read_checkpoint(journals(tmp_path) / f"{run}.jsonl").pending
    with pytest.raises(ResumeRefused) as answered:
        session.answer(run, next(iter(pending)), True)
    assert answered.value.code == "run-ended"
    again = refusal(journals(tmp_path), run)
    assert again.code == "run-ended" and "nothing to cancel" in again.message


def test_a_completed_run_has_nothing_to_cancel(tmp_path: Path) -> None:
    outcome = Session(directory=tmp_path, sandbox=False).run("1 + 1")
    refused = refusal(journals(tmp_path), outcome.run_id)
    assert refused.code == "run-ended" and refused.details["status"] == "completed"
    assert read_checkpoint(journals(tmp_path) / f"{outcome.run_id}.jsonl").status == "completed"


@pytest.mark.parametrize("run", ["../../etc/passwd", "/etc/passwd", "r123", "R0123456789ab", "r0123456789ab/..",
                                 "last", ""])
def test_an_id_that_is_not_a_run_id_names_no_file(tmp_path: Path, run: str) -> None:
    waiting_run(tmp_path)
    refused = refusal(journals(tmp_path), run)
    assert refused.code == "unknown-run" and "is not a run id" in refused.message
    assert sorted(p.suffix for p in journals(tmp_path).iterdir()) == [".jsonl"]  # nothing written


def test_an_unknown_run_and_a_session_without_journals(tmp_path: Path) -> None:
    waiting_run(tmp_path)
    unknown = refusal(journals(tmp_path), "r0123456789ab")
    assert unknown.code == "unknown-run" and "no run r0123456789ab" in unknown.message
    assert refusal(None, "r0123456789ab").code == "unknown-run"


def test_a_run_a_process_holds_gets_a_request_not_an_end(tmp_path: Path) -> None:
    _, run = waiting_run(tmp_path)
    with locked_for_append(journals(tmp_path), run):  # as the process running it holds its journal
        done = cancel_run(journals(tmp_path), run, "%cancel")
        assert done.status == "requested"
        assert cancel_run(journals(tmp_path), run, "flow cancel").status == "requested"  # the first request stands
    request = read_request(request_path(journals(tmp_path), run))
    assert request is not None and request.by == "%cancel"
    assert request.error().code == "cancelled" and request.error().details["by"] == "%cancel"
    assert read_checkpoint(journals(tmp_path) / f"{run}.jsonl").status == "waiting"  # the owner writes the end
    # the process let the run go without seeing the request (it stopped waiting): cancelled now, request gone
    assert asyncio.run(settle(journals(tmp_path), run, "%cancel", 0)) == "cancelled"
    assert not request_path(journals(tmp_path), run).exists()
    assert read_checkpoint(journals(tmp_path) / f"{run}.jsonl").ends[-1]["by"] == "%cancel"


def test_a_link_planted_as_the_request_is_never_written_through(tmp_path: Path) -> None:
    _, run = waiting_run(tmp_path)
    target = tmp_path / "precious.txt"
    target.write_text("keep", encoding="utf-8")
    os.symlink(target, request_path(journals(tmp_path), run))
    with locked_for_append(journals(tmp_path), run), pytest.raises(ResumeRefused) as refused:
        cancel_run(journals(tmp_path), run, "flow cancel")
    assert refused.value.code == "cancel-refused" and "symbolic link" in refused.value.message
    assert target.read_text(encoding="utf-8") == "keep"
    assert read_request(request_path(journals(tmp_path), run)) is None  # a link is no request: never followed


@pytest.mark.parametrize("text", [b"not json", b'{"by": "\\u001b[31mroot", "user": "x; rm -rf /"}', b"[1]"])
def test_a_request_says_only_what_it_may(tmp_path: Path, text: bytes) -> None:
    path = tmp_path / "r0123456789ab.cancel"
    path.write_bytes(text)
    request = read_request(path)
    assert request is not None and request.by == "another process" and request.user == "unknown"


class WritesTheRequest:
    """A provider whose first answer comes after a cancel request for the run asking it was written."""

    def __init__(self, journal_dir: Path) -> None:
        self.journal_dir = journal_dir
        self.asked: list[str] = []

    async def attempt(self, request: ProviderRequest) -> ProviderReply:
        self.asked.append(request.prompt)
        if len(self.asked) == 1:
            (run,) = [p.stem for p in self.journal_dir.glob("r*.jsonl")]
            assert cancel_run(self.journal_dir, run, "flow cancel").status == "requested"
            await asyncio.sleep(0.6)  # the watch sees it meanwhile (POLL_SECONDS), or at the next effect
        return ProviderReply(f"ans:{request.prompt}", {"input_tokens": 1, "output_tokens": 1})


def test_the_owning_process_stops_the_run_and_journals_who_cancelled_it(tmp_path: Path) -> None:
    provider = WritesTheRequest(journals(tmp_path))
    session = Session(directory=tmp_path, sandbox=False, context=RunContext(providers={"slow": provider}))
    outcome = session.run('agent a { model: "slow/m" }\nlet one = a("one")\nlet two = a("two")\n[one, two]')
    assert outcome.error is not None and outcome.error.code == "cancelled", outcome.error
    assert "cancelled by flow cancel" in outcome.error.message
    assert provider.asked == ["one"]  # nothing past the cancel
    checkpoint = read_checkpoint(journals(tmp_path) / f"{outcome.run_id}.jsonl")
    assert checkpoint.status == "cancelled" and checkpoint.ends[-1]["by"] == "flow cancel"
    assert not request_path(journals(tmp_path), outcome.run_id).exists()  # answered: removed


def test_the_watch_looks_at_most_every_poll_and_sees_a_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cancel, "POLL_SECONDS", 0.01)
    folder = journals(tmp_path)
    folder.mkdir(parents=True)
    watch = CancelWatch(folder, "r0123456789ab")
    assert watch.check() is None
    watch.path.write_text(json.dumps({"by": "%cancel", "user": "ann"}), encoding="utf-8")
    seen: list[str] = []

    async def until_seen() -> None:
        watch.watch(lambda request: seen.append(request.by))
        while not seen:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.03)  # seen once: the timer is not set again

    asyncio.run(until_seen())
    assert seen == ["%cancel"] and watch.request is not None and watch.request.user == "ann"
    watch.clear()
    assert not watch.path.exists()


def test_an_ended_watch_no_longer_looks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cancel, "POLL_SECONDS", 0.01)
    folder = journals(tmp_path)
    folder.mkdir(parents=True)
    watch = CancelWatch(folder, "r0123456789ab")
    seen: list[str] = []

    async def ended_then_requested() -> None:
        end = watch.watch(lambda request: seen.append(request.by))
        await asyncio.sleep(0.015)  # one look, nothing there: the timer is set again
        end()
        watch.path.write_text(json.dumps({"by": "%cancel", "user": "ann"}), encoding="utf-8")
        await asyncio.sleep(0.03)

    asyncio.run(ended_then_requested())
    assert seen == [] and watch.request is None


def test_a_run_id_a_caller_chose_gets_no_watch(tmp_path: Path) -> None:
    assert watch_for(journals(tmp_path), "rctx") is None and watch_for(None, "r0123456789ab") is None
    watch = watch_for(journals(tmp_path), "r0123456789ab")
    assert watch is not None and watch.path.name == "r0123456789ab.cancel"
    outcome = asyncio.run(Session(directory=tmp_path, sandbox=False).run_async("1 + 1", run_id="rchosen"))
    assert outcome.error is None and outcome.run_id == "rchosen"  # runs and journals as before
    assert read_checkpoint(journals(tmp_path) / "rchosen.jsonl").status == "completed"

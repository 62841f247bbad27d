"""A run cancelled before the sandbox has taken it (a served call given up while the pool still
starts its process) is journaled as cancelled, never as `completed`: `flow resume` and
`flow runs` read that end."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from flow_kernel.runtime.session import Session


def test_a_run_cancelled_while_its_sandbox_starts_ends_cancelled_in_the_journal(tmp_path: Path) -> None:
    async def go() -> None:
        session = Session(directory=tmp_path)
        try:
            run = asyncio.ensure_future(session.run_async("1 + 1", run_id="rcancelledearly"))
            await asyncio.sleep(0.05)  # the pool is starting its first process: far from ready
            assert not run.done()
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
        finally:
            await session.aclose()

    asyncio.run(go())
    lines = [json.loads(line) for line in (tmp_path / ".flow" / "runs" / "rcancelledearly.jsonl").read_text().splitlines()]
    end = lines[-1]
    assert (end["journal"], end["status"], end.get("error")) == ("end", "failed", "cancelled")
    assert not any(line.get("type") == "workflow.started" for line in lines)  # it never reached the sandbox

"""`%cancel` in the Flow kernel over the real Jupyter protocol (docs/durability.md): a run
left waiting by `%operator defer` cancelled in its journal, a `%background` run that a
`run` child keeps busy stopped by its own kernel seeing the request, both shown by `%runs`
as cancelled by `%cancel` and refused by `%resume`; an id that is not a run's is refused."""

from __future__ import annotations

import re
from pathlib import Path

from flow_kernel.runtime.durable.journal import read_checkpoint
from tests.kernel.kernel_helpers import execute, start


def shown(reply: object) -> str:
    return "\n".join(str(c["data"].get("text/plain")) for c in reply.of("display_data"))  # type: ignore[attr-defined]


def test_cancel_a_waiting_and_a_background_run_in_a_kernel(tmp_path: Path) -> None:
    km, kc = start(tmp_path, live_view=False, allow="run:sleep")
    try:
        waits = execute(kc, '%operator defer\nlet ok = approve "Ship it?"\nok')
        assert waits.status == "ok", waits.outputs
        waiting = re.search(r"run (r[0-9a-f]{12}) is waiting", shown(waits))
        assert waiting, shown(waits)
        first = execute(kc, "%cancel last")
        assert first.status == "ok" and f"cancelled run {waiting.group(1)}" in shown(first), first.outputs

        execute(kc, "%operator auto-deny\n%allow run sleep")
        started = execute(kc, '%background\nlet slept = run "sleep" ["60"]\nslept.stdout')
        assert started.status == "ok", started.outputs
        second = execute(kc, "%cancel last")
        assert second.status == "ok", second.outputs
        background = re.search(r"cancelled run (r[0-9a-f]{12})", shown(second))
        assert background and background.group(1) != waiting.group(1), shown(second)

        listed = shown(execute(kc, "%runs"))
        assert listed.count("cancelled by %cancel") == 2, listed
        resumed = execute(kc, f"%resume {waiting.group(1)}")
        assert resumed.status == "error" and "run-ended" in resumed.error["evalue"]  # type: ignore[index]
        bad = execute(kc, "%cancel ../../etc/passwd")
        assert bad.status == "error" and "unknown-run" in bad.error["evalue"]  # type: ignore[index]
        none_left = execute(kc, "%cancel last")
        assert none_left.status == "error" and "no run here is running" in none_left.error["evalue"]  # type: ignore[index]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    for run in (waiting.group(1), background.group(1)):
        checkpoint = read_checkpoint(tmp_path / ".flow" / "runs" / f"{run}.jsonl")
        assert checkpoint.status == "cancelled" and checkpoint.ends[-1]["by"] == "%cancel"

"""A resumed run's live view over the real protocol: the run keeps its id, but each execution
gets a display of its own, so the resumed run's summary replaces its own live view and never
the view of the cell that left the run waiting (that one keeps saying `waiting`)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.kernel.kernel_helpers import Reply, execute, start

DEFERRED = '%operator defer\nlet ok = approve "Ship it?"\nok ? "shipped" : "kept"'


def live_display(reply: Reply) -> str:
    [live] = [c for c in reply.of("display_data") if "application/vnd.jupyter.widget-view+json" in c["data"]]
    return str(live["transient"]["display_id"])


def updated(reply: Reply) -> list[tuple[str, str]]:
    return [(c["transient"]["display_id"], c["data"]["text/plain"]) for c in reply.of("update_display_data")]


def test_a_resumed_run_updates_its_own_view_not_the_waiting_cells(tmp_path: Path) -> None:
    km, kc = start(tmp_path)
    try:
        waiting = execute(kc, DEFERRED, allow_stdin=True)  # a person is there: the live view shows
        assert waiting.status == "ok", waiting.outputs
        pending = re.search(r"^\s+(p[0-9a-f]{10})\s+approve: Ship it\?", "\n".join(
            str(c["data"].get("text/plain")) for c in waiting.of("display_data")), re.M)
        assert pending, waiting.outputs
        first = live_display(waiting)
        assert [d for d, _ in updated(waiting)] == [first]
        assert execute(kc, f"%answer last {pending.group(1)} true").status == "ok"
        resumed = execute(kc, "%resume last", allow_stdin=True)
        assert resumed.status == "ok", resumed.outputs
        second = live_display(resumed)
        assert second != first
        assert [d for d, _ in updated(resumed)] == [second]
        assert "completed" in updated(resumed)[0][1]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)

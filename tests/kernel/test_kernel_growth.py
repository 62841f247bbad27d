"""What the Flow kernel keeps per cell, over the real protocol: after N more cells the
kernel holds no more objects, allocated bytes or SQLite memory than a small allowance
(docs/performance.md, "The kernel's growth over cells"). Not a timing: counts read inside
the kernel (tests/kernel/growth_probe.py) after cell N and after cell 2N.

Each cell is the `flow bench` memory cell (an agent call and a little data) with a 4 KB
comment, its history stored in a file: a kernel that kept each line in memory as well
(4 KB a cell, and a list) or let SQLite's page cache grow with the appended pages (two
copies of the text a cell, up to 2 MiB) fails by a wide margin, while what a kernel must
keep per cell (jupyter_client's signatures of the messages it has accepted, a bounded
set against replays) stays far below it."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from flow_kernel.bench.memory import CELL, SETUP
from tests.kernel.kernel_helpers import TIMEOUT, execute

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGUSR1 and glibc's counts")

N = 100
COMMENT = "# " + "filler " * 580 + "\n"  # ~4 KB of the cell's text
PROBE = Path(__file__).with_name("growth_probe.py")


def _probe_kernel(tmp_path: Path) -> KernelManager:
    spec = tmp_path / "kernels" / "flow-growth-probe"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, str(PROBE), "-f", "{connection_file}"],
        "display_name": "Flow (growth probe)", "language": "flow", "interrupt_mode": "message"}))
    return KernelManager(kernel_name="flow-growth-probe",
                         kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")]))


def _read(km: KernelManager, out: Path, number: int) -> dict[str, int | None]:
    os.kill(km.provisioner.pid, signal.SIGUSR1)  # type: ignore[union-attr]
    report = out / f"{number}.json"
    deadline = time.monotonic() + TIMEOUT
    while not report.exists():
        assert km.is_alive() and time.monotonic() < deadline, "the kernel did not report"
        time.sleep(0.02)
    figures: dict[str, int | None] = json.loads(report.read_text())
    return figures


def test_the_kernel_keeps_nothing_per_cell_beyond_a_small_allowance(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    out.mkdir()
    km = _probe_kernel(tmp_path)
    env = {**os.environ, "FLOW_LIVE_VIEW": "on", "FLOW_HISTORY": str(tmp_path / "history.sqlite"),
           "FLOW_GROWTH_PROBE_OUT": str(out)}
    km.start_kernel(cwd=str(tmp_path), env=env)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        cell = COMMENT + CELL
        assert execute(kc, SETUP).status == "ok"
        reads = []
        for n in range(1, 2 * N + 1):
            reply = execute(kc, cell, allow_stdin=True)  # a person at the frontend: the live view too
            assert reply.status == "ok" and reply.result == '[7, "ok"]', reply.content
            if n in (N, 2 * N):
                reads.append(_read(km, out, len(reads)))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    first, last = reads
    # Measured (N = 100): a kernel that kept each line in memory and let SQLite's cache grow
    # added 1.4 MB to the C heap and 0.9 MB to SQLite; this one ~20 KB and nothing.
    if last["malloc"] is not None and first["malloc"] is not None:
        # The C heap: a kept 4 KB line, or SQLite's cache of the appended pages, adds ≥ 4 KB a cell.
        assert last["malloc"] - first["malloc"] < 1024 * N, reads
    if last["sqlite"] is not None and first["sqlite"] is not None:
        # SQLite's cache is bounded (64 KiB): it holds no more after cell 2N than after cell N.
        assert last["sqlite"] < 256 * 1024 and last["sqlite"] - first["sqlite"] < 32 * 1024, reads
    # Containers kept per cell (a run's record, its events) would add several a cell; what
    # these counts move by between two readings without one is ±150.
    assert last["objects"] - first["objects"] < N, reads  # type: ignore[operator]
    # Small objects: ~1 block a cell is jupyter_client's replay guard (a signature a message).
    assert last["blocks"] - first["blocks"] < 4 * N, reads  # type: ignore[operator]

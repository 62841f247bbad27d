"""Soak: one Flow kernel, many cells and many wide runs, over the real protocol — no
failure, and memory (kernel + its sandbox processes, RSS) that stops growing.

Default: 200 cells and 10 runs of 50 parallel agent calls (about a minute). FLOW_SOAK=1:
the full 1,000 cells and 100 runs of 50 parallel calls each. Memory is measured after a
warm-up (the first tenth) and at the end; growth must stay under 50% — generous, since
the pool may replace a sandbox process meanwhile, but a leak per cell or per call grows
far past it over the long variant."""

from __future__ import annotations

import os
from pathlib import Path

import psutil

from tests.kernel.kernel_helpers import execute
from tests.reliability.fault_helpers import check_journal, journals, sandbox_processes, start_kernel

LONG = os.environ.get("FLOW_SOAK") == "1"
CELLS = 1000 if LONG else 200
WIDE_RUNS = 100 if LONG else 10
WIDTH = 50


def rss(km: object) -> int:
    kernel = psutil.Process(km.provisioner.pid)  # type: ignore[attr-defined]
    total = kernel.memory_info().rss
    for process in sandbox_processes(km):  # type: ignore[arg-type]
        try:
            total += process.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total


def test_a_thousand_cells_and_a_hundred_wide_runs_in_one_kernel(tmp_path: Path) -> None:
    km, kc = start_kernel(tmp_path)
    samples: dict[str, int] = {}
    try:
        assert execute(kc, "var total = 0").status == "ok"
        for i in range(CELLS):
            # Cells that build on each other: declarations, bindings, a print, a result.
            code = (f'let v{i} = {{ n: {i}, tag: "cell-{i}", xs: range({i % 17}) }}\n'
                    f'total = total + v{i}.n\n'
                    + (f'print "at {i}"\n' if i % 10 == 0 else "")
                    + f"len(v{i}.xs) + {i}")
            reply = execute(kc, code)
            assert reply.status == "ok", (i, reply.content)
            assert reply.result == str(i % 17 + i), (i, reply.result)
            if i == CELLS // 10:
                samples["cells warm"] = rss(km)
        assert execute(kc, "total").result == str(sum(range(CELLS)))
        samples["cells end"] = rss(km)
        assert execute(kc, 'agent wide { model: "mock", output: { id: int, ok: bool } }').status == "ok"
        for run in range(WIDE_RUNS):
            before = journals(tmp_path)
            reply = execute(kc, f'limits {{ concurrency: {WIDTH}, agent_runs: {WIDTH} }}\n'
                                f'let answers = parallelMap(range({WIDTH}), i => wide("item ${{i}} of run {run}"), '
                                f'concurrency: {WIDTH})\nlen(answers)')
            assert reply.status == "ok" and reply.result == str(WIDTH), (run, reply.content)
            (journal,) = journals(tmp_path) - before
            events = check_journal(journal, ends_with=None)
            assert sum(1 for e in events if e["type"] == "agent.completed") == WIDTH
            if run == WIDE_RUNS // 10:
                samples["wide warm"] = rss(km)
        samples["wide end"] = rss(km)
        assert execute(kc, '"still answering"').result == "still answering"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    print({k: f"{v / 2**20:.0f} MiB" for k, v in samples.items()})
    assert samples["cells end"] < 1.5 * samples["cells warm"], samples
    assert samples["wide end"] < 1.5 * samples["wide warm"], samples

"""One open notebook — a Flow kernel after 100 small cells, with every process it started —
stays within its memory budget (docs/performance.md, "Memory per notebook"): PSS, read
from /proc, not a timing. Fails past the budget + 25 %."""

from __future__ import annotations

import sys

import pytest

from flow_kernel.bench.notebooks import BUDGET_MB, notebooks_pss

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads PSS from /proc")


def test_one_notebook_after_100_cells_stays_within_its_memory_budget() -> None:
    figures = notebooks_pss(1, 100)
    assert figures["sandbox_processes"] >= 1  # the kernel's sandbox was counted: the sum is not the kernel alone
    assert figures["kernel_pss_mb"] > 20 and figures["sandboxes_pss_mb"] > 30
    assert figures["per_notebook_pss_mb"] <= BUDGET_MB * 1.25, figures

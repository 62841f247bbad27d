"""The /proc reader the sandbox's memory and stack figures and the benchmarks share."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from flow_kernel.sandbox.procfs import proc_kib, status_bytes


def test_a_kib_figure_is_read_from_its_line(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text("Name:\tnode\nVmPeak:\t  900 kB\nVmRSS:\t  1234 kB\nVmStk:\t  132 kB\n")
    assert proc_kib(status, "VmRSS:") == 1234
    assert proc_kib(status, "VmStk:") == 132
    assert proc_kib(status, "VmSwap:") is None  # no such line
    assert proc_kib(tmp_path / "gone", "VmRSS:") is None  # the process is gone


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_this_process_has_a_resident_size_and_a_stack() -> None:
    assert 1024 * 1024 < status_bytes(os.getpid(), "VmRSS:") < 2**40
    assert status_bytes(os.getpid(), "VmStk:") > 0
    assert status_bytes(None, "VmRSS:") == 0 and status_bytes(2**22 + 12345, "VmRSS:") == 0

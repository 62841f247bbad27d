"""flow-kernel-lab's `src/adopt.ts` (a page reloaded mid-run shows the run's outputs) in
Node: labextension/test/adopt.test.cjs. The browser test is tests/browser/test_reload_mid_run.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from flow_kernel.sandbox.node import find_node

LAB = Path(__file__).resolve().parents[1] / "labextension"
TEST = LAB / "test" / "adopt.test.cjs"


@pytest.mark.skipif(not (LAB / "node_modules" / "typescript").is_dir() or not TEST.exists(),
                    reason="needs `npm ci` in labextension/")
def test_adopt_passes_its_node_tests() -> None:
    result = subprocess.run([find_node().path, "--test", "--test-reporter=tap", str(TEST)], cwd=LAB,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "# fail 0" in result.stdout and "# pass 0" not in result.stdout

"""Lint and type checks, as tests, so that the one test command is all CI runs.

Ruff covers the whole tree. Mypy (strict, see pyproject.toml) is enforced here on the
modules listed in `TYPED`; a module joins the list once it is clean. Imports into
modules not yet listed are followed silently, so their errors do not count here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

TYPED = [
    "flow_kernel/source.py",
    "flow_kernel/compiled_front.py",
    "flow_kernel/native_marks.py",
    "flow_kernel/markup.py",
    "flow_kernel/terminal_text.py",
    "flow_kernel/short_text.py",
    "flow_kernel/version.py",
    "flow_kernel/diagnostics",
    "flow_kernel/files.py",
    "flow_kernel/cli",
    "flow_kernel/lang",
    "flow_kernel/errors.py",
    "flow_kernel/runtime",
    "flow_kernel/sandbox/process.py",
    "flow_kernel/sandbox/pool.py",
    "flow_kernel/sandbox/node.py",
    "flow_kernel/sandbox/install.py",
    "flow_kernel/sandbox/inprocess.py",
    "flow_kernel/frontend",
    "flow_kernel/kernel",
    "flow_kernel/serve",
    "flow_kernel/__main__.py",
    "flow_kernel/views",
    "flow_kernel/highlight.py",
    "flow_kernel/bench",
]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff() -> None:
    pytest.importorskip(
        "ruff", reason="ruff is not installed (pip install -r requirements-dev.txt)"
    )
    proc = _run("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy() -> None:
    pytest.importorskip(
        "mypy", reason="mypy is not installed (pip install -r requirements-dev.txt)"
    )
    proc = _run("mypy", "--follow-imports=silent", *TYPED)
    assert proc.returncode == 0, proc.stdout + proc.stderr

"""Shared test setup: no test reads or writes the person's trust store or config.

`FLOW_CONFIG_HOME` points at one temporary folder for the whole test session (set in the
process environment, so kernels, `flow` subprocesses and sandboxes started by tests inherit
it), and `FLOW_ALLOW` from the developer's shell is dropped so that it grants nothing here.
Kernels keep their history in memory (`FLOW_HISTORY`) unless a test gives them a file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# How the suite splits over two workers (`-n 2 --dist loadfile`): tests/workers.py.
pytest_plugins = ["tests.workers"]

_CONFIG_HOME = Path(tempfile.mkdtemp(prefix="flow-test-config-"))


def pytest_configure(config: pytest.Config) -> None:
    os.environ["FLOW_CONFIG_HOME"] = str(_CONFIG_HOME)
    os.environ["FLOW_HISTORY"] = ":memory:"  # kernels keep no history file unless a test names one
    os.environ.pop("FLOW_ALLOW", None)
    # The suite runs the pure-Python front end, which it can patch and trace; the compiled
    # one (flow_kernel/compiled_front.py) is held to it by tests/golden's two-way run and
    # tests/test_compiled_front.py. `FLOW_PURE_PYTHON=0 pytest tests/lang` runs it compiled.
    os.environ.setdefault("FLOW_PURE_PYTHON", "1")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_CONFIG_HOME, ignore_errors=True)


@pytest.fixture
def trust_folder() -> Iterator[Callable[[Path], None]]:
    """`trust_folder(path)` trusts a folder as `flow trust` would (in the test store);
    the trust is revoked when the test ends."""
    from flow_kernel.runtime.policy.trust import TrustStore

    store = TrustStore()
    trusted: list[Path] = []

    def trust(folder: Path) -> None:
        store.trust(folder)
        trusted.append(folder)

    yield trust
    for folder in trusted:
        store.revoke(folder)

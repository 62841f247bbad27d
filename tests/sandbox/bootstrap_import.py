"""Makes the sandbox bootstrap package `flowbox` importable in host tests (it is
shipped as source into Pyodide, not installed) and re-exports its value modules."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_BOOTSTRAP = str(Path(__file__).parents[2] / "flow_kernel" / "sandbox" / "bootstrap")
if _BOOTSTRAP not in sys.path:
    sys.path.insert(0, _BOOTSTRAP)

from flowbox import builtins, local_checks, operators, values  # noqa: E402
from flowbox.errors import FlowError  # noqa: E402

__all__ = ["FlowError", "builtins", "local_checks", "operators", "raises_evaluation", "values"]


@contextmanager
def raises_evaluation(fragment: str = "") -> Iterator[None]:
    """Asserts that the block raises an `evaluation` FlowError whose message
    contains `fragment`."""
    try:
        yield
    except FlowError as e:
        assert e.code == "evaluation", e.code
        assert fragment in e.message, f"{fragment!r} not in {e.message!r}"
    else:
        raise AssertionError(f"no evaluation error (expected {fragment!r})")

"""`pytest --nbval notebooks/` reads run ids and times through the gallery's sanitizers
(sanitize.cfg, the patterns make.py saves outputs with), unless another file is named
with --nbval-sanitize-with."""

from __future__ import annotations

from pathlib import Path

import pytest

SANITIZE = Path(__file__).resolve().parent / "sanitize.cfg"


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config.option, "nbval_sanitize_with") and config.option.nbval_sanitize_with is None:
        config.option.nbval_sanitize_with = str(SANITIZE)

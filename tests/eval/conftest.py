"""The one Ray cluster of a test session (issue 21): local, two CPUs, shut down at the end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, logging_level="ERROR", log_to_driver=False, include_dashboard=False)
    yield ray
    ray.shutdown()

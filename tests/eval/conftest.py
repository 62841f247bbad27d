"""The one Ray cluster of a test session (issue 21): local, two CPUs, shut down at the end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    from flow_kernel.runtime.eval.ray_executor import start_ray

    start_ray(num_cpus=2)
    yield ray
    ray.shutdown()

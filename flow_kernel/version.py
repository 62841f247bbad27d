"""The package's version: read from its installed metadata, so that pyproject.toml is the
one place it is written (the kernel's banner, `flow --version` and `flow_kernel.__version__`)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def _installed() -> str:
    try:
        return version("flow-kernel")
    except PackageNotFoundError:  # a checkout that was never installed
        return "unknown"


VERSION = _installed()
__version__ = VERSION  # the name `flow_kernel.__version__` hands on

"""The sandbox's runtime error codes are the host's (flow_kernel/errors.py): flowbox runs
inside Pyodide and cannot import the host package, so it keeps its own FATAL; these tests
hold the copy equal to the one list, and every code flowbox raises to a known one."""

from __future__ import annotations

import re
from pathlib import Path

from flow_kernel import errors
from tests.sandbox.bootstrap_import import FlowError as BoxError

FLOWBOX = Path(errors.__file__).parent / "sandbox" / "bootstrap" / "flowbox"


def test_sandbox_fatal_codes_are_the_hosts() -> None:
    from flowbox import errors as box_errors

    assert frozenset(errors.FATAL) == box_errors.FATAL
    for code in errors.RUNTIME_CODES:
        assert BoxError(code, "m").fatal == (code in errors.FATAL), code


def test_every_code_the_sandbox_raises_is_a_runtime_code() -> None:
    raised: set[str] = set()
    for path in FLOWBOX.glob("*.py"):
        raised |= set(re.findall(r"FlowError\(\s*\"([a-z-]+)\"", path.read_text(encoding="utf-8")))
    assert raised, "no FlowError(...) found in flowbox: the pattern no longer matches its code"
    assert raised <= set(errors.RUNTIME_CODES), raised - set(errors.RUNTIME_CODES)
    # and the host rebuilds each as its typed error, not as an unknown code
    assert all(errors.FlowError.by_code[code].code == code for code in raised)


def test_host_error_classes_are_the_runtime_codes() -> None:
    assert set(errors.FlowError.by_code) == set(errors.RUNTIME_CODES)
    assert set(errors.FATAL) | set(errors.RETRYABLE) <= set(errors.RUNTIME_CODES)

"""flowbox.local_checks: which workflow inputs and outputs the sandbox may pass without
asking the host. A kind passes a value only when the host would accept it for certain."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sandbox.bootstrap_import import local_checks


@pytest.mark.parametrize(("kind", "value", "passes"), [
    ("integer", 3, True), ("integer", -(2**70), True), ("integer", True, False), ("integer", 3.0, False),
    ("string", "", True), ("string", 3, False), ("boolean", False, True), ("boolean", 0, False),
    ("any", None, True), ("any", [1, {"a": 2}], True), (None, 3, False), ("number", 3, False),
])
def test_a_kind_passes_only_values_of_its_exact_class(kind: Any, value: Any, passes: bool) -> None:
    assert local_checks.passes(kind, value) is passes


def test_inputs_pass_only_when_every_value_passes() -> None:
    assert local_checks.inputs_pass(["integer", "any"], [1, None])
    assert not local_checks.inputs_pass(["integer", "any"], [True, None])
    assert not local_checks.inputs_pass(None, [1])
    assert not local_checks.inputs_pass(["integer"], [1, 2])  # a table that does not fit asks the host

"""`flow_kernel.json_text.encoder`: the text and the errors of `json.JSONEncoder(**options).encode`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flow_kernel.json_text import encoder

OPTIONS: list[dict[str, Any]] = [
    {},
    {"sort_keys": True},
    {"ensure_ascii": False, "default": str},
    {"ensure_ascii": False, "allow_nan": False, "separators": (",", ":")},
]

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


def outcome(encode: Any, value: Any) -> Any:
    try:
        return encode(value)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)


@pytest.mark.parametrize("options", OPTIONS)
@given(value=values)
def test_the_same_text_and_errors_as_json(options: dict[str, Any], value: Any) -> None:
    assert outcome(encoder(**options), value) == outcome(json.JSONEncoder(**options).encode, value)


def test_a_failed_encode_leaves_the_next_one_unharmed() -> None:
    encode = encoder()
    shared: dict[str, Any] = {"a": 1}
    cycle: list[Any] = [shared]
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference"):
        encode(cycle)
    # the failed encode's table of open containers is cleared: `shared` is not taken for a cycle
    assert encode([shared, shared]) == '[{"a": 1}, {"a": 1}]'
    with pytest.raises(TypeError):
        encode([shared, object()])
    assert encode({"again": shared}) == '{"again": {"a": 1}}'


def test_an_encode_inside_another_gets_an_encoder_of_its_own() -> None:
    """A `default` that encodes a container the outer encode has open: with one table of
    open containers for both, it would read as a circular reference."""
    inner: list[str] = []
    entered: list[bool] = []

    class Reentrant:
        def __str__(self) -> str:
            if not entered:
                entered.append(True)
                inner.append(encode(held))  # `held` is open in the outer encode
            return "r"

    encode = encoder(default=str)
    held = [Reentrant()]
    assert encode({"held": held}) == '{"held": ["r"]}'
    assert inner == ['["r"]']

"""`flow_kernel.short_text.shorten`: the one way values are cut short for display."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from flow_kernel.short_text import shorten


def test_short_values_stay_whole_and_long_ones_end_in_an_ellipsis() -> None:
    assert shorten("abc", 3) == "abc"
    assert shorten("abcd", 3) == "ab…"
    assert shorten({"a": [1, "é"]}, 80) == '{"a": [1, "é"]}'  # JSON, not ASCII-escaped
    assert shorten("1", 10) == "1" and shorten("1", 10, as_json=True) == '"1"'
    assert shorten("first\nsecond", 80, first_line=True) == "first"
    assert shorten("", 5, first_line=True) == ""
    assert shorten(object(), 200).startswith('"<object object')  # not JSON: its text, never a TypeError


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda kids: st.lists(kids) | st.dictionaries(st.text(), kids), max_leaves=20),
       st.integers(min_value=1, max_value=50), st.booleans(), st.booleans())
def test_never_longer_than_the_limit(value: object, limit: int, as_json: bool, first_line: bool) -> None:
    text = shorten(value, limit, as_json=as_json, first_line=first_line)
    assert len(text) <= limit
    assert "\n" not in text or not first_line

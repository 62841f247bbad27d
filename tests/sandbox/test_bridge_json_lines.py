"""flowbox/json_lines.py: the bridge's encoder and decoder give exactly what
`json.JSONEncoder(...).encode` and `json.loads` give, on the host's Python and inside the
sandbox (Pyodide's Python, whose C encoder is the one the bridge uses)."""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

import tests.sandbox.bootstrap_import  # noqa: F401 - makes `flowbox` importable
from tests.sandbox.sandbox_helpers import Sandbox, sandbox

__all__ = ["sandbox"]

json_lines = importlib.import_module("flowbox.json_lines")

REFERENCE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
GOOD = [{"id": 3, "op": "agent", "payload": {"a": [1, 2.5, "é\u2028", None, True, {}], "b": -0.0}}, "x", 7, [], {}]
LINES = ['{"id":1,"ok":true}', ' {"a":1}', '{"a":1} ', '{"a":1}x', "\ufeff{}", "", "[1,", "nul", "[1e400]",
         '{"a":NaN}', '"\\ud800"', "1 2"]


def outcome(fn: Any, value: Any) -> tuple[str, str]:
    try:
        return "ok", repr(fn(value))
    except Exception as exc:
        return type(exc).__name__, str(exc)


def bad_values() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return [float("nan"), {"a": object()}, {1j: 1}, {"x": [1, loop]}, [float("inf")]]


@pytest.mark.parametrize("value", GOOD)
def test_encode_gives_the_text_of_json_encoder(value: Any) -> None:
    assert json_lines.encode(value) == REFERENCE(value)


def test_a_failed_encode_raises_what_json_raises_and_leaves_the_encoder_clean() -> None:
    for bad in bad_values():
        assert outcome(json_lines.encode, bad) == outcome(REFERENCE, bad)
    for culprit in (object(), float("nan"), None):
        inner: list[Any] = [1, culprit]
        if culprit is None:
            inner[1] = inner  # a cycle
        outer = {"a": inner}
        assert outcome(json_lines.encode, outer)[0] != "ok"
        inner.pop()  # the containers open at the failure, encoded again: no cycle left
        assert json_lines.encode(outer) == '{"a":[1]}'


@pytest.mark.parametrize("line", LINES)
def test_decode_gives_what_json_loads_gives(line: str) -> None:
    assert outcome(json_lines.decode, line) == outcome(json.loads, line)


def test_inside_the_sandbox_the_same_text_values_and_errors(sandbox: Sandbox) -> None:
    result = sandbox.raw(f"""
        import json
        from flowbox import json_lines
        ref = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
        def outcome(fn, value):
            try:
                return ["ok", repr(fn(value))]
            except Exception as exc:
                return [type(exc).__name__, str(exc)]
        loop = []
        loop.append(loop)
        bad = [float("nan"), {{"a": object()}}, {{1j: 1}}, {{"x": [1, loop]}}]
        out = []
        for value in {GOOD!r} + bad:
            out.append(outcome(json_lines.encode, value) == outcome(ref, value))
        for culprit in (object(), float("nan"), None):
            inner = [1, culprit]
            if culprit is None:
                inner[1] = inner
            outer = {{"a": inner}}
            out.append(outcome(json_lines.encode, outer)[0] != "ok")
            inner.pop()
            out.append(json_lines.encode(outer) == '{{"a":[1]}}')
        for line in {LINES!r}:
            out.append(outcome(json_lines.decode, line) == outcome(json.loads, line))
        out.append(json_lines.ACCELERATED)  # the fast path is the one tested
        return out
    """)
    assert result == [True] * len(result) and len(result) == len(GOOD) + 4 + 6 + len(LINES) + 1

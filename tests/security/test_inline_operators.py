"""The verifier lets generated code write `+ - *` and one `== != < <= > >=` inline (for
ints, lang/exact_ints.py), and nothing more: an operator whose result can be huge and is
computed in one uninterruptible C call (`9 ** 9 ** 9`, `1 << 10 ** 10`: the watchdog's
interrupt is only seen between bytecodes), Python's own division errors in place of
Flow's, membership or identity tests, chained comparisons. A module handed to the
sandbox with one of them is refused before it is sent; reopened (the operator added to
the verifier's allow-list), the same module passes."""

from __future__ import annotations

import ast as py

import pytest

from flow_kernel.lang import verify as verifier
from flow_kernel.lang.verify import VerificationError, verify

ATTACKS = {
    "power tower": ("v_a = 9 ** 9 ** 9", py.Pow),
    "huge shift": ("v_a = v_b << 99999999999", py.LShift),
    "true division": ("v_a = 1 / 0", py.Div),
    "floor division": ("v_a = 1 // 0", py.FloorDiv),
    "python modulo": ("v_a = 1 % 0", py.Mod),
    "matrix product": ("v_a = v_b @ v_b", py.MatMult),
    "bitwise or": ("v_a = v_b | v_b", py.BitOr),
}


def module(line: str) -> py.Module:
    return py.parse(f"async def main(rt, args):\n    v_b = 1\n    {line}\n    return v_a\n")


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_operators_outside_the_inline_set_are_refused(name: str) -> None:
    line, _op = ATTACKS[name]
    with pytest.raises(VerificationError, match="is not generated"):
        verify(module(line))


@pytest.mark.parametrize("line", ["v_a = v_b < v_b < v_b", "v_a = v_b in v_b", "v_a = v_b is v_b",
                                  "v_a = v_b is not v_b", "v_a = v_b not in v_b"])
def test_comparisons_outside_the_inline_set_are_refused(line: str) -> None:
    with pytest.raises(VerificationError):
        verify(module(line))


def test_what_codegen_writes_inline_passes() -> None:
    verify(module("v_a = (v_b * v_b - 1 + v_b) <= 3 and v_b != 2 and v_b == 1 and v_b > 0 and v_b >= 0 and v_b < 5"))


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_reopened_the_operator_passes(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    line, op = ATTACKS[name]
    monkeypatch.setattr(verifier, "_INLINE_ARITHMETIC", (*verifier._INLINE_ARITHMETIC, op))
    monkeypatch.setitem(verifier._RULES, op, verifier._leaf)
    verify(module(line))  # the door is open: the module would be sent to the sandbox

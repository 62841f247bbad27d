"""The runtime's step fast path (`Runtime.step` counts `left` down to `next_check`) runs the
step check at exactly the step counts the plain rule names: past the lowest cap of the
running frames, or every STEP_CLOCK_EVERY steps for the deadline — whatever caps frames
push and pop in between, and through every path that counts a step; `steps` stays exact."""

from __future__ import annotations

import importlib

from hypothesis import given, settings
from hypothesis import strategies as st

import tests.sandbox.bootstrap_import  # noqa: F401 - makes `flowbox` importable

runtime = importlib.import_module("flowbox.runtime")

EVERY = runtime.STEP_CLOCK_EVERY

# An action: ("steps", n) counts n steps through one of the paths; ("cap", c) sets the lowest cap.
actions = st.lists(st.one_of(
    st.tuples(st.just("steps"), st.integers(1, 3 * EVERY), st.sampled_from(["step", "loop", "builtin"])),
    st.tuples(st.just("cap"), st.integers(0, 40 * EVERY), st.just("")),
), max_size=30)


class Recording(runtime.Runtime):
    def __init__(self) -> None:
        super().__init__(None, {})
        self.checked: list[int] = []

    def _check_step(self, steps: int) -> None:
        self.checked.append(steps)
        super()._schedule(steps)  # what the real check does first; it then reads the frame


@settings(max_examples=300)
@given(actions)
def test_checks_run_at_exactly_the_steps_the_rule_names(plan):
    rt = Recording()
    expected: list[int] = []
    counted = 0
    for kind, n, path in plan:
        if kind == "cap":
            rt._set_lowest_cap(n)
            continue
        for _ in range(n):
            if path == "step":
                rt.step()
            elif path == "loop":
                assert rt.loop(True) is True
            else:
                rt.fn_len([1])
            counted += 1
            # The count is exact, and what the fast path counts down stays a small int.
            assert rt.steps == counted
            assert 1 <= rt.left <= EVERY
            if rt.steps > rt.lowest_cap or rt.steps % EVERY == 0:
                expected.append(rt.steps)
    assert rt.checked == expected


def test_the_rule_itself_is_tested():
    """The reference rule above is not vacuous: the old per-step test and the schedule agree on
    a hand-computed case (cap 100: checks at 64, then every step from 101)."""
    rt = Recording()
    rt._set_lowest_cap(100)
    for _ in range(130):
        rt.step()
    assert rt.checked == [64, *range(101, 131)]

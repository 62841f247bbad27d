"""Catalogue entries for user functions (`fn`). Codes beyond the normative catalogue (see
`catalogue.py`); the same shape as the family tables."""

from __future__ import annotations

# (code, severity letter E/W/I, one-line summary, explanation, failing example, fixed example)
ENTRIES: tuple[tuple[str, str, str, str, str, str], ...] = (
    (
        "F5030",
        "E",
        "`limits` in a function body",
        """\
A function (`fn name(…) -> T { … }`) runs inside the workflow or cell that calls it:
its statements, calls and agent runs count against the caller's limits, and a
recursion ends when the caller's `steps` run out. It has no frame of its own, so it
cannot set `limits`. Set them in the workflow or cell that calls the function.""",
        """\
fn double(n: int) -> int {
  limits { steps: 10 }
  return n * 2
}
print double(21)
""",
        """\
fn double(n: int) -> int {
  return n * 2
}
limits { steps: 10 }
print double(21)
""",
    ),
)

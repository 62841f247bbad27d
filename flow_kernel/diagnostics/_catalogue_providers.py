"""Catalogue entries for models at real scale: the `cost` limit. Codes beyond the
normative catalogue (see `catalogue.py`); the same shape as the family tables."""

from __future__ import annotations

# (code, severity letter E/W/I, one-line summary, explanation, failing example, fixed example)
ENTRIES: tuple[tuple[str, str, str, str, str, str], ...] = (
    (
        "F6007",
        "W",
        "a fan-out's worst-case cost exceeds the workflow's `cost` limit",
        """\
A `parallel` block or a `parallelMap` over a literal list calls agents whose models
have a price in the built-in table, and the calls' worst case alone — every call
writing `max_tokens` of output (4096 unless the provider's `max_tokens` says less) —
costs more than `limits { cost: … }`. The limit is checked before each attempt, so
the run stops with `limit-exceeded` once what was spent plus the next attempt's worst
case passes it: part of the fan-out may never run. Raise the limit, use a cheaper
model, or fan out over fewer items. (Input tokens are not counted here: the real
worst case is higher still.)""",
        """\
agent writer { model: "openai/gpt-4o", output: string }
workflow w() -> string[] {
  limits { cost: 0.05 }
  return parallelMap(["a", "b", "c"], t => writer("Write about ${t}"))
}
""",
        """\
agent writer { model: "openai/gpt-4o", output: string }
workflow w() -> string[] {
  limits { cost: 0.5 }
  return parallelMap(["a", "b", "c"], t => writer("Write about ${t}"))
}
""",
    ),
)

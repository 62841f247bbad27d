"""Model prices: what a call costs, per million input and output tokens, in the
currency of the table.

A small built-in table of common models (list prices in US dollars as published when it
was written: `flow.toml`'s `[prices]` table overrides or extends it, runtime/config.py).
The runtime prices each call's usage with it (traces, events, the run view, `flow run`)
and checks a workflow's `limits { cost: … }` before each attempt against the attempt's
worst case (its prompt, and `max_tokens` of output). The checker reads the built-in table
too, for a fan-out whose worst case alone passes the limit (F6007). Pure data: lang may
import it, and so may the runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# Output tokens a worst case assumes when the provider's `max_tokens` is not configured
# (the anthropic provider's default cap).
DEFAULT_MAX_OUTPUT_TOKENS = 4096


@dataclass(frozen=True)
class Price:
    input: float   # per million input tokens
    output: float  # per million output tokens

    def cost(self, input_tokens: float, output_tokens: float) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000


FREE = Price(0.0, 0.0)  # the local providers (`scripted`, `mock`) cost nothing

# "provider/model" (a prefix also prices the model's dated versions: the longest one wins).
BUILTIN: dict[str, Price] = {
    "openai/gpt-4o": Price(2.50, 10.00),
    "openai/gpt-4o-mini": Price(0.15, 0.60),
    "openai/gpt-4.1": Price(2.00, 8.00),
    "openai/gpt-4.1-mini": Price(0.40, 1.60),
    "openai/gpt-4.1-nano": Price(0.10, 0.40),
    "openai/o3-mini": Price(1.10, 4.40),
    "openai/o4-mini": Price(1.10, 4.40),
    "anthropic/claude-3-5-haiku": Price(0.80, 4.00),
    "anthropic/claude-3-5-sonnet": Price(3.00, 15.00),
    "anthropic/claude-3-7-sonnet": Price(3.00, 15.00),
    "anthropic/claude-sonnet-4": Price(3.00, 15.00),
    "anthropic/claude-opus-4": Price(15.00, 75.00),
}


def price_of(model: str, table: Mapping[str, Price] | None = None) -> Price | None:
    """The price of `provider/model` (or `scripted`/`mock`: free): the configured table
    first, then the built-in one; an exact entry, else the longest entry the name starts
    with; None when neither knows it."""
    if model in ("scripted", "mock"):
        return FREE
    for source in (table or {}, BUILTIN):
        if model in source:
            return source[model]
        prefixes = [name for name in source if model.startswith(name)]
        if prefixes:
            return source[max(prefixes, key=len)]
    return None

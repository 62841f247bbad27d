"""Models chosen by what a call needs (`model: "for:deep-judgement"`): the five purposes and
how a model string names one. The configuration's `[models]` table maps each purpose to a
"provider/model" (runtime/config.py); the checker fails closed on an unset purpose in a file,
the agent pipeline at run time in a notebook (runtime/agents/pipeline.py).

`"for:<purpose> else default"` degrades instead: with no model configured for the purpose,
the call uses the session's model (`default_model`, what `model: "default"` means, set by
`%provider` in a notebook), and the run records that it did (a `model.degraded` event, a
line of the run's summary). Only the plain form fails closed.
"""

from __future__ import annotations

from collections.abc import Mapping

PREFIX = "for:"
DEGRADES = " else default"  # `for:<purpose> else default`: the session's model when the purpose has none
PURPOSES: tuple[str, ...] = (
    "deep-judgement",         # hard calls: reviews, decisions, judging a panel
    "structured-authoring",   # writing long structured output: plans, documents, code
    "high-volume-mechanical", # many small cheap calls: classification, extraction
    "long-context-analysis",  # reading a lot at once: transcripts, repositories
    "visual-judgement",       # looking at images: screenshots, charts, layouts
)


def purpose_of(model: str) -> str | None:
    """The purpose a model string names (`"for:deep-judgement"` and `"for:deep-judgement else
    default"` → `"deep-judgement"`), or None."""
    if not model.startswith(PREFIX):
        return None
    purpose = model[len(PREFIX):]
    return purpose[: -len(DEGRADES)] if purpose.endswith(DEGRADES) else purpose


def degrades(model: str) -> bool:
    """Whether a model by purpose falls back to the session's model (`… else default`)."""
    return model.startswith(PREFIX) and model.endswith(DEGRADES)


def by_purpose(model: str, models: Mapping[str, str], default: str | None) -> tuple[str | None, bool]:
    """What a `for:` model string resolves to: the model `[models]` sets for its purpose
    (False: not degraded), else for `… else default` the session's `default` (True); None
    when there is nothing to use (the caller says which key to set)."""
    purpose = purpose_of(model)
    if purpose is not None and purpose in models:
        return models[purpose], False
    if degrades(model):
        return default, default is not None
    return None, False


def unset_message(purpose: str) -> str:
    """What to do when nothing is configured for `purpose` (the diagnostic and the run error)."""
    return (f"no model is configured for the purpose `{purpose}`: set `{purpose} = \"provider/model\"` "
            f"under `[models]` in flow.toml (or [tool.flow.models] in pyproject.toml)")

"""Models chosen by what a call needs (`model: "for:deep-judgement"`): the five purposes and
how a model string names one. The configuration's `[models]` table maps each purpose to a
"provider/model" (runtime/config.py); the checker fails closed on an unset purpose in a file,
the agent pipeline at run time in a notebook (runtime/agents/pipeline.py)."""

from __future__ import annotations

PREFIX = "for:"
PURPOSES: tuple[str, ...] = (
    "deep-judgement",         # hard calls: reviews, decisions, judging a panel
    "structured-authoring",   # writing long structured output: plans, documents, code
    "high-volume-mechanical", # many small cheap calls: classification, extraction
    "long-context-analysis",  # reading a lot at once: transcripts, repositories
    "visual-judgement",       # looking at images: screenshots, charts, layouts
)


def purpose_of(model: str) -> str | None:
    """The purpose a model string names (`"for:deep-judgement"` → `"deep-judgement"`), or None."""
    return model[len(PREFIX):] if model.startswith(PREFIX) else None


def unset_message(purpose: str) -> str:
    """What to do when nothing is configured for `purpose` (the diagnostic and the run error)."""
    return (f"no model is configured for the purpose `{purpose}`: set `{purpose} = \"provider/model\"` "
            f"under `[models]` in flow.toml (or [tool.flow.models] in pyproject.toml)")

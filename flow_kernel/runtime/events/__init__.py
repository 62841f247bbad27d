"""Run events: the vocabulary (`vocabulary.py`: what an event is, its kinds and their data,
the canonical order), the one tree they form (`tree.py`: build, walk, the path to a
failure, a scope's label), and what reads it (`failure_report.py`, `terminal.py`,
`otel.py`, imported from their own modules).

The names below are the package's face; its modules' other names are theirs.
"""

from flow_kernel.runtime.events.tree import (
    EventTree,
    Placed,
    Point,
    Scope,
    degraded_text,
    scope_label,
)
from flow_kernel.runtime.events.vocabulary import (
    KINDS,
    OPENS,
    POINTS,
    SCOPES,
    Event,
    Kind,
    canonical,
    comparable,
    is_default_label,
    is_live,
    kind_of,
    scope_name,
    scope_of,
    sub_order,
)

__all__ = [
    "KINDS",
    "OPENS",
    "POINTS",
    "SCOPES",
    "Event",
    "EventTree",
    "Kind",
    "Placed",
    "Point",
    "Scope",
    "canonical",
    "comparable",
    "degraded_text",
    "is_default_label",
    "is_live",
    "kind_of",
    "scope_label",
    "scope_name",
    "scope_of",
    "sub_order",
]

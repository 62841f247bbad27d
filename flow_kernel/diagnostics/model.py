"""The diagnostic model: what the checker reports, independent of how it is shown."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from flow_kernel.source import Span


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Related:
    """A secondary span with a note, e.g. "first declared here"."""

    span: Span
    message: str


@dataclass(frozen=True)
class Diagnostic:
    code: str
    severity: Severity
    message: str
    span: Span
    related: tuple[Related, ...] = field(default=())
    hints: tuple[str, ...] = field(default=())

    @property
    def file(self) -> str:
        return self.span.source.name

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.file, self.span.start, self.span.end, self.code)

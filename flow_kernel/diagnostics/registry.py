"""The diagnostics registry: the single source of codes, severities and explanations.

`flow explain`, `%explain`, the generated docs page and the test that every code has a
triggering case all read `REGISTRY`. A code that is not registered cannot be reported:
`Reporter.report` refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass

from flow_kernel.diagnostics.catalogue import ENTRIES
from flow_kernel.diagnostics.model import Diagnostic, Related, Severity
from flow_kernel.source import Span


@dataclass(frozen=True)
class CodeInfo:
    code: str
    severity: Severity
    summary: str
    explanation: str
    failing: str  # Flow source that triggers the code
    fixed: str  # the same program corrected; checks without this code

    @property
    def family(self) -> str:
        return self.code[:2] + "xxx"


_SEVERITIES = {"E": Severity.ERROR, "W": Severity.WARNING, "I": Severity.INFO}


def _build() -> dict[str, CodeInfo]:
    registry: dict[str, CodeInfo] = {}
    for code, sev, summary, explanation, failing, fixed in ENTRIES:
        if code in registry:
            raise ValueError(f"diagnostic code {code} registered twice")
        registry[code] = CodeInfo(code, _SEVERITIES[sev], summary, explanation, failing, fixed)
    return registry


REGISTRY: dict[str, CodeInfo] = _build()

FAMILIES = {
    "F1xxx": "syntax",
    "F2xxx": "names and scope",
    "F3xxx": "types",
    "F4xxx": "agents, teams, tools",
    "F5xxx": "control flow, concurrency, effects",
    "F6xxx": "limits and durations",
    "F7xxx": "hints",
}


def lookup(code: str) -> CodeInfo | None:
    return REGISTRY.get(code.strip().upper())


class Reporter:
    """Collects diagnostics; the severity always comes from the registry."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []

    def report(
        self,
        code: str,
        span: Span,
        message: str,
        related: tuple[Related, ...] | list[Related] = (),
        hints: tuple[str, ...] | list[str] = (),
    ) -> Diagnostic:
        info = REGISTRY.get(code)
        if info is None:
            raise KeyError(f"diagnostic code {code} is not registered")
        diagnostic = Diagnostic(code, info.severity, message, span, tuple(related), tuple(hints))
        self.diagnostics.append(diagnostic)
        return diagnostic

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.diagnostics)

    def sorted(self) -> list[Diagnostic]:
        return sorted(self.diagnostics, key=Diagnostic.sort_key)

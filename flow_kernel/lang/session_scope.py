"""What earlier notebook cells left behind, for checking the next cell (language.md §2)."""

from __future__ import annotations

from dataclasses import dataclass, field

from flow_kernel.lang import ast
from flow_kernel.lang import types as T
from flow_kernel.lang.check_result import CheckResult


@dataclass
class SessionBinding:
    type: T.Type
    mutable: bool


@dataclass
class SessionScope:
    """Declarations and top-level bindings (with their static types) of earlier cells.

    The checker re-resolves the declarations with each cell, so a redefinition is
    seen by everything that refers to the name; diagnostics inside them are not
    repeated because they point into earlier cells."""

    decls: dict[str, ast.Decl] = field(default_factory=dict)
    bindings: dict[str, SessionBinding] = field(default_factory=dict)

    def commit(self, result: CheckResult, *, bindings: bool = True) -> None:
        """Add what a checked (and run) cell declared and bound."""
        for name, entry in result.decls.items():
            if entry.origin in ("cell", "use"):
                self.decls[name] = entry.node
        if bindings:
            for name, binding in result.bindings.items():
                self.bindings[name] = SessionBinding(binding.type, binding.mutable)

    def reset(self) -> None:
        self.decls.clear()
        self.bindings.clear()

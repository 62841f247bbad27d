"""Prompt files as data: `file("prompts/triage.md")` in a declaration, and what the checker
read for it (check_prompts.py reads them; the checker's mixins and the agent pipeline share
these without importing one another)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from flow_kernel.lang import ast


@dataclass(frozen=True)
class PromptFile:
    """One `file("…")` of a declaration: where it is used, the path as written, the file it
    resolved to and its text (None when it could not be read, with `problem` saying why)."""

    used_for: str          # "instructions", "hints[2]", "criteria.accuracy.description"
    path: str
    resolved: str | None = None
    text: str | None = None
    problem: str | None = None

    @property
    def digest(self) -> str:
        return hashlib.sha256((self.text or "").encode()).hexdigest()[:16]


def file_call(expr: object) -> ast.Call | None:
    """`expr` when it is a `file(…)` call."""
    if isinstance(expr, ast.Call) and isinstance(expr.callee, ast.Name) and expr.callee.name == "file":
        return expr
    return None

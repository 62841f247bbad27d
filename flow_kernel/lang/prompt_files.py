"""Prompt files as data: `file("prompts/triage.md")` in a declaration, and what the checker
read for it (check_prompts.py reads them; the checker's mixins and the agent pipeline share
these without importing one another); and prompt variables, the `{{name}}` placeholders
`file(PATH, { name: value })` fills, each value as data (`prompt_value`)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from flow_kernel.lang import ast
from flow_kernel.lang.literals import normalise


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


# `{{name}}` in a prompt file: a placeholder `file(PATH, { name: value })` fills.
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
# What a value's JSON text may not carry into a prompt as it is: `<` and `>` would open or
# close a fence or a tag (prompts.py), `&` an entity; each is written as its JSON escape.
_MARKUP = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def placeholders(text: str) -> dict[str, int]:
    """The placeholders of a prompt file's text, each with the line (1-based) it first
    appears on, in the order they first appear."""
    found: dict[str, int] = {}
    for match in PLACEHOLDER.finditer(text):
        found.setdefault(match.group(1), text.count("\n", 0, match.start()) + 1)
    return found


def template_parts(text: str, names: list[str]) -> list[str | int]:
    """The text split at its placeholders: literal pieces (str) and, for each placeholder,
    the index of its name in `names` (int) — what the generated code fills at run time
    (flowbox `values.fill_prompt`). Every placeholder's name must be in `names`."""
    parts: list[str | int] = []
    at = 0
    for match in PLACEHOLDER.finditer(text):
        parts += [text[at:match.start()], names.index(match.group(1))]
        at = match.end()
    parts.append(text[at:])
    return [p for p in parts if p != ""]


def prompt_value(value: object) -> str:
    """A value as it stands in a filled prompt: its JSON text (a string in quotes, its
    quotes, newlines and controls escaped; numbers as Flow shows them) with `<`, `>` and
    `&` escaped too, so that it reads as data and can end no quote, line, fence or tag.
    flowbox's `values.prompt_value` is the same function (tests hold them equal)."""
    return json.dumps(normalise(value), ensure_ascii=False, separators=(", ", ": ")).translate(_MARKUP)


def fill(parts: list[str | int], values: list[object]) -> str:
    """`template_parts` filled with `values` in one pass: a value's text is never read for
    placeholders again."""
    rendered = [prompt_value(v) for v in values]
    return "".join(p if isinstance(p, str) else rendered[p] for p in parts)


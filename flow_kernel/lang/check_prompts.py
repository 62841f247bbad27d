"""Prompt files and models by purpose, as the checker sees them.

`file("prompts/triage.md")` may stand for the text of an agent's `role`, `persona`,
`instructions` or `uncertainty`, for an item of its `constraints` or `hints`, and for a
rubric criterion's `description`. The path is resolved like `use`: through the loader,
relative to the file that declares it (or the notebook's folder for a cell), and inside
that folder unless the person granted the path (runtime/policy/trust.py); a missing or refused
file is F2011 naming the path. The text is read here, at compile time, so what runs is
what was checked, and its digest goes into the cassette's prompt identity (an edited file
is a replay miss, runtime/agents/calls.py).

`model: "for:<purpose>"` names one of the five purposes (lang/purposes.py): an unknown one
is F4025; in a file (`flow check`, `flow run`) an unset one is F4026, because the checker is
given the configuration's `[models]` table there; a notebook learns it at run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from flow_kernel.lang import ast
from flow_kernel.lang.check_common import closest
from flow_kernel.lang.literals import NOT_LITERAL, literal_value
from flow_kernel.lang.prompt_files import PromptFile, file_call
from flow_kernel.lang.purposes import PURPOSES, purpose_of, unset_message
from flow_kernel.source import Loader, UseRefused

if TYPE_CHECKING:
    from flow_kernel.lang.checker import Checker


class PromptChecker:
    # Set by `check` on every checker it makes (annotations only: a callable class attribute
    # would be taken for a method).
    loader: Loader | None
    models: Mapping[str, str] | None  # the configuration's [models], given in file mode
    cell_sources: frozenset[int]  # ids of the sources that are notebook cells

    def prompt_text(self: Checker, expr: ast.Expr, used_for: str, files: list[PromptFile]) -> object:
        """The text of a constant string or a `file("…")`, or NOT_LITERAL when `expr` is
        neither; None when it is a `file(…)` that was reported."""
        call = file_call(expr)
        if call is None:
            value = literal_value(expr)
            return value if isinstance(value, str) else NOT_LITERAL
        path = literal_value(call.args[0].value) if len(call.args) == 1 and call.args[0].name is None else None
        if not isinstance(path, str) or not path:
            self.report("F4033", call.span, "`file(…)` takes one constant path string, e.g. `file(\"prompts/triage.md\")`")
            return None
        found = self._read_prompt_file(call, path, used_for)
        files.append(found)
        return found.text

    def _read_prompt_file(self: Checker, call: ast.Call, path: str, used_for: str) -> PromptFile:
        span = call.args[0].value.span
        source = span.source.name
        importer = None if source.startswith("<") or id(span.source) in self.cell_sources else source
        resolve = getattr(self.loader, "resolve", None)
        where = resolve(path, importer) if callable(resolve) else None
        shown = f" ({where})" if isinstance(where, str) and where != path else ""
        try:
            loaded = self.loader(path, importer) if self.loader is not None else None
        except UseRefused as refused:
            problem = f"prompt file \"{path}\" is not readable here: {refused}"
        except Exception as exc:  # unreadable (not UTF-8, permissions): a diagnostic, never a crash
            problem = f"prompt file \"{path}\"{shown} cannot be read: {exc}"
        else:
            if loaded is not None:
                return PromptFile(used_for, path, loaded.name, loaded.text)
            problem = f"prompt file \"{path}\" not found{shown}"
        self.report("F2011", span, problem,
                    hints=("prompt files are resolved like `use`: relative to the file, or the notebook's folder",))
        return PromptFile(used_for, path, where if isinstance(where, str) else None, None, problem)

    def checked_model(self: Checker, value: str, span: object) -> bool:
        """For `model: "for:…"`: False when it was reported (F4025, F4026)."""
        purpose = purpose_of(value)
        if purpose is None:
            return True
        if purpose not in PURPOSES:
            self.report("F4025", span, f"unknown model purpose `{purpose}` (the purposes: {', '.join(PURPOSES)})",  # type: ignore[arg-type]
                        hints=closest(purpose, list(PURPOSES)))
            return False
        if self.file_mode and purpose not in (self.models or {}):
            self.report("F4026", span, unset_message(purpose))  # type: ignore[arg-type]
            return False
        return True

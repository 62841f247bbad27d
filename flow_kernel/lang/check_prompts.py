"""Prompt files and models by purpose, as the checker sees them.

`file("prompts/triage.md")` may stand for the text of an agent's `role`, `persona`,
`instructions` or `uncertainty`, for an item of its `constraints` or `hints`, and for a
rubric criterion's `description`. The path is resolved like `use`: through the loader,
relative to the file that declares it (or the notebook's folder for a cell), and inside
that folder unless the person granted the path (runtime/policy/trust.py); a missing or refused
file is F2011 naming the path. The text is read here, at compile time, so what runs is
what was checked, and its digest goes into the cassette's prompt identity (an edited file
is a replay miss, runtime/agents/calls.py).

Prompt variables: `file(PATH, { name: value, … })` fills the file's `{{name}}` placeholders
(prompt_files.py). In a declaration the values are constants and the text is filled here;
as an expression (an agent call's prompt, a `let`) it is a string the generated code fills
at run time from the values (`rt.fill_prompt`, its pieces in `prompt_fills`). Either way a
placeholder no value fills is F4035 and a value no placeholder uses F4036, each naming it,
and each value is rendered as data (`prompt_value`: JSON, markup escaped), never read for
placeholders again.

`model: "for:<purpose>"` names one of the five purposes (lang/purposes.py): an unknown one
is F4025; in a file (`flow check`, `flow run`) an unset one is F4026, because the checker is
given the configuration's `[models]` table there; a notebook learns it at run time.
`"for:<purpose> else default"` falls back to the session's model instead: never F4026.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from flow_kernel.lang import ast
from flow_kernel.lang import types as T
from flow_kernel.lang.check_common import closest
from flow_kernel.lang.literals import NOT_LITERAL, literal_value
from flow_kernel.lang.prompt_files import PromptFile, file_call, fill, placeholders, template_parts
from flow_kernel.lang.purposes import DEGRADES, PURPOSES, degrades, purpose_of, unset_message
from flow_kernel.native_marks import mypyc_attr
from flow_kernel.source import Loader, UseRefused

if TYPE_CHECKING:
    from flow_kernel.lang.checker import Checker


@mypyc_attr(native_class=False)  # mixins: a plain class when compiled (flow_kernel/native_marks.py)
class PromptChecker:
    # Set by `check` on every checker it makes (annotations only: a callable class attribute
    # would be taken for a method).
    loader: Loader | None
    models: Mapping[str, str] | None  # the configuration's [models], given in file mode
    cell_sources: frozenset[int]  # ids of the sources that are notebook cells

    prompt_fills: dict[int, list[str | int]]  # id of a `file(…)` expression -> its pieces (codegen)

    def prompt_text(self: Checker, expr: ast.Expr, used_for: str, files: list[PromptFile]) -> object:
        """The text of a constant string or a `file("…")` (its placeholders filled with its
        constant values), or NOT_LITERAL when `expr` is neither; None when it is a `file(…)`
        that was reported."""
        call = file_call(expr)
        if call is None:
            value = literal_value(expr)
            return value if isinstance(value, str) else NOT_LITERAL
        path, values = self._file_arguments(call)
        if path is None:
            return None
        constants: dict[str, object] = {}
        for entry in values.entries if values is not None else []:
            value = literal_value(entry.value)
            if value is NOT_LITERAL:
                self.report("F4033", entry.value.span,
                            f"`{entry.key}`: a declaration's prompt values are constants (its text is read when the "
                            f"program is checked)", hints=("to fill a file with values computed at run time, pass "
                                                           "`file(…, { … })` as the call's prompt",))
                return None
            constants[entry.key] = value
        found = self._read_prompt_file(call, path, used_for)
        files.append(found)
        if found.text is None:
            return None
        names = self._checked_placeholders(call, found, values)
        if names is None:
            return None
        return fill(template_parts(found.text, names), [constants[name] for name in names])

    def prompt_file_expr(self: Checker, call: ast.Call) -> T.Type:
        """`file(PATH)` or `file(PATH, { name: value, … })` as an expression: a string, its
        values checked as expressions and filled at run time (`prompt_fills`)."""
        path, values = self._file_arguments(call)
        for entry in values.entries if values is not None else []:
            self.expr(entry.value)
        if path is None:
            return T.STRING
        found = self._read_prompt_file(call, path, "prompt")
        if found.text is not None:
            names = self._checked_placeholders(call, found, values)
            if names is not None:
                self.prompt_fills[id(call)] = template_parts(found.text, names)
        return T.STRING

    def _file_arguments(self: Checker, call: ast.Call) -> tuple[str | None, ast.ObjectLit | None]:
        """The constant path of a `file(…)` and its object of values, if any; the path None
        when the call is malformed (reported, F4033)."""
        args = call.args
        path = literal_value(args[0].value) if args and args[0].name is None else None
        if not isinstance(path, str) or not path or len(args) > 2 or any(a.name is not None for a in args):
            self.report("F4033", call.span, "`file(…)` takes one constant path string, e.g. `file(\"prompts/triage.md\")`")
            return None, None
        if len(args) == 1:
            return path, None
        values = args[1].value
        if not isinstance(values, ast.ObjectLit):
            self.report("F4033", values.span, "`file(…)`'s second argument gives the placeholders' values as an "
                                              "object: `file(\"prompts/triage.md\", { name: value })`")
            return None, None
        return path, values  # a key given twice is F1014 already, kept once

    def _checked_placeholders(self: Checker, call: ast.Call, found: PromptFile,
                              values: ast.ObjectLit | None) -> list[str] | None:
        """The names of the values in order, when every placeholder of the file has a value
        (F4035 otherwise) and every value a placeholder (F4036); None when reported."""
        assert found.text is not None
        wanted = placeholders(found.text)
        given = {entry.key: entry for entry in values.entries} if values is not None else {}
        ok = True
        for name, line in wanted.items():
            if name not in given:
                ok = False
                self.report("F4035", values.span if values is not None else call.span,
                            f"the placeholder `{{{{{name}}}}}` of \"{found.path}\" (line {line}) has no value",
                            hints=(f"give it one: `file(\"{found.path}\", {{ {name}: … }})`",))
        for name, entry in given.items():
            if name not in wanted:
                ok = False
                shown = ", ".join(f"`{n}`" for n in wanted) or "none"
                self.report("F4036", entry.key_span,
                            f"`{name}` fills no placeholder of \"{found.path}\" (its placeholders: {shown})",
                            hints=closest(name, list(wanted)))
        return list(given) if ok else None

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
            head, _, fallback = purpose.partition(" else ")
            hints = (f"a purpose falls back to the session's model with `else default`: `for:{head}{DEGRADES}`",) \
                if fallback else closest(purpose, list(PURPOSES))
            self.report("F4025", span, f"unknown model purpose `{purpose}` (the purposes: {', '.join(PURPOSES)})",  # type: ignore[arg-type]
                        hints=hints)
            return False
        if self.file_mode and purpose not in (self.models or {}) and not degrades(value):
            self.report("F4026", span, unset_message(purpose))  # type: ignore[arg-type]
            return False
        return True

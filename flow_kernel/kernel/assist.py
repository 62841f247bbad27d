"""What the Flow kernel answers to `complete_request`, `inspect_request` and
`is_complete_request` (Jupyter messaging protocol 5.x): pure functions of the cell
text, the cursor and the session's `SessionScope`, so they are tested without a kernel.

Offsets are Python string indices, i.e. unicode code points (protocol ≥ 5.2). The
cell is tokenized with the language's own lexer and checked with the session's
declarations and bindings; broken code gives fewer answers, never an exception.
Leading `%magic` lines are blanked (same length, so offsets stay) before the Flow
code is lexed or checked, as the kernel does before it runs a cell.

This module completes and says whether a cell is complete; inspection is
assist_inspect.py, and what both read of a cell is assist_cell.py. The three replies
are imported from here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from flow_kernel.diagnostics.registry import REGISTRY
from flow_kernel.frontend.magics import MAGICS as MAGIC_REGISTRY
from flow_kernel.kernel.assist_cell import (
    JSON,
    PRIM_TYPES,
    Cell,
    MemberPath,
    Site,
    analyse,
    blank_magics,
    cursor_site,
    lex,
    member_path,
    object_fields,
    path_type,
    team_of,
)
from flow_kernel.kernel.assist_inspect import BUILTIN_DOCS, inspect
from flow_kernel.lang.builtins import BUILTINS
from flow_kernel.lang.lexer import CLOSERS, OPENERS
from flow_kernel.lang.session_scope import SessionScope
from flow_kernel.lang.tokens import RESERVED, Kind
from flow_kernel.source import SourceFile

# The kernel's line magics (runtime.md §8), from the one registry (frontend/magics.py), which
# also says what each magic's arguments complete to. `complete` reads the registry itself;
# this is its names when this module was imported.
MAGICS: tuple[str, ...] = tuple(MAGIC_REGISTRY)

# Keywords only in some positions (language.md §1), offered with the reserved words.
CONTEXTUAL = ("details", "choice", "stdin", "timeout", "requires", "approval")
KEYWORDS: tuple[str, ...] = tuple(sorted(RESERVED | set(CONTEXTUAL)))

# Binary operators (and `=`, `,`, `=>`, …) after which a statement cannot end.
DANGLING_OPS = frozenset(
    "+ - * / % == != < <= > >= = => , ?? ? : . ?. | ->".split()
)
DANGLING_WORDS = frozenset(("and", "or", "not", "in"))

# Unterminated strings and interpolations: "incomplete" when they run to the end.
OPEN_STRING_CODES = frozenset(("F1002", "F1003", "F1007"))

# Completion kinds, lowest precedence first: a declaration named like a builtin wins.
_RANK = {"type-prim": 0, "keyword": 1, "function": 2, "variable": 3, "field": 4,
         "type": 5, "tool": 5, "agent": 5, "team": 5, "workflow": 5, "rubric": 5, "panel": 5, "fn": 5, "magic": 6}
# A completion's kind as the front end shows it, where it is not the kind's own name.
_SHOWN_KIND = {"type-prim": "type", "fn": "function"}

# Builtin signatures and notes (language.md §6.3); `_builtin_signature` covers others.


# --- complete ------------------------------------------------------------------------------------


class _Matches:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.kinds: dict[str, str] = {}

    def add(self, name: str, kind: str) -> None:
        if not name.startswith(self.prefix):
            return
        old = self.kinds.get(name)
        if old is None or _RANK.get(kind, 0) >= _RANK.get(old, 0):
            self.kinds[name] = kind

    def reply(self, start: int, end: int) -> JSON:
        names = sorted(self.kinds)
        kinds = [{"text": n, "type": _SHOWN_KIND.get(self.kinds[n], self.kinds[n]),
                  "start": start, "end": end} for n in names]
        return {"matches": names, "cursor_start": start, "cursor_end": end,
                "metadata": {"_jupyter_types_experimental": kinds}}


def complete(code: str, cursor_pos: int, scope: SessionScope, magics: Sequence[str] = ()) -> JSON:
    """Jupyter `complete_reply` content (without `status`) for the cursor in `code`."""
    try:
        cursor = max(0, min(int(cursor_pos), len(code)))
    except (TypeError, ValueError):
        cursor = len(code)
    try:
        return _complete(code, cursor, scope, [m.lstrip("%") for m in (magics or MAGIC_REGISTRY)])
    except Exception:  # completion must never break the kernel
        return _Matches("").reply(cursor, cursor)


def _complete(code: str, cursor: int, scope: SessionScope, magics: list[str]) -> JSON:
    line_before = code[code.rfind("\n", 0, cursor) + 1 : cursor]
    magic = re.fullmatch(r"[ \t]*(%{1,2})([A-Za-z_][\w-]*)?", line_before)
    if magic is not None:
        percent, word = magic.group(1), magic.group(2) or ""
        matches = _Matches(percent + word)
        for name in magics:
            matches.add(percent + name, "magic")
        return matches.reply(cursor - len(percent) - len(word), cursor)
    argument = re.match(r"[ \t]*%([A-Za-z_][\w-]*)[ \t]", line_before)
    if argument is not None:
        return _complete_magic_argument(code, cursor, scope, argument.group(1), line_before)

    cell = analyse(blank_magics(code), scope)
    site = cursor_site(cell.src, 0, cursor)
    if site is None:
        return _Matches("").reply(cursor, cursor)
    matches = _Matches(site.prefix)
    path = member_path(site.before)
    if path is not None and len(path.segments) == 1 and cell.decl_kinds().get(path.segments[0]) == "agent":
        return _complete_agent_call(code, site, cursor)
    if path is not None:
        _complete_member(cell, path, matches)
        return matches.reply(site.start, cursor)
    for word in KEYWORDS:
        matches.add(word, "keyword")
    for word in PRIM_TYPES:
        matches.add(word, "type-prim")
    for name in BUILTINS:
        matches.add(name, "function")
    typing = {site.prefix} if site.prefix in cell.scanned_at(site.start) else set()
    for name in cell.scanned_vars - typing:
        matches.add(name, "variable")
    for name in cell.scope.bindings:
        matches.add(name, "variable")
    if cell.result is not None:
        for name in cell.result.bindings:
            matches.add(name, "variable")
        for ctx in [cell.result.toplevel, *cell.result.workflows.values()]:
            for name in ctx.tasks if ctx is not None else ():
                matches.add(name, "variable")
    for name, kind in cell.decl_kinds().items():
        if name not in typing or name in cell.scope.decls:
            matches.add(name, kind)
    return matches.reply(site.start, cursor)


# What `agent.` + Tab offers: an agent has no fields, it is called; so the call itself, then
# one form per call option (check_calls.AGENT_OPTIONS), each replacing the `.` and what was
# typed after it. The type column says why (`call: an agent has no fields`).
AGENT_CALL_FORMS = {
    "": '("")', "context": '("", context: {})', "label": '("", label: "")', "output": '("", output: string)',
    "tools": '("", tools: [])', "timeout": '("", timeout: 30s)', "repair": '("", repair: 1)',
    "choice": '("", choice: ["a", "b"], fallback: "a")', "fallback": '("", choice: ["a", "b"], fallback: "a")',
    "facts": '("", facts: {})', "documents": '("", documents: {})',  # data at trust high / medium
    "max_tool_calls": '("", max_tool_calls: 8)',
}


def _complete_agent_call(code: str, site: Site, cursor: int) -> JSON:
    dot = code.rfind(".", 0, site.start)
    forms = [form for option, form in AGENT_CALL_FORMS.items() if option.startswith(site.prefix) or not option]
    if site.prefix:  # `triager.lab`: the options it starts, not the bare call
        forms = [AGENT_CALL_FORMS[o] for o in AGENT_CALL_FORMS if o and o.startswith(site.prefix)] or forms
    forms = list(dict.fromkeys(forms))
    kinds = [{"text": f, "type": "call: an agent has no fields", "start": dot, "end": cursor} for f in forms]
    return {"matches": forms, "cursor_start": dot, "cursor_end": cursor,
            "metadata": {"_jupyter_types_experimental": kinds}}


def _complete_member(cell: Cell, path: MemberPath, matches: _Matches) -> None:
    if len(path.segments) == 1:
        team = team_of(cell, path.segments[0])
        if team is not None:
            _main, members = team
            matches.add("main", "agent")
            matches.add("member", "function")
            for member in members:
                matches.add(member, "agent")
            return
    t = path_type(cell, path)
    if t is None:
        return
    for name in object_fields(t):
        matches.add(name, "field")


def _complete_magic_argument(code: str, cursor: int, scope: SessionScope, name: str, line: str) -> JSON:
    word = re.search(r"\S*$", line)
    prefix = word.group() if word is not None else ""
    matches = _Matches(prefix)
    entry = MAGIC_REGISTRY.get(name)
    if entry is None:
        return matches.reply(cursor - len(prefix), cursor)
    if entry.offers == "declarations":
        for decl, kind in analyse(blank_magics(code), scope).decl_kinds().items():
            matches.add(decl, kind)
    elif entry.offers == "diagnostic codes":
        for diag_code in REGISTRY:
            matches.add(diag_code, "keyword")
    for choice in entry.choices:
        matches.add(choice, "keyword")
    return matches.reply(cursor - len(prefix), cursor)


# --- is_complete ---------------------------------------------------------------------------------


def is_complete(code: str) -> JSON:
    """Jupyter `is_complete_reply` content: may the console run `code` now?"""
    try:
        return _is_complete(code)
    except Exception:  # let the kernel run it and report what is wrong
        return {"status": "invalid"}


def _is_complete(code: str) -> JSON:
    text = blank_magics(code)
    if not text.strip():
        return {"status": "complete"}
    src = SourceFile("<cell>", text)
    toks, reporter = lex(src)
    stack: list[str] = []
    for tok in toks:
        if tok.is_op(*OPENERS):
            stack.append(tok.text)
        elif tok.is_op(*CLOSERS):
            if not stack or stack[-1] != CLOSERS[tok.text]:
                return {"status": "invalid"}  # no opener, or the wrong one
            stack.pop()
    last = toks[-1] if toks else None
    open_string = (last is not None and last.kind is Kind.ERROR and last.text.startswith('"')
                   and last.span.end == len(text))
    for diag in reporter.diagnostics:
        recoverable = (open_string and last is not None and diag.code in OPEN_STRING_CODES
                       and diag.span.start >= last.span.start)
        if not recoverable:
            return {"status": "invalid"}
    indent = "  " * len(stack)
    if stack or open_string:
        return {"status": "incomplete", "indent": indent}
    significant = [t for t in toks if t.kind is not Kind.NEWLINE]
    if significant:
        final = significant[-1]
        after_dot = len(significant) > 1 and significant[-2].is_op(".", "?.")
        if final.is_op(*DANGLING_OPS) or (final.is_kw(*DANGLING_WORDS) and not after_dot):
            return {"status": "incomplete", "indent": indent}
    return {"status": "complete"}


__all__ = ["BUILTIN_DOCS", "KEYWORDS", "MAGICS", "complete", "inspect", "is_complete"]

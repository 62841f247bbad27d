"""What the Flow kernel answers to `complete_request`, `inspect_request` and
`is_complete_request` (Jupyter messaging protocol 5.x): pure functions of the cell
text, the cursor and the session's `SessionScope`, so they are tested without a kernel.

Offsets are Python string indices, i.e. unicode code points (protocol ≥ 5.2). The
cell is tokenized with the language's own lexer and checked with the session's
declarations and bindings; broken code gives fewer answers, never an exception.
Leading `%magic` lines are blanked (same length, so offsets stay) before the Flow
code is lexed or checked, as the kernel does before it runs a cell.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from flow_kernel.diagnostics.registry import REGISTRY, Reporter
from flow_kernel.frontend.magics import MAGICS as MAGIC_REGISTRY
from flow_kernel.lang import ast
from flow_kernel.lang import types as T
from flow_kernel.lang.builtins import BUILTINS, Builtin
from flow_kernel.lang.check import check
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.lang.checker import decl_kind
from flow_kernel.lang.env import DeclEntry
from flow_kernel.lang.lexer import CLOSERS, OPENERS, Lexer
from flow_kernel.lang.schema import input_type, schema_for_decl, type_schema
from flow_kernel.lang.session_scope import SessionScope
from flow_kernel.lang.tokens import RESERVED, Kind, Token
from flow_kernel.markup import markdown_html
from flow_kernel.source import SourceFile

JSON = dict[str, Any]

# The kernel's line magics (runtime.md §8), from the one registry (frontend/magics.py), which
# also says what each magic's arguments complete to. `complete` reads the registry itself;
# this is its names when this module was imported.
MAGICS: tuple[str, ...] = tuple(MAGIC_REGISTRY)

# Keywords only in some positions (language.md §1), offered with the reserved words.
CONTEXTUAL = ("details", "choice", "stdin", "timeout", "requires", "approval")
KEYWORDS: tuple[str, ...] = tuple(sorted(RESERVED | set(CONTEXTUAL)))
PRIM_TYPES = ("string", "number", "int", "bool", "null", "any", "duration")

# Binary operators (and `=`, `,`, `=>`, …) after which a statement cannot end.
DANGLING_OPS = frozenset(
    "+ - * / % == != < <= > >= = => , ?? ? : . ?. | ->".split()
)
DANGLING_WORDS = frozenset(("and", "or", "not", "in"))

# Unterminated strings and interpolations: "incomplete" when they run to the end.
OPEN_STRING_CODES = frozenset(("F1002", "F1003", "F1007"))

# Completion kinds, lowest precedence first: a declaration named like a builtin wins.
_RANK = {"type-prim": 0, "keyword": 1, "function": 2, "variable": 3, "field": 4,
         "type": 5, "tool": 5, "agent": 5, "team": 5, "workflow": 5, "rubric": 5, "panel": 5, "magic": 6}

# Builtin signatures and notes (language.md §6.3); `_builtin_signature` covers others.
_L = "(x: T, i?: int) => "
BUILTIN_DOCS: dict[str, tuple[str, str]] = {
    "len": ("len(x: string | T[] | object) -> int", "Characters of a string, items of an array or keys of an object."),
    "keys": ("keys(o: object) -> string[]", "The keys, in insertion order."),
    "values": ("values(o: object) -> any[]", "The values, in insertion order."),
    "entries": ("entries(o: object) -> {key: string, value: any}[]", "Key/value pairs, in insertion order."),
    "range": ("range(n: int) -> int[]\nrange(a: int, b: int) -> int[]", "`[0..n)` or `[a..b)`."),
    "sum": ("sum(xs: number[]) -> number", "`sum([])` is 0; `int` in, `int` out."),
    "avg": ("avg(xs: number[]) -> number", "The mean; `avg([])` is an error."),
    "min": ("min(xs: number[]) -> number", "The smallest item; an empty array is an error."),
    "max": ("max(xs: number[]) -> number", "The largest item; an empty array is an error."),
    "round": ("round(n: number) -> int\nround(n: number, digits: int) -> number", "Rounds half away from zero."),
    "floor": ("floor(n: number) -> int", "Rounds down."),
    "ceil": ("ceil(n: number) -> int", "Rounds up."),
    "abs": ("abs(n: number) -> number", "The absolute value (`int` for an `int`)."),
    "count": (f"count(xs: T[], f: {_L}bool) -> int", "How many items pass the test."),
    "all": (f"all(xs: T[], f: {_L}bool) -> bool", "Whether every item passes the test (true when empty)."),
    "any": (f"any(xs: T[], f: {_L}bool) -> bool", "Whether some item passes the test."),
    "map": (f"map(xs: T[], f: {_L}U) -> U[]", "The lambda applied to each item."),
    "filter": (f"filter(xs: T[], f: {_L}bool) -> T[]", "The items that pass the test, in order."),
    "find": (f"find(xs: T[], f: {_L}bool) -> T | null", "The first item that passes the test, or null."),
    "sort": ("sort(xs: T[]) -> T[]", "Stable; numbers or strings (mixed is an error)."),
    "sortBy": ("sortBy(xs: T[], f: (x: T) => number | string) -> T[]", "Stable sort by a key."),
    "unique": ("unique(xs: T[]) -> T[]", "Keeps first occurrences (deep equality)."),
    "flatten": ("flatten(xs: T[][]) -> T[]", "Flattens one level."),
    "zip": ("zip(a: A[], b: B[]) -> [A, B][]", "Pairs items; stops at the shorter array."),
    "first": ("first(xs: T[]) -> T | null", "The first item, or null when empty."),
    "last": ("last(xs: T[]) -> T | null", "The last item, or null when empty."),
    "slice": ("slice(xs: T[] | string, a: int, b?: int) -> T[] | string", "As Python slicing."),
    "concat": ("concat(a: T[] | string, b: T[] | string, ...) -> T[] | string", "Concatenates arrays or strings."),
    "join": ("join(xs: string[], sep: string) -> string", "Joins strings with a separator."),
    "split": ("split(s: string, sep: string) -> string[]", "Splits a string at each separator."),
    "lower": ("lower(s: string) -> string", "Lower case."),
    "upper": ("upper(s: string) -> string", "Upper case."),
    "trim": ("trim(s: string) -> string", "Strips leading and trailing whitespace."),
    "replace": ("replace(s: string, old: string, new: string) -> string", "Replaces every occurrence."),
    "contains": ("contains(x: any, y: any) -> bool", "`y in x`: array membership, substring or object key."),
    "startsWith": ("startsWith(s: string, p: string) -> bool", "Whether `s` starts with `p`."),
    "endsWith": ("endsWith(s: string, p: string) -> bool", "Whether `s` ends with `p`."),
    "json": ("json(v: any) -> string", "Renders a value as JSON text (language.md §1)."),
    "parseJson": ("parseJson(s: string) -> any", "Parses JSON text; bad JSON is an error."),
    "str": ("str(v: any) -> string", "A string as is, any other value rendered as JSON."),
    "num": ("num(v: any) -> number", "A number, or a string parsed as one; anything else is an error."),
    "int": ("int(v: any) -> int", "An integer, or a string parsed as one; anything else is an error."),
    "bool": ("bool(v: any) -> bool", "JSON truthiness."),
    "default": ("default(x: T | null, d: T) -> T", "Same as `x ?? d`."),
    "typeOf": ('typeOf(v: any) -> "null" | "bool" | "number" | "string" | "array" | "object"', "The JSON type of a value."),
    "merge": ("merge(a: object, b: object) -> object", "Shallow merge; the right side wins."),
    "pick": ("pick(o: object, keys: string[]) -> object", "The object with only these keys."),
    "omit": ("omit(o: object, keys: string[]) -> object", "The object without these keys."),
    "groupBy": ("groupBy(xs: T[], f: (x: T) => string) -> {key: string, items: T[]}[]", "Groups in order of first appearance."),
    "now": ("now() -> string", "ISO-8601 UTC time from the host; journaled, so a replay returns the same value."),
    "uuid": ("uuid() -> string", "A UUID4 from the host; journaled, so a replay returns the same value."),
    "parallelMap": (f"parallelMap(xs: T[], f: {_L}U, concurrency?: int) -> U[]",
                    "Runs the lambda on every item concurrently, keeping input order; `concurrency` is capped "
                    "by the workflow's. The lambda may call agents, but not `approve` or `ask`."),
}


# --- shared analysis ---------------------------------------------------------------------------


def _blank_magics(code: str) -> str:
    """The cell with its leading `%magic` lines replaced by spaces (offsets unchanged)."""
    lines = code.split("\n")
    for i, line in enumerate(lines):
        if not line.strip().startswith("%"):
            break
        lines[i] = " " * len(line)
    return "\n".join(lines)


def _lex(src: SourceFile, start: int = 0, end: int | None = None) -> tuple[list[Token], Reporter]:
    reporter = Reporter()
    tokens = Lexer(src, reporter, start, end).tokenize()
    return [t for t in tokens if t.kind is not Kind.EOF], reporter


@dataclass
class _Cell:
    """The cell as the checker sees it, plus what a token scan finds when it does not."""

    src: SourceFile
    scope: SessionScope
    result: CheckResult | None
    tokens: list[Token]
    scanned_decls: dict[str, str] = field(default_factory=dict)  # name -> kind
    scanned_vars: set[str] = field(default_factory=set)

    def scanned_at(self, offset: int) -> set[str]:
        """The name being written at `offset` (it is not a completion of itself)."""
        return {t.text for t in self.tokens if t.span.start == offset and t.kind is Kind.IDENT}

    def entry(self, name: str) -> DeclEntry | None:
        return self.result.decls.get(name) if self.result is not None else None

    def decl_kinds(self) -> dict[str, str]:
        kinds = dict(self.scanned_decls)
        kinds.update({name: decl_kind(node) for name, node in self.scope.decls.items()})
        if self.result is not None:
            kinds.update({name: e.kind for name, e in self.result.decls.items()})
        return kinds

    def binding_type(self, name: str) -> T.Type | None:
        if self.result is not None and name in self.result.bindings:
            return self.result.bindings[name].type
        session = self.scope.bindings.get(name)
        return session.type if session is not None else None


def _analyse(text: str, scope: SessionScope) -> _Cell:
    src = SourceFile("<cell>", text)
    result: CheckResult | None
    try:
        result = check(src, session=scope, cell=True)
    except Exception:
        try:  # at least what the session declared, resolved
            result = check(SourceFile("<cell>", ""), session=scope, cell=True)
        except Exception:
            result = None
    try:
        tokens, _ = _lex(src)
    except Exception:
        tokens = []
    cell = _Cell(src, scope, result, tokens)
    _scan(cell)
    return cell


def _scan(cell: _Cell) -> None:
    """Names declared or bound in the cell, from its tokens (strings and comments are not
    tokens), for code the parser gave up on."""
    toks = cell.tokens
    for i, tok in enumerate(toks):
        if i and toks[i - 1].is_op(".", "?."):
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if tok.kind is Kind.IDENT and nxt is not None and nxt.is_op("=>"):
            cell.scanned_vars.add(tok.text)  # a lambda parameter
        if nxt is None or nxt.kind is not Kind.IDENT:
            continue
        if tok.is_kw("type", "tool", "agent", "team", "workflow") or (
                tok.is_word("rubric", "panel") and i + 2 < len(toks) and toks[i + 2].is_op("{")):
            cell.scanned_decls[nxt.text] = tok.text
            if tok.is_kw("workflow"):
                cell.scanned_vars.update(_params(toks, i + 2))
        elif tok.is_kw("let", "var", "for", "as", "async"):
            cell.scanned_vars.add(nxt.text)
            if tok.is_kw("for") and i + 3 < len(toks) and toks[i + 2].is_op(",") \
                    and toks[i + 3].kind is Kind.IDENT:
                cell.scanned_vars.add(toks[i + 3].text)


def _params(toks: list[Token], i: int) -> list[str]:
    """Parameter names of `workflow name(…)` whose `(` is at `i`."""
    if i >= len(toks) or not toks[i].is_op("("):
        return []
    names: list[str] = []
    depth = 0
    for j in range(i, len(toks)):
        tok = toks[j]
        if tok.is_op(*OPENERS):
            depth += 1
        elif tok.is_op(*CLOSERS):
            depth -= 1
            if depth == 0:
                break
        elif depth == 1 and tok.kind is Kind.IDENT and toks[j - 1].is_op("(", ","):
            names.append(tok.text)
    return names


@dataclass
class _Site:
    """Where a completion or inspection happens: the identifier prefix ending at the
    cursor, and the tokens before it in the innermost code region."""

    prefix: str
    start: int
    before: list[Token]


def _site(src: SourceFile, start: int, end: int, depth: int = 0) -> _Site | None:
    """None inside a string literal, a comment or a bad token. Inside an unterminated
    `${…}` the region is the interpolated expression."""
    toks, reporter = _lex(src, start, end)
    last = toks[-1] if toks else None
    if last is not None and last.kind is Kind.ERROR and last.text.startswith('"') and last.span.end >= end:
        opens = [d.span.start for d in reporter.diagnostics if d.code == "F1003" and d.span.start >= last.span.start]
        if opens and depth < 64:
            return _site(src, max(opens) + 2, end, depth + 1)
        return None
    last_end = last.span.end if last is not None else start
    gap = src.text[last_end:end]
    if "#" in gap[gap.rfind("\n") + 1:]:
        return None
    if last is not None and not gap:
        if last.kind in (Kind.IDENT, Kind.KEYWORD):
            return _Site(last.text, last.span.start, toks[:-1])
        if last.kind in (Kind.ERROR, Kind.INT, Kind.NUMBER, Kind.DURATION, Kind.STRING):
            return None
    return _Site("", end, toks)


@dataclass
class _Path:
    """`a.b[0].c.` before the cursor's prefix: segments ["a", "b", "[]", "c"] (`[*]` for
    a projection); no segments when the object is not a name path (a call, a literal).
    `start` is where the path begins."""

    segments: list[str]
    start: int


def _member_path(before: list[Token]) -> _Path | None:
    """The path whose member the prefix names; None when it does not follow a `.`."""
    if not before or not before[-1].is_op(".", "?."):
        return None
    segments: list[str] = []
    i = len(before) - 2
    while i >= 0:
        tok = before[i]
        if tok.kind in (Kind.IDENT, Kind.KEYWORD):
            segments.append(tok.text)
            if i >= 1 and before[i - 1].is_op(".", "?."):
                i -= 2
                continue
            segments.reverse()
            return _Path(segments if tok.kind is Kind.IDENT or tok.text == "it" else [], tok.span.start)
        if tok.is_op("]"):
            depth, j = 0, i
            while j >= 0:
                if before[j].is_op("]"):
                    depth += 1
                elif before[j].is_op("["):
                    depth -= 1
                    if depth == 0:
                        break
                j -= 1
            if j < 0:
                return _Path([], before[0].span.start)
            inner = before[j + 1 : i]
            segments.append("[*]" if len(inner) == 1 and inner[0].is_op("*") else "[]")
            i = j - 1
            continue
        return _Path([], tok.span.start)
    return _Path([], before[0].span.start)


def _fields(t: T.Type) -> dict[str, T.Field]:
    """The fields of (a union of) object types, nulls left out."""
    out: dict[str, T.Field] = {}
    for option in T.options(T.without_null(t)):
        obj = T.as_object(option)
        if obj is not None:
            for name, fld in obj.fields:
                out.setdefault(name, fld)
    return out


def _root_type(cell: _Cell, name: str, cursor: int, repair: bool = False) -> T.Type | None:
    """The static type of a name at the cursor: a top-level binding of the cell or the
    session, a parameter of the workflow around the cursor, or an `async` task."""
    bound = cell.binding_type(name)
    if bound is not None:
        return bound
    result = cell.result
    if result is None:
        return None
    for entry in result.decls.values():
        node = entry.node
        if entry.workflow is not None and entry.origin == "cell" and node.span.start <= cursor <= node.span.end:
            for pname, ptype, optional in entry.workflow.params:
                if pname == name:
                    return T.union([ptype, T.NULL]) if optional else ptype
    contexts = [result.toplevel] if result.toplevel is not None else []
    contexts += list(result.workflows.values())
    for ctx in contexts:
        task = ctx.tasks.get(name)
        if task is not None:
            return T.object_type(dict(task.fields))
    if repair and name in cell.scanned_vars:
        return _repaired_param(cell, name, cursor)
    return None


def _repaired_param(cell: _Cell, name: str, at: int) -> T.Type | None:
    """A parameter of a workflow still being written: check the code up to `at`, with
    `null` and the missing closing brackets after it, and read the workflow's
    parameters from that."""
    toks, reporter = _lex(cell.src, 0, at)
    if reporter.diagnostics:
        return None
    depth: list[str] = []
    for tok in toks:
        if tok.is_op(*OPENERS):
            depth.append(OPENERS[tok.text])
        elif tok.is_op(*CLOSERS) and (not depth or depth.pop() != tok.text):
            return None
    text = cell.src.text[:at] + "null\n" + "".join(reversed(depth))
    try:
        result = check(SourceFile("<cell>", text), session=cell.scope, cell=True)
    except Exception:
        return None
    for entry in result.decls.values():
        node = entry.node
        if entry.workflow is not None and entry.origin == "cell" and node.span.start <= at <= node.span.end:
            for pname, ptype, optional in entry.workflow.params:
                if pname == name:
                    return T.union([ptype, T.NULL]) if optional else ptype
    return None


def _path_type(cell: _Cell, path: _Path) -> T.Type | None:
    if not path.segments:
        return None
    t = _root_type(cell, path.segments[0], path.start, repair=True)
    for segment in path.segments[1:]:
        if t is None:
            return None
        if segment in ("[*]", "[]"):
            item = T.array_item(T.without_null(t))
            if item is None:
                return T.ANY if segment == "[]" and _fields(t) else None
            t = item
        else:
            fld = _fields(t).get(segment)
            if fld is None:
                return T.ANY if T.is_any(t) else None
            t = T.union([fld.type, T.NULL]) if fld.optional else fld.type
    return t


def _team(cell: _Cell, name: str) -> tuple[str | None, list[str]] | None:
    """(main, members) of a team, from the checker or else from the declaration."""
    entry = cell.entry(name)
    if entry is not None and entry.kind == "team" and entry.team is not None:
        return entry.team.main, list(entry.team.members)
    node = entry.node if entry is not None else cell.scope.decls.get(name)
    if not isinstance(node, ast.TeamDecl):
        return None
    main: str | None = None
    members: list[str] = []
    for fld in node.fields:
        if fld.name.name == "main" and isinstance(fld.value, ast.Name):
            main = fld.value.name
        elif fld.name.name == "members" and isinstance(fld.value, ast.ArrayLit):
            members = [item.name for item in fld.value.items if isinstance(item, ast.Name)]
    return main, members


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
        kinds = [{"text": n, "type": "type" if self.kinds[n] == "type-prim" else self.kinds[n],
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

    cell = _analyse(_blank_magics(code), scope)
    site = _site(cell.src, 0, cursor)
    if site is None:
        return _Matches("").reply(cursor, cursor)
    matches = _Matches(site.prefix)
    path = _member_path(site.before)
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
}


def _complete_agent_call(code: str, site: _Site, cursor: int) -> JSON:
    dot = code.rfind(".", 0, site.start)
    forms = [form for option, form in AGENT_CALL_FORMS.items() if option.startswith(site.prefix) or not option]
    if site.prefix:  # `triager.lab`: the options it starts, not the bare call
        forms = [AGENT_CALL_FORMS[o] for o in AGENT_CALL_FORMS if o and o.startswith(site.prefix)] or forms
    forms = list(dict.fromkeys(forms))
    kinds = [{"text": f, "type": "call: an agent has no fields", "start": dot, "end": cursor} for f in forms]
    return {"matches": forms, "cursor_start": dot, "cursor_end": cursor,
            "metadata": {"_jupyter_types_experimental": kinds}}


def _complete_member(cell: _Cell, path: _Path, matches: _Matches) -> None:
    if len(path.segments) == 1:
        team = _team(cell, path.segments[0])
        if team is not None:
            _main, members = team
            matches.add("main", "agent")
            matches.add("member", "function")
            for member in members:
                matches.add(member, "agent")
            return
    t = _path_type(cell, path)
    if t is None:
        return
    for name in _fields(t):
        matches.add(name, "field")


def _complete_magic_argument(code: str, cursor: int, scope: SessionScope, name: str, line: str) -> JSON:
    word = re.search(r"\S*$", line)
    prefix = word.group() if word is not None else ""
    matches = _Matches(prefix)
    entry = MAGIC_REGISTRY.get(name)
    if entry is None:
        return matches.reply(cursor - len(prefix), cursor)
    if entry.offers == "declarations":
        for decl, kind in _analyse(_blank_magics(code), scope).decl_kinds().items():
            matches.add(decl, kind)
    elif entry.offers == "diagnostic codes":
        for diag_code in REGISTRY:
            matches.add(diag_code, "keyword")
    for choice in entry.choices:
        matches.add(choice, "keyword")
    return matches.reply(cursor - len(prefix), cursor)


# --- inspect -------------------------------------------------------------------------------------


class _Doc:
    """Plain text and Markdown built side by side; the Markdown is sent as sanitised HTML
    (`flow_kernel.markup`): doc comments come from files anyone may have written."""

    def __init__(self, signature: str) -> None:
        self.plain: list[str] = [signature]
        self.md: list[str] = ["```flow", signature, "```"]

    def text(self, text: str | None) -> None:
        if text:
            self.plain += ["", text]
            self.md += ["", text]

    def item(self, label: str, value: str) -> None:
        if not any(line.startswith("- ") for line in self.md[-1:]):
            self.plain.append("")
            self.md.append("")
        self.plain.append(f"{label}: {value}")
        self.md.append(f"- **{label}**: `{value}`" if value else f"- **{label}**")

    def code(self, text: str) -> None:
        self.plain += ["", text]
        self.md += ["", f"`{text}`"]

    def schema(self, title: str, schema: object) -> None:
        body = json.dumps(schema, indent=2, ensure_ascii=False)
        self.plain += ["", f"{title}:", body]
        self.md += ["", f"**{title}**", "", "```json", body, "```"]

    def source(self, text: str) -> None:
        self.plain += ["", "Source:", text]
        self.md += ["", "**Source**", "", "```flow", text, "```"]

    def reply(self) -> JSON:
        return {"found": True, "data": {"text/plain": "\n".join(self.plain),
                                        "text/html": markdown_html("\n".join(self.md))}, "metadata": {}}


def _not_found() -> JSON:
    return {"found": False, "data": {}, "metadata": {}}


def inspect(code: str, cursor_pos: int, scope: SessionScope, detail_level: int = 0) -> JSON:
    """Jupyter `inspect_reply` content (without `status`) for the name at the cursor."""
    try:
        cursor = max(0, min(int(cursor_pos), len(code)))
        return _inspect(code, cursor, scope, detail_level)
    except Exception:  # inspection must never break the kernel
        return _not_found()


def _ident_char(ch: str) -> bool:
    return ch == "_" or ("a" <= ch <= "z") or ("A" <= ch <= "Z") or ("0" <= ch <= "9")


def _word_at(code: str, cursor: int) -> tuple[int, int]:
    start, end = cursor, cursor
    while start > 0 and _ident_char(code[start - 1]):
        start -= 1
    while end < len(code) and _ident_char(code[end]):
        end += 1
    return start, end


def _callee_before(src: SourceFile, cursor: int) -> tuple[int, int] | None:
    """The name called by the innermost `(` still open before the cursor."""
    toks, _ = _lex(src, 0, cursor)
    stack: list[int] = []
    for i, tok in enumerate(toks):
        if tok.is_op(*OPENERS):
            stack.append(i)
        elif tok.is_op(*CLOSERS) and stack:
            stack.pop()
    for i in reversed(stack):
        if toks[i].is_op("(") and i and toks[i - 1].kind is Kind.IDENT:
            return toks[i - 1].span.start, toks[i - 1].span.end
    return None


def _inspect(code: str, cursor: int, scope: SessionScope, detail_level: int) -> JSON:
    cell = _analyse(_blank_magics(code), scope)
    start, end = _word_at(code, cursor)
    if start == end:
        callee = _callee_before(cell.src, cursor)
        if callee is None:
            return _not_found()
        start, end = callee
    name = code[start:end]
    if not name or name[0].isdigit():
        return _not_found()
    site = _site(cell.src, 0, end)
    path = _member_path(site.before) if site is not None and site.start == start else None
    if path is not None:
        return _inspect_member(cell, path, name, detail_level)
    return _inspect_name(cell, name, cursor, detail_level)


def _inspect_name(cell: _Cell, name: str, cursor: int, detail_level: int) -> JSON:
    entry = cell.entry(name)
    if entry is not None:
        return _decl_doc(cell, entry, detail_level).reply()
    node = cell.scope.decls.get(name)
    if node is not None:  # the checker could not resolve the session: what the node says
        doc = _Doc(f"{decl_kind(node)} {name}")
        doc.text(node.doc)
        doc.source(node.span.text)
        return doc.reply()
    bound = cell.binding_type(name)
    if bound is None:
        bound = _root_type(cell, name, cursor)
    if bound is not None:
        return _binding_doc(cell, name, bound).reply()
    builtin = BUILTINS.get(name)
    if builtin is not None:
        signature, note = BUILTIN_DOCS.get(name, (_builtin_signature(builtin), ""))
        doc = _Doc(signature)
        doc.text(("Builtin. " + note).strip())
        return doc.reply()
    if name in PRIM_TYPES:
        doc = _Doc(f"type {name}")
        doc.text("A builtin type.")
        doc.schema("JSON Schema", type_schema(T.PRIMS.get(name, T.ANY)))
        return doc.reply()
    return _not_found()


def _inspect_member(cell: _Cell, path: _Path, name: str, detail_level: int) -> JSON:
    segments = path.segments
    if not segments:
        return _not_found()
    team = _team(cell, segments[0]) if len(segments) == 1 else None
    if team is not None:
        main, members = team
        if name == "member":
            outputs = [_agent_output(cell, m) for m in ([main] if main else []) + members]
            doc = _Doc(f"{segments[0]}.member(name: string, prompt: string, ...options) -> {T.union(outputs)}")
            doc.text("Calls the member (or the main agent) with that name, resolved at run time; "
                     "any other name is a `capability-violation` error.")
            return doc.reply()
        agent = main if name == "main" else name if name in members else None
        entry = cell.entry(agent) if agent is not None else None
        if entry is None:
            return _not_found()
        doc = _decl_doc(cell, entry, detail_level)
        doc.plain[0] = f"{segments[0]}.{name} → {doc.plain[0]}"
        doc.md[1] = f"{segments[0]}.{name} → {doc.md[1]}"
        return doc.reply()
    parent = _path_type(cell, path)
    fld = _fields(parent).get(name) if parent is not None else None
    if fld is None:
        return _not_found()
    dotted = ".".join(segments).replace(".[", "[") + "." + name
    return _binding_doc(cell, dotted, fld.type, optional=fld.optional, kind="field").reply()


def _agent_output(cell: _Cell, name: str) -> T.Type:
    entry = cell.entry(name)
    return entry.agent.output if entry is not None and entry.agent is not None else T.ANY


def _binding_doc(cell: _Cell, name: str, t: T.Type, *, optional: bool = False, kind: str = "") -> _Doc:
    if not kind:
        mutable = False
        if cell.result is not None and name in cell.result.bindings:
            mutable = cell.result.bindings[name].mutable
        elif name in cell.scope.bindings:
            mutable = cell.scope.bindings[name].mutable
        kind = "var" if mutable else "let"
        doc = _Doc(f"{kind} {name}: {t}")
    else:
        doc = _Doc(f"{name}{'?' if optional else ''}: {t}")
    if isinstance(t, T.Named):
        doc.code(f"type {t.name} = {T.display(t.resolved)}")
    doc.schema("JSON Schema", type_schema(t))
    return doc


def _signature(params: list[tuple[str, T.Type, bool]]) -> str:
    return ", ".join(f"{name}{'?' if optional else ''}: {t}" for name, t, optional in params)


def _string_field(node: ast.Decl, name: str) -> str | None:
    if not isinstance(node, ast.AgentDecl):
        return None
    for fld in node.fields:
        if fld.name.name == name and isinstance(fld.value, ast.StrLit):
            return fld.value.constant
    return None


def _decl_doc(cell: _Cell, entry: DeclEntry, detail_level: int) -> _Doc:
    node, name = entry.node, entry.name
    schema = schema_for_decl(entry) or {}
    if entry.kind == "agent":
        doc = _Doc(f"agent {name}")
        doc.text(node.doc)
        info = entry.agent
        if info is not None:
            doc.item("model", info.model)
            for pf in info.prompt_files:  # `file("…")` fields: where the text comes from, and how it begins
                first = next((line.strip() for line in (pf.text or "").splitlines() if line.strip()), "")
                shown = f" — {first[:80]}" if first else " (read when the cell is checked with its folder)"
                doc.item(pf.used_for, f'file("{pf.path}"){shown}')
        role = _string_field(node, "role")
        if role:
            doc.item("role", role)
        if info is not None:
            doc.item("tools", ", ".join(info.tools) if info.tools else "none")
            doc.item("output", str(info.output))
        if "output" in schema:
            doc.schema("Output JSON Schema", schema["output"])
    elif entry.kind == "workflow":
        wf = entry.workflow
        if wf is not None:
            returns = f" -> {wf.returns}" if wf.returns is not None else ""
            doc = _Doc(f"workflow {name}({_signature(wf.params)}){returns}")
        else:
            doc = _Doc(f"workflow {name}")
        doc.text(node.doc)
        if "input" in schema:
            doc.schema("Input JSON Schema", schema["input"])
            doc.schema("Output JSON Schema", schema["output"])
    elif entry.kind == "tool":
        tool = entry.tool
        approval = isinstance(node, ast.ToolDecl) and node.requires_approval
        if tool is not None:
            lent = f' from mcp "{node.mcp}"' if isinstance(node, ast.ToolDecl) and node.mcp else ""
            doc = _Doc(f"tool {name}({_signature(tool.params)}) -> {tool.returns}{lent}"
                       + (" requires approval" if approval else ""))
        else:
            doc = _Doc(f"tool {name}")
        doc.text(node.doc)
        if isinstance(node, ast.ToolDecl) and node.mcp:  # lent by a server of the configuration (%mcp)
            doc.item("lent by", f"the MCP server `{node.mcp.partition('/')[0]}` ([mcp.{node.mcp.partition('/')[0]}] "
                                "in flow.toml); its annotations may add an approval")
        doc.item("requires approval", "yes" if approval else "no")
        if tool is not None:
            doc.schema("Input JSON Schema", type_schema(input_type(tool.params)))
            doc.schema("Output JSON Schema", type_schema(tool.returns))
    elif entry.kind == "team":
        team = _team(cell, name)
        main, members = team if team is not None else (None, [])
        doc = _Doc(f"team {name} {{ main: {main or '?'}, members: [{', '.join(members)}] }}")
        doc.text(node.doc)
        if main is not None:
            doc.item("main", f"{main} -> {_agent_output(cell, main)}")
        for member in members:
            doc.item("member", f"{member} -> {_agent_output(cell, member)}")
        doc.text(f"Call `{name}.main(prompt)`, `{name}.<member>(prompt)` or "
                 f"`{name}.member(nameExpr, prompt)`.")
    elif entry.kind == "rubric":
        doc = _Doc(f"rubric {name}")
        doc.text(node.doc)
        for c in entry.rubric.criteria if entry.rubric is not None else []:
            doc.item(c.id, f"weight {c.weight}, scale {c.low}..{c.high}: {c.description.strip()[:80]}")
        for pf in entry.rubric.prompt_files if entry.rubric is not None else []:
            doc.item(pf.used_for, f'file("{pf.path}")')
    elif entry.kind == "panel":
        panel = entry.panel
        doc = _Doc(f"panel {name}")
        doc.text(node.doc)
        if panel is not None:
            for agent, domain in panel.experts:
                doc.item("expert", f"{agent} ({domain})")
            doc.item("rubric", panel.rubric or "?")
            doc.item("judge", panel.judge or "none")
            doc.item("rounds", f"{panel.rounds}, converged at a spread of at most {panel.spread}")
            doc.text(f"`{name}(candidate)` returns `{panel.result}`.")
    else:  # a type alias
        definition = node.type.span.text if isinstance(node, ast.TypeDecl) else "?"
        doc = _Doc(f"type {name} = {definition}")
        doc.text(node.doc)
        if schema:
            doc.schema("JSON Schema", schema)
    if detail_level > 0:
        doc.source(node.span.text)
    return doc


def _builtin_signature(builtin: Builtin) -> str:
    params = [f"{kind}{'' if i < builtin.required else '?'}" for i, kind in enumerate(builtin.params)]
    if builtin.variadic:
        params.append("...")
    return f"{builtin.name}({', '.join(params)})"


# --- is_complete ---------------------------------------------------------------------------------


def is_complete(code: str) -> JSON:
    """Jupyter `is_complete_reply` content: may the console run `code` now?"""
    try:
        return _is_complete(code)
    except Exception:  # let the kernel run it and report what is wrong
        return {"status": "invalid"}


def _is_complete(code: str) -> JSON:
    text = _blank_magics(code)
    if not text.strip():
        return {"status": "complete"}
    src = SourceFile("<cell>", text)
    toks, reporter = _lex(src)
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

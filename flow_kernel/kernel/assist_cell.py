"""A cell as completion and inspection read it (assist.py, assist_inspect.py): checked with
the session's declarations where the checker can, scanned token by token where it cannot,
and the site of the cursor in it — the identifier being written, the member path before it.
Pure functions of the cell text and the session's `SessionScope`; broken code gives less,
never an exception."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flow_kernel.diagnostics.registry import Reporter
from flow_kernel.lang import ast
from flow_kernel.lang import types as T
from flow_kernel.lang.check import check
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.lang.checker import decl_kind
from flow_kernel.lang.env import DeclEntry
from flow_kernel.lang.lexer import CLOSERS, OPENERS, Lexer
from flow_kernel.lang.session_scope import SessionScope
from flow_kernel.lang.tokens import Kind, Token
from flow_kernel.source import SourceFile

JSON = dict[str, Any]
PRIM_TYPES = ("string", "number", "int", "bool", "null", "any", "duration")



def blank_magics(code: str) -> str:
    """The cell with its leading `%magic` lines replaced by spaces (offsets unchanged)."""
    lines = code.split("\n")
    for i, line in enumerate(lines):
        if not line.strip().startswith("%"):
            break
        lines[i] = " " * len(line)
    return "\n".join(lines)


def lex(src: SourceFile, start: int = 0, end: int | None = None) -> tuple[list[Token], Reporter]:
    reporter = Reporter()
    tokens = Lexer(src, reporter, start, end).tokenize()
    return [t for t in tokens if t.kind is not Kind.EOF], reporter


@dataclass
class Cell:
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


def analyse(text: str, scope: SessionScope) -> Cell:
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
        tokens, _ = lex(src)
    except Exception:
        tokens = []
    cell = Cell(src, scope, result, tokens)
    _scan(cell)
    return cell


def _scan(cell: Cell) -> None:
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
                tok.is_word("rubric", "panel") and i + 2 < len(toks) and toks[i + 2].is_op("{")) or (
                tok.is_word("fn") and i + 2 < len(toks) and toks[i + 2].is_op("(")):
            cell.scanned_decls[nxt.text] = tok.text
            if tok.is_kw("workflow") or tok.is_word("fn"):
                cell.scanned_vars.update(_params(toks, i + 2))
        elif tok.is_kw("let", "var", "for", "as", "async"):
            cell.scanned_vars.add(nxt.text)
            if tok.is_kw("for") and i + 3 < len(toks) and toks[i + 2].is_op(",") \
                    and toks[i + 3].kind is Kind.IDENT:
                cell.scanned_vars.add(toks[i + 3].text)


def _params(toks: list[Token], i: int) -> list[str]:
    """Parameter names of `workflow name(…)` or `fn name(…)` whose `(` is at `i`."""
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
class Site:
    """Where a completion or inspection happens: the identifier prefix ending at the
    cursor, and the tokens before it in the innermost code region."""

    prefix: str
    start: int
    before: list[Token]


def cursor_site(src: SourceFile, start: int, end: int, depth: int = 0) -> Site | None:
    """None inside a string literal, a comment or a bad token. Inside an unterminated
    `${…}` the region is the interpolated expression."""
    toks, reporter = lex(src, start, end)
    last = toks[-1] if toks else None
    if last is not None and last.kind is Kind.ERROR and last.text.startswith('"') and last.span.end >= end:
        opens = [d.span.start for d in reporter.diagnostics if d.code == "F1003" and d.span.start >= last.span.start]
        if opens and depth < 64:
            return cursor_site(src, max(opens) + 2, end, depth + 1)
        return None
    last_end = last.span.end if last is not None else start
    gap = src.text[last_end:end]
    if "#" in gap[gap.rfind("\n") + 1:]:
        return None
    if last is not None and not gap:
        if last.kind in (Kind.IDENT, Kind.KEYWORD):
            return Site(last.text, last.span.start, toks[:-1])
        if last.kind in (Kind.ERROR, Kind.INT, Kind.NUMBER, Kind.DURATION, Kind.STRING):
            return None
    return Site("", end, toks)


@dataclass
class MemberPath:
    """`a.b[0].c.` before the cursor's prefix: segments ["a", "b", "[]", "c"] (`[*]` for
    a projection); no segments when the object is not a name path (a call, a literal).
    `start` is where the path begins."""

    segments: list[str]
    start: int


def member_path(before: list[Token]) -> MemberPath | None:
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
            return MemberPath(segments if tok.kind is Kind.IDENT or tok.text == "it" else [], tok.span.start)
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
                return MemberPath([], before[0].span.start)
            inner = before[j + 1 : i]
            segments.append("[*]" if len(inner) == 1 and inner[0].is_op("*") else "[]")
            i = j - 1
            continue
        return MemberPath([], tok.span.start)
    return MemberPath([], before[0].span.start)


def object_fields(t: T.Type) -> dict[str, T.Field]:
    """The fields of (a union of) object types, nulls left out."""
    out: dict[str, T.Field] = {}
    for option in T.options(T.without_null(t)):
        obj = T.as_object(option)
        if obj is not None:
            for name, fld in obj.fields:
                out.setdefault(name, fld)
    return out


def root_type(cell: Cell, name: str, cursor: int, repair: bool = False) -> T.Type | None:
    """The static type of a name at the cursor: a top-level binding of the cell or the
    session, a parameter of the workflow around the cursor, or an `async` task."""
    bound = cell.binding_type(name)
    if bound is not None:
        return bound
    result = cell.result
    if result is None:
        return None
    param = _workflow_param(result, name, cursor)
    if param is not None:
        return param
    contexts = [result.toplevel] if result.toplevel is not None else []
    contexts += list(result.workflows.values())
    for ctx in contexts:
        task = ctx.tasks.get(name)
        if task is not None:
            return T.object_type(dict(task.fields))
    if repair and name in cell.scanned_vars:
        return _repaired_param(cell, name, cursor)
    return None


def _repaired_param(cell: Cell, name: str, at: int) -> T.Type | None:
    """A parameter of a workflow still being written: check the code up to `at`, with
    `null` and the missing closing brackets after it, and read the workflow's
    parameters from that."""
    toks, reporter = lex(cell.src, 0, at)
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
    return _workflow_param(result, name, at)


def _workflow_param(result: CheckResult, name: str, at: int) -> T.Type | None:
    """The type of parameter `name` of the cell's workflow around offset `at` (nullable when
    the parameter is optional), if there is one."""
    for entry in result.decls.values():
        node = entry.node
        if entry.workflow is not None and entry.origin == "cell" and node.span.start <= at <= node.span.end:
            for pname, ptype, optional in entry.workflow.params:
                if pname == name:
                    return T.union([ptype, T.NULL]) if optional else ptype
    return None


def path_type(cell: Cell, path: MemberPath) -> T.Type | None:
    if not path.segments:
        return None
    t = root_type(cell, path.segments[0], path.start, repair=True)
    for segment in path.segments[1:]:
        if t is None:
            return None
        if segment in ("[*]", "[]"):
            item = T.array_item(T.without_null(t))
            if item is None:
                return T.ANY if segment == "[]" and object_fields(t) else None
            t = item
        else:
            fld = object_fields(t).get(segment)
            if fld is None:
                return T.ANY if T.is_any(t) else None
            t = T.union([fld.type, T.NULL]) if fld.optional else fld.type
    return t


def team_of(cell: Cell, name: str) -> tuple[str | None, list[str]] | None:
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

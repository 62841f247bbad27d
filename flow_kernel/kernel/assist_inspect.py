"""What the Flow kernel answers to `inspect_request`: the name at the cursor — a declaration,
a binding, a field, a team's member, a builtin or a builtin type — as text and as sanitised
HTML, with its JSON Schema where it has one (assist_cell.py reads the cell)."""

from __future__ import annotations

import json

from flow_kernel.kernel.assist_cell import (
    JSON,
    PRIM_TYPES,
    Cell,
    MemberPath,
    analyse,
    blank_magics,
    cursor_site,
    lex,
    member_path,
    object_fields,
    path_type,
    root_type,
    team_of,
)
from flow_kernel.lang import ast
from flow_kernel.lang import types as T
from flow_kernel.lang.builtins import BUILTINS, Builtin
from flow_kernel.lang.checker import decl_kind
from flow_kernel.lang.env import DeclEntry
from flow_kernel.lang.lexer import CLOSERS, OPENERS
from flow_kernel.lang.schema import input_type, schema_for_decl, type_schema
from flow_kernel.lang.session_scope import SessionScope
from flow_kernel.lang.tokens import Kind
from flow_kernel.markup import markdown_html
from flow_kernel.source import SourceFile

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
    "reduce": ("reduce(xs: T[], init: A, f: (acc: A, x: T) => A) -> A",
               "Folds the items from the left: `init` for no items, else `f` applied to the accumulator and each item."),
    "flatMap": (f"flatMap(xs: T[], f: {_L}U[]) -> U[]", "The lambda applied to each item, its arrays joined in order."),
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
    toks, _ = lex(src, 0, cursor)
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
    cell = analyse(blank_magics(code), scope)
    start, end = _word_at(code, cursor)
    if start == end:
        callee = _callee_before(cell.src, cursor)
        if callee is None:
            return _not_found()
        start, end = callee
    name = code[start:end]
    if not name or name[0].isdigit():
        return _not_found()
    site = cursor_site(cell.src, 0, end)
    path = member_path(site.before) if site is not None and site.start == start else None
    if path is not None:
        return _inspect_member(cell, path, name, detail_level)
    return _inspect_name(cell, name, cursor, detail_level)


def _inspect_name(cell: Cell, name: str, cursor: int, detail_level: int) -> JSON:
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
        bound = root_type(cell, name, cursor)
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


def _inspect_member(cell: Cell, path: MemberPath, name: str, detail_level: int) -> JSON:
    segments = path.segments
    if not segments:
        return _not_found()
    team = team_of(cell, segments[0]) if len(segments) == 1 else None
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
    parent = path_type(cell, path)
    fld = object_fields(parent).get(name) if parent is not None else None
    if fld is None:
        return _not_found()
    dotted = ".".join(segments).replace(".[", "[") + "." + name
    return _binding_doc(cell, dotted, fld.type, optional=fld.optional, kind="field").reply()


def _agent_output(cell: Cell, name: str) -> T.Type:
    entry = cell.entry(name)
    return entry.agent.output if entry is not None and entry.agent is not None else T.ANY


def _binding_doc(cell: Cell, name: str, t: T.Type, *, optional: bool = False, kind: str = "") -> _Doc:
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


def _decl_doc(cell: Cell, entry: DeclEntry, detail_level: int) -> _Doc:
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
    elif entry.kind in ("workflow", "fn"):
        wf = entry.workflow
        if wf is not None:
            returns = f" -> {wf.returns}" if wf.returns is not None else ""
            doc = _Doc(f"{entry.kind} {name}({_signature(wf.params)}){returns}")
        else:
            doc = _Doc(f"{entry.kind} {name}")
        doc.text(node.doc)
        if entry.kind == "fn":
            doc.text(f"A function: `{name}(…)` runs in its caller's workflow or cell, within its limits.")
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
        team = team_of(cell, name)
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


__all__ = ["BUILTIN_DOCS", "inspect"]

"""The parser (language.md §1-§6): every item, statement and expression form, the
AST shapes and key fields it produces, exact node spans, doc comments, and error
recovery (one diagnostic per mistake)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from flow_kernel.diagnostics.registry import Reporter
from flow_kernel.lang import ast
from flow_kernel.lang.parser import parse
from flow_kernel.source import SourceFile

SPEC = Path(__file__).resolve().parents[2] / "spec" / "language.md"  # the copy of the normative spec


# --- helpers ----------------------------------------------------------------------


def parse_src(text: str) -> tuple[ast.Module, list]:
    reporter = Reporter()
    module = parse(SourceFile("test.flow", text), reporter)
    return module, reporter.diagnostics


def parse_ok(text: str) -> ast.Module:
    module, diags = parse_src(text)
    assert diags == [], [(d.code, d.message, d.span.text) for d in diags]
    return module


def codes(diags) -> list[str]:
    return [d.code for d in diags]


def expr(text: str) -> ast.Expr:
    """Parse `text` as the value of a top-level `let`."""
    module = parse_ok(f"let _r = {text}")
    assert len(module.statements) == 1
    stmt = module.statements[0]
    assert isinstance(stmt, ast.Let)
    return stmt.value


def stmts(body: str) -> list[ast.Stmt]:
    """Parse `body` inside a workflow and return its statements."""
    module = parse_ok("workflow w() {\n" + body + "\n}")
    assert len(module.decls) == 1
    wf = module.decls[0]
    assert isinstance(wf, ast.WorkflowDecl)
    return wf.body.body


def stmt(body: str) -> ast.Stmt:
    body_stmts = stmts(body)
    assert len(body_stmts) == 1, body_stmts
    return body_stmts[0]


def decl(text: str) -> ast.Decl:
    module = parse_ok(text)
    assert len(module.decls) == 1 and module.statements == []
    return module.decls[0]


def name_of(node: ast.Expr) -> str:
    assert isinstance(node, ast.Name), node
    return node.name


def str_of(node: ast.Expr) -> str:
    assert isinstance(node, ast.StrLit), node
    const = node.constant
    assert const is not None
    return const


def walk(node: object) -> Iterator[ast.Node]:
    if isinstance(node, list):
        for item in node:
            yield from walk(item)
        return
    if not isinstance(node, ast.Node):
        return
    yield node
    for f in dataclasses.fields(node):
        yield from walk(getattr(node, f.name))


def walk_with_parent(node: object, parent: ast.Node | None = None) -> Iterator[tuple[ast.Node, ast.Node | None]]:
    if isinstance(node, list):
        for item in node:
            yield from walk_with_parent(item, parent)
        return
    if not isinstance(node, ast.Node):
        return
    yield node, parent
    for f in dataclasses.fields(node):
        yield from walk_with_parent(getattr(node, f.name), node)


def find(node: object, cls: type, n: int = 0):
    found = [x for x in walk(node) if isinstance(x, cls)]
    assert len(found) > n, f"no {cls.__name__} #{n}"
    return found[n]


# --- items -------------------------------------------------------------------------


def test_use() -> None:
    module = parse_ok('use "lib/support.flow"\nuse "other.flow"')
    assert [u.path for u in module.uses] == ["lib/support.flow", "other.flow"]
    assert module.uses[0].path_span.text == '"lib/support.flow"'
    assert module.uses[0].span.text == 'use "lib/support.flow"'
    assert module.decls == [] and module.statements == []


def test_use_needs_a_constant_string() -> None:
    _module, diags = parse_src("use lib")
    assert codes(diags) == ["F1006"]


def test_type_alias_simple() -> None:
    d = decl("type Id = string")
    assert isinstance(d, ast.TypeDecl)
    assert d.name.name == "Id"
    assert isinstance(d.type, ast.TName) and d.type.name == "string"


@pytest.mark.parametrize("base", ["string", "number", "int", "bool", "null", "any", "duration", "external", "Ticket"])
def test_type_base_names(base: str) -> None:
    d = decl(f"type T = {base}")
    assert isinstance(d, ast.TypeDecl)
    assert isinstance(d.type, ast.TName) and d.type.name == base


@pytest.mark.parametrize(
    "text,value",
    [('"low"', "low"), ("42", 42), ("-1", -1), ("1.5", 1.5), ("true", True), ("false", False)],
)
def test_type_literal(text: str, value: object) -> None:
    d = decl(f"type T = {text}")
    assert isinstance(d, ast.TypeDecl)
    assert isinstance(d.type, ast.TLiteral)
    assert d.type.value == value and type(d.type.value) is type(value)
    assert d.type.span.text == text


def test_type_union_of_literals() -> None:
    d = decl('type Severity = "low" | "medium" | "high"')
    assert isinstance(d, ast.TypeDecl)
    t = d.type
    assert isinstance(t, ast.TUnion)
    assert [o.value for o in t.options if isinstance(o, ast.TLiteral)] == ["low", "medium", "high"]
    assert len(t.options) == 3
    assert t.span.text == '"low" | "medium" | "high"'


def test_type_optional_and_arrays() -> None:
    d = decl("type T = int[]? | int?[] | string[][]")
    assert isinstance(d, ast.TypeDecl)
    a, b, c = d.type.options  # type: ignore[attr-defined]
    assert isinstance(a, ast.TOptional) and isinstance(a.inner, ast.TArray) and a.inner.item.name == "int"  # type: ignore[attr-defined]
    assert isinstance(b, ast.TArray) and isinstance(b.item, ast.TOptional) and b.item.inner.name == "int"  # type: ignore[attr-defined]
    assert isinstance(c, ast.TArray) and isinstance(c.item, ast.TArray) and c.item.item.name == "string"  # type: ignore[attr-defined]
    assert a.span.text == "int[]?"
    assert b.span.text == "int?[]"


def test_type_optional_name() -> None:
    d = decl("type T = Ticket?")
    assert isinstance(d, ast.TypeDecl)
    assert isinstance(d.type, ast.TOptional) and isinstance(d.type.inner, ast.TName)
    assert d.type.inner.name == "Ticket"


def test_type_parenthesised_union_array() -> None:
    d = decl("type T = (int | string)[]")
    assert isinstance(d, ast.TypeDecl)
    assert isinstance(d.type, ast.TArray)
    assert isinstance(d.type.item, ast.TUnion)
    assert [o.name for o in d.type.item.options] == ["int", "string"]  # type: ignore[attr-defined]


def test_type_closed_object_with_optional_field() -> None:
    d = decl("type Ticket = { id: string, title: string, body?: string }")
    assert isinstance(d, ast.TypeDecl)
    t = d.type
    assert isinstance(t, ast.TObject) and t.open is False
    assert [(f.name.name, f.optional) for f in t.fields] == [("id", False), ("title", False), ("body", True)]
    assert all(isinstance(f.type, ast.TName) and f.type.name == "string" for f in t.fields)
    assert t.fields[2].span.text == "body?: string"


def test_type_open_object() -> None:
    d = decl("type Meta = { id: string, ... }")
    assert isinstance(d, ast.TypeDecl)
    assert isinstance(d.type, ast.TObject) and d.type.open is True
    assert [f.name.name for f in d.type.fields] == ["id"]


def test_type_open_object_only_dots_and_trailing_comma() -> None:
    d = decl("type Any = { ..., }")
    assert isinstance(d, ast.TypeDecl)
    assert isinstance(d.type, ast.TObject) and d.type.open is True and d.type.fields == []


def test_type_empty_object() -> None:
    d = decl("type E = {}")
    assert isinstance(d, ast.TypeDecl)
    assert isinstance(d.type, ast.TObject) and d.type.fields == [] and d.type.open is False


def test_type_object_multiline_trailing_comma_and_reserved_field_names() -> None:
    d = decl('type T = {\n  type: string,\n  in?: int,\n  "any key": bool,\n}')
    assert isinstance(d, ast.TypeDecl)
    assert isinstance(d.type, ast.TObject)
    assert [(f.name.name, f.optional) for f in d.type.fields] == [("type", False), ("in", True), ("any key", False)]


def test_type_nested_object() -> None:
    d = decl("type T = { a: { b: int[] }[] }")
    assert isinstance(d, ast.TypeDecl)
    outer = d.type
    assert isinstance(outer, ast.TObject)
    a = outer.fields[0].type
    assert isinstance(a, ast.TArray) and isinstance(a.item, ast.TObject)
    assert a.item.fields[0].name.name == "b"


def test_type_schema() -> None:
    d = decl('type Raw = schema { type: "object", "$defs": {}, required: ["a"] }')
    assert isinstance(d, ast.TypeDecl)
    t = d.type
    assert isinstance(t, ast.TSchema)
    assert [e.key for e in t.body.entries] == ["type", "$defs", "required"]
    assert t.span.text == 'schema { type: "object", "$defs": {}, required: ["a"] }'


def test_type_constraint_on_string() -> None:
    d = decl('type Title = string(minLength: 1, maxLength: 80, pattern: "^[A-Z]")')
    assert isinstance(d, ast.TypeDecl)
    t = d.type
    assert isinstance(t, ast.TConstrained)
    assert isinstance(t.base, ast.TName) and t.base.name == "string"
    assert [a.name.name for a in t.args] == ["minLength", "maxLength", "pattern"]
    assert isinstance(t.args[0].value, ast.IntLit) and t.args[0].value.value == 1
    assert str_of(t.args[2].value) == "^[A-Z]"
    assert t.span.text == 'string(minLength: 1, maxLength: 80, pattern: "^[A-Z]")'


def test_type_constraint_on_array() -> None:
    d = decl("type Tags = int[](minItems: 1, uniqueItems: true,)")
    assert isinstance(d, ast.TypeDecl)
    t = d.type
    assert isinstance(t, ast.TConstrained)
    assert isinstance(t.base, ast.TArray) and t.base.item.name == "int"  # type: ignore[attr-defined]
    assert [a.name.name for a in t.args] == ["minItems", "uniqueItems"]
    assert isinstance(t.args[1].value, ast.BoolLit) and t.args[1].value.value is True


def test_type_constraint_negative_value_and_union_member() -> None:
    d = decl("type T = int(minimum: -5) | string(maxLength: 3)")
    assert isinstance(d, ast.TypeDecl)
    t = d.type
    assert isinstance(t, ast.TUnion)
    first = t.options[0]
    assert isinstance(first, ast.TConstrained)
    v = first.args[0].value
    assert isinstance(v, ast.Unary) and v.op == "-" and isinstance(v.operand, ast.IntLit) and v.operand.value == 5
    assert isinstance(t.options[1], ast.TConstrained)


def test_constrained_field_in_object() -> None:
    d = decl("type Ticket = { id: string, title: string(minLength: 1), body?: string }")
    assert isinstance(d, ast.TypeDecl)
    title = d.type.fields[1]  # type: ignore[attr-defined]
    assert isinstance(title.type, ast.TConstrained)
    assert title.type.args[0].name.name == "minLength"


def test_tool_with_requires_approval() -> None:
    d = decl("tool refund(order_id: string, amount: number) -> { ok: bool } requires approval")
    assert isinstance(d, ast.ToolDecl)
    assert d.name.name == "refund"
    assert [(p.name.name, p.type.name, p.optional) for p in d.params] == [  # type: ignore[attr-defined]
        ("order_id", "string", False), ("amount", "number", False),
    ]
    assert isinstance(d.returns, ast.TObject) and d.returns.fields[0].name.name == "ok"
    assert d.requires_approval is True
    assert d.span.text == "tool refund(order_id: string, amount: number) -> { ok: bool } requires approval"


def test_tool_without_approval_with_optional_param() -> None:
    d = decl("tool search_kb(query: string, limit?: int) -> string[]")
    assert isinstance(d, ast.ToolDecl)
    assert d.requires_approval is False
    assert [(p.name.name, p.optional) for p in d.params] == [("query", False), ("limit", True)]
    assert isinstance(d.returns, ast.TArray)
    assert d.params[1].span.text == "limit?: int"


def test_tool_requires_without_approval_is_an_error() -> None:
    _m, diags = parse_src("tool t(a: int) -> int requires")
    assert codes(diags) in (["F1006"], ["F1007"])


def test_agent_all_fields() -> None:
    text = '''agent triager {
  model: "openai/gpt-4o-mini"
  role: "support triage specialist"
  persona: "terse, precise"
  instructions: """
    Classify the ticket and summarise it in one sentence.
  """
  constraints: ["Never invent order numbers"]
  hints: ["Billing words usually mean severity high"]
  uncertainty: "If unsure, set needs_human to true."
  tools: [search_kb]
  output: Triage
  repair: 2
  retry: { on: ["agent-invocation"], attempts: 3, backoff: 1s }
  timeout: 30s
  temperature: 0.2
  script: [when("refund", {id: "T2"}), fail("agent-invocation", "boom"), slow(300ms, "x"), "plain"]
}'''
    d = decl(text)
    assert isinstance(d, ast.AgentDecl)
    assert d.name.name == "triager"
    names = [f.name.name for f in d.fields]
    assert names == ["model", "role", "persona", "instructions", "constraints", "hints", "uncertainty",
                     "tools", "output", "repair", "retry", "timeout", "temperature", "script"]
    by = {f.name.name: f.value for f in d.fields}
    assert str_of(by["model"]) == "openai/gpt-4o-mini"  # type: ignore[arg-type]
    assert str_of(by["instructions"]) == "Classify the ticket and summarise it in one sentence."  # type: ignore[arg-type]
    assert isinstance(by["output"], ast.TName) and by["output"].name == "Triage"
    assert isinstance(by["tools"], ast.ArrayLit) and name_of(by["tools"].items[0]) == "search_kb"
    assert isinstance(by["repair"], ast.IntLit) and by["repair"].value == 2
    retry = by["retry"]
    assert isinstance(retry, ast.ObjectLit) and [e.key for e in retry.entries] == ["on", "attempts", "backoff"]
    assert isinstance(retry.entries[2].value, ast.DurationLit) and retry.entries[2].value.ms == 1000
    assert isinstance(by["timeout"], ast.DurationLit) and by["timeout"].ms == 30_000
    assert isinstance(by["temperature"], ast.NumLit) and by["temperature"].value == 0.2
    script = by["script"]
    assert isinstance(script, ast.ArrayLit) and len(script.items) == 4
    assert [name_of(c.callee) for c in script.items[:3]] == ["when", "fail", "slow"]  # type: ignore[attr-defined]
    assert d.span.text == text


def test_agent_output_is_a_type_expression() -> None:
    d = decl('agent a { output: { id: string, tags?: string[] } | "none" }')
    assert isinstance(d, ast.AgentDecl)
    out = d.fields[0].value
    assert isinstance(out, ast.TUnion)
    assert isinstance(out.options[0], ast.TObject) and isinstance(out.options[1], ast.TLiteral)


def test_agent_members_comma_newline_or_both() -> None:
    d = decl('agent a {\n  model: "mock", role: "r",\n  persona: "p"\n\n  repair: 1,\n}')
    assert isinstance(d, ast.AgentDecl)
    assert [f.name.name for f in d.fields] == ["model", "role", "persona", "repair"]
    assert d.fields[1].span.text == 'role: "r"'


def test_agent_on_one_line_and_empty() -> None:
    d = decl('agent a { model: "mock", role: "r" }')
    assert isinstance(d, ast.AgentDecl) and len(d.fields) == 2
    e = decl("agent b {}")
    assert isinstance(e, ast.AgentDecl) and e.fields == []


def test_agent_fields_without_separator_are_an_error() -> None:
    _m, diags = parse_src('agent a { model: "mock" role: "r" }')
    assert codes(diags)[0] == "F1006"
    assert diags[0].span.text == "role"


def test_agent_fields_without_separator_is_one_diagnostic() -> None:
    module, diags = parse_src('agent a { model: "mock" role: "r" }\ntype Ok = int')
    assert codes(diags) == ["F1006"]
    assert module.decls[-1].name.name == "Ok"


def test_team() -> None:
    d = decl("team support { main: triager, members: [writer, reviewer] }")
    assert isinstance(d, ast.TeamDecl)
    assert d.name.name == "support"
    assert [f.name.name for f in d.fields] == ["main", "members"]
    assert name_of(d.fields[0].value) == "triager"  # type: ignore[arg-type]
    members = d.fields[1].value
    assert isinstance(members, ast.ArrayLit) and [name_of(m) for m in members.items] == ["writer", "reviewer"]


def test_team_multiline() -> None:
    d = decl("team t {\n  main: a\n  members: [\n    b,\n    c,\n  ]\n}")
    assert isinstance(d, ast.TeamDecl)
    assert [f.name.name for f in d.fields] == ["main", "members"]
    assert len(d.fields[1].value.items) == 2  # type: ignore[union-attr]


def test_workflow_with_params_optional_return_and_limits() -> None:
    text = """workflow triage_all(tickets: Ticket[], strict?: bool) -> Triage[] {
  limits { agent_runs: 40, duration: 2m, concurrency: 4, steps: 1000 }
  return results
}"""
    d = decl(text)
    assert isinstance(d, ast.WorkflowDecl)
    assert d.name.name == "triage_all"
    assert [(p.name.name, p.optional) for p in d.params] == [("tickets", False), ("strict", True)]
    assert isinstance(d.params[0].type, ast.TArray)
    assert isinstance(d.returns, ast.TArray) and d.returns.item.name == "Triage"  # type: ignore[attr-defined]
    limits, ret = d.body.body
    assert isinstance(limits, ast.Limits)
    assert [e.name.name for e in limits.entries] == ["agent_runs", "duration", "concurrency", "steps"]
    assert isinstance(limits.entries[1].value, ast.DurationLit) and limits.entries[1].value.ms == 120_000
    assert isinstance(ret, ast.Return) and name_of(ret.value) == "results"  # type: ignore[arg-type]
    assert d.span.text == text
    assert d.body.span.text == text[text.index("{"):]


def test_workflow_without_params_or_return_type() -> None:
    d = decl("workflow main() {}")
    assert isinstance(d, ast.WorkflowDecl)
    assert d.params == [] and d.returns is None and d.body.body == []


def test_workflow_params_multiline_with_trailing_comma() -> None:
    d = decl("workflow w(\n  a: int,\n  b?: string,\n) -> int { return a }")
    assert isinstance(d, ast.WorkflowDecl)
    assert [(p.name.name, p.optional) for p in d.params] == [("a", False), ("b", True)]


def test_limits_multiline_and_at_top_level() -> None:
    module = parse_ok("limits {\n  agent_runs: 5\n  steps: 10,\n}\nprint 1")
    lim = module.statements[0]
    assert isinstance(lim, ast.Limits)
    assert [e.name.name for e in lim.entries] == ["agent_runs", "steps"]
    assert isinstance(module.statements[1], ast.Print)


def test_declarations_and_statements_are_separated() -> None:
    module = parse_ok('use "a.flow"\nlet x = 1\ntype T = int\nprint x\nworkflow w() {}\nw()')
    assert [type(d).__name__ for d in module.decls] == ["TypeDecl", "WorkflowDecl"]
    assert [type(s).__name__ for s in module.statements] == ["Let", "Print", "ExprStmt"]
    assert len(module.uses) == 1


# --- doc comments ---------------------------------------------------------------------


def test_doc_comment_attaches_to_the_declaration_below() -> None:
    module = parse_ok('## Classifies one support ticket.\n## Second line.\nagent triager { model: "mock" }')
    d = module.decls[0]
    assert d.doc == "Classifies one support ticket.\nSecond line."


@pytest.mark.parametrize(
    "item",
    ["type T = int", "tool t() -> int", 'agent a { model: "mock" }', "team s { main: a, members: [] }", "workflow w() {}"],
)
def test_doc_comment_on_every_declaration_kind(item: str) -> None:
    module = parse_ok(f"## The doc.\n{item}")
    assert module.decls[0].doc == "The doc."


def test_no_doc_without_comment_or_with_plain_comment() -> None:
    module = parse_ok("# plain\ntype A = int\ntype B = int")
    assert [d.doc for d in module.decls] == [None, None]


def test_doc_separated_by_a_blank_line_does_not_attach() -> None:
    module = parse_ok("## stray\n\ntype A = int")
    assert module.decls[0].doc is None


def test_doc_attaches_only_to_the_next_declaration() -> None:
    module = parse_ok("## for A\ntype A = int\ntype B = int")
    assert [d.doc for d in module.decls] == ["for A", None]


def test_trailing_double_hash_after_code_is_not_a_doc() -> None:
    module = parse_ok('let x = 1 ## about x\nagent a { model: "mock" }')
    assert module.decls[0].doc is None


# --- statements -----------------------------------------------------------------------


def test_let_and_let_with_type() -> None:
    a, b = stmts("let a = 1\nlet b: int[] = [1, 2,]")
    assert isinstance(a, ast.Let) and a.name.name == "a" and a.type is None and a.mutable is False
    assert isinstance(a.value, ast.IntLit) and a.value.value == 1
    assert isinstance(b, ast.Let) and isinstance(b.type, ast.TArray) and b.type.item.name == "int"  # type: ignore[attr-defined]
    assert isinstance(b.value, ast.ArrayLit) and len(b.value.items) == 2
    assert b.span.text == "let b: int[] = [1, 2,]"


def test_let_with_optional_type() -> None:
    s = stmt("let a: string? = null")
    assert isinstance(s, ast.Let) and isinstance(s.type, ast.TOptional) and isinstance(s.value, ast.NullLit)


def test_var_and_assign() -> None:
    v, asg = stmts("var c = 0\nc = c + 1")
    assert isinstance(v, ast.Let) and v.mutable is True and v.name.name == "c"
    assert isinstance(asg, ast.Assign) and asg.target.name == "c"
    assert isinstance(asg.value, ast.Binary) and asg.value.op == "+"
    assert asg.span.text == "c = c + 1"
    assert asg.target.span.text == "c"


def test_semicolons_separate_statements() -> None:
    body = stmts("var c = 0; c = 1; print c")
    assert [type(s).__name__ for s in body] == ["Let", "Assign", "Print"]


def test_if_else_if_else() -> None:
    s = stmt("if a > 1 { print a } else if a < 0 { log a } else { print 0 }")
    assert isinstance(s, ast.If)
    assert isinstance(s.cond, ast.Binary) and s.cond.op == ">"
    assert isinstance(s.then.body[0], ast.Print)
    inner = s.other
    assert isinstance(inner, ast.If)
    assert isinstance(inner.cond, ast.Binary) and inner.cond.op == "<"
    assert isinstance(inner.then.body[0], ast.Log)
    assert isinstance(inner.other, ast.Block) and isinstance(inner.other.body[0], ast.Print)
    assert inner.span.text == "if a < 0 { log a } else { print 0 }"


def test_if_without_else() -> None:
    s = stmt("if ok {\n  f()\n}")
    assert isinstance(s, ast.If) and s.other is None
    assert isinstance(s.then.body[0], ast.ExprStmt)


def test_else_on_the_next_line() -> None:
    s = stmt("if a {\n  x()\n}\nelse if b {\n  y()\n}\n# note\nelse {\n  z()\n}")
    assert isinstance(s, ast.If)
    assert isinstance(s.other, ast.If)
    assert isinstance(s.other.other, ast.Block)
    assert name_of(s.other.other.body[0].expr.callee) == "z"  # type: ignore[attr-defined]


def test_if_condition_brace_opens_the_body() -> None:
    s = stmt("if x { y }")
    assert isinstance(s, ast.If) and name_of(s.cond) == "x"
    assert isinstance(s.then.body[0], ast.ExprStmt) and name_of(s.then.body[0].expr) == "y"


def test_statement_after_if_is_not_else() -> None:
    body = stmts("if a { x() }\nprint 1")
    assert isinstance(body[0], ast.If) and body[0].other is None
    assert isinstance(body[1], ast.Print)


def test_for_in() -> None:
    s = stmt("for x in xs { break }")
    assert isinstance(s, ast.For)
    assert s.var.name == "x" and s.index is None and name_of(s.iterable) == "xs"
    assert isinstance(s.body.body[0], ast.Break)


def test_for_with_index() -> None:
    s = stmt("for x, i in range(3) { continue }")
    assert isinstance(s, ast.For)
    assert s.var.name == "x" and s.index is not None and s.index.name == "i"
    assert isinstance(s.iterable, ast.Call)
    assert isinstance(s.body.body[0], ast.Continue)


def test_while() -> None:
    s = stmt("while c < 3 {\n  c = c + 1\n}")
    assert isinstance(s, ast.While)
    assert isinstance(s.cond, ast.Binary) and s.cond.op == "<"
    assert isinstance(s.body.body[0], ast.Assign)


def test_break_and_continue_spans() -> None:
    s = stmt("while true { break; continue }")
    assert isinstance(s, ast.While)
    b, c = s.body.body
    assert isinstance(b, ast.Break) and b.span.text == "break"
    assert isinstance(c, ast.Continue) and c.span.text == "continue"


def test_stage() -> None:
    s = stmt('stage "classify" {\n  let r = f()\n}')
    assert isinstance(s, ast.Stage)
    assert str_of(s.name) == "classify"
    assert isinstance(s.body.body[0], ast.Let)


def test_pipeline_of_stages() -> None:
    s = stmt('pipeline "triage" {\n  stage "a" { f() }\n\n  stage "b" { g() }\n}')
    assert isinstance(s, ast.Pipeline)
    assert str_of(s.name) == "triage"
    assert [str_of(st.name) for st in s.stages] == ["a", "b"]


def test_pipeline_holds_only_stages() -> None:
    _m, diags = parse_src('workflow w() {\n  pipeline "p" {\n    print 1\n  }\n}')
    assert codes(diags)[0] == "F1006"
    assert diags[0].span.text == "print"


def test_pipeline_holds_only_stages_one_diagnostic() -> None:
    module, diags = parse_src('workflow w() {\n  pipeline "p" {\n    print 1\n  }\n  print 2\n}')
    assert codes(diags) == ["F1006"]
    assert module.statements == []
    w = module.decls[0]
    assert isinstance(w, ast.WorkflowDecl) and isinstance(w.body.body[-1], ast.Print)


@pytest.mark.parametrize("word,require", [("verify", False), ("require", True)])
def test_verify_require_with_and_without_message(word: str, require: bool) -> None:
    with_msg, without = stmts(f'{word} len(xs) == 2 : "two items"\n{word} ok')
    assert isinstance(with_msg, ast.Verify) and with_msg.require is require
    assert isinstance(with_msg.cond, ast.Binary) and with_msg.cond.op == "=="
    assert with_msg.message is not None and str_of(with_msg.message) == "two items"
    assert isinstance(without, ast.Verify) and without.require is require
    assert name_of(without.cond) == "ok" and without.message is None
    assert with_msg.span.text == f'{word} len(xs) == 2 : "two items"'


def test_verify_condition_with_ternary_needs_parentheses_free_message() -> None:
    s = stmt('verify a ? b : c : "m"')
    assert isinstance(s, ast.Verify)
    assert isinstance(s.cond, ast.Ternary)
    assert s.message is not None and str_of(s.message) == "m"


def test_emit_progress() -> None:
    s = stmt('emit progress { done: 1, total: 2, message: "x" }')
    assert isinstance(s, ast.Emit)
    assert s.kind.name == "progress"
    assert isinstance(s.value, ast.ObjectLit) and [e.key for e in s.value.entries] == ["done", "total", "message"]


def test_emit_other_kind_still_parses() -> None:
    s = stmt("emit status {}")
    assert isinstance(s, ast.Emit) and s.kind.name == "status"


def test_print_and_log() -> None:
    p, lg = stmts('print "a" + b\nlog ok ? "yes" : "no"')
    assert isinstance(p, ast.Print) and isinstance(p.value, ast.Binary)
    assert isinstance(lg, ast.Log) and isinstance(lg.value, ast.Ternary)


def test_publish() -> None:
    s = stmt('publish "report.md" "# Title\\n" + body')
    assert isinstance(s, ast.Publish)
    assert str_of(s.name) == "report.md"
    assert isinstance(s.value, ast.Binary) and s.value.op == "+"


def test_publish_name_is_a_primary_without_postfix() -> None:
    s = stmt("publish name [1, 2]")
    assert isinstance(s, ast.Publish)
    assert name_of(s.name) == "name"
    assert isinstance(s.value, ast.ArrayLit)


def test_return_with_and_without_value() -> None:
    body = stmts("if a { return }\nreturn x + 1")
    inner = body[0].then.body[0]  # type: ignore[attr-defined]
    assert isinstance(inner, ast.Return) and inner.value is None
    assert inner.span.text == "return"
    ret = body[1]
    assert isinstance(ret, ast.Return) and isinstance(ret.value, ast.Binary)


def test_bare_return_at_end_of_line() -> None:
    body = stmts("return\nprint 1")
    assert isinstance(body[0], ast.Return) and body[0].value is None
    assert isinstance(body[1], ast.Print)


def test_return_at_top_level_parses() -> None:
    # F1011 (return outside a workflow) is the checker's business, not a syntax error.
    module = parse_ok("return 1")
    ret = module.statements[0]
    assert isinstance(ret, ast.Return) and isinstance(ret.value, ast.IntLit)


def test_async_and_await() -> None:
    a, w = stmts('async frontend {\n  let review = reviewer("x")\n}\nawait frontend')
    assert isinstance(a, ast.Async) and a.name.name == "frontend"
    assert isinstance(a.body.body[0], ast.Let)
    assert isinstance(w, ast.Await) and w.name.name == "frontend"
    assert w.span.text == "await frontend"


def test_try_with_several_catches() -> None:
    s = stmt(
        'try {\n  f()\n} catch "process", "evaluation" as err {\n  print err.stage\n}'
        ' catch "assertion" {\n} catch as e2 {\n} catch {\n}'
    )
    assert isinstance(s, ast.Try)
    assert isinstance(s.body.body[0], ast.ExprStmt)
    c1, c2, c3, c4 = s.catches
    assert [str_of(c) for c in c1.codes] == ["process", "evaluation"]
    assert c1.binding is not None and c1.binding.name == "err"
    member = c1.body.body[0].value  # type: ignore[attr-defined]
    assert isinstance(member, ast.Member) and member.name.name == "stage"
    assert [str_of(c) for c in c2.codes] == ["assertion"] and c2.binding is None
    assert c3.codes == [] and c3.binding is not None and c3.binding.name == "e2"
    assert c4.codes == [] and c4.binding is None
    assert c2.span.text == 'catch "assertion" {\n}'


def test_catch_on_the_next_line() -> None:
    s = stmt('try { f() }\ncatch "process" as e { }\n\ncatch { }')
    assert isinstance(s, ast.Try) and len(s.catches) == 2


def test_try_without_catch_is_an_error() -> None:
    _m, diags = parse_src("workflow w() {\n  try { f() }\n  print 1\n}")
    assert codes(diags) == ["F1006"]


def test_expression_statements() -> None:
    body = stmts("f(a)\nsupport.main(\"x\")\n1 + 2")
    assert [type(s).__name__ for s in body] == ["ExprStmt", "ExprStmt", "ExprStmt"]
    assert isinstance(body[1].expr, ast.Call) and isinstance(body[1].expr.callee, ast.Member)  # type: ignore[attr-defined]
    assert body[2].span.text == "1 + 2"


# --- expressions: precedence and associativity ---------------------------------------


def test_precedence_chain() -> None:
    e = expr("a or b and not c == d + e * -f")
    assert isinstance(e, ast.Binary) and e.op == "or" and name_of(e.left) == "a"
    r = e.right
    assert isinstance(r, ast.Binary) and r.op == "and" and name_of(r.left) == "b"
    n = r.right
    assert isinstance(n, ast.Unary) and n.op == "not"
    eq = n.operand
    assert isinstance(eq, ast.Binary) and eq.op == "==" and name_of(eq.left) == "c"
    add = eq.right
    assert isinstance(add, ast.Binary) and add.op == "+" and name_of(add.left) == "d"
    mul = add.right
    assert isinstance(mul, ast.Binary) and mul.op == "*" and name_of(mul.left) == "e"
    neg = mul.right
    assert isinstance(neg, ast.Unary) and neg.op == "-" and name_of(neg.operand) == "f"


def test_binary_op_span() -> None:
    e = expr("a  +  b")
    assert isinstance(e, ast.Binary) and e.op_span.text == "+"
    assert e.span.text == "a  +  b"


@pytest.mark.parametrize("src,op", [("a - b - c", "-"), ("a / b % c", "%"), ("a or b or c", "or"), ("a and b and c", "and")])
def test_left_associative(src: str, op: str) -> None:
    e = expr(src)
    assert isinstance(e, ast.Binary) and e.op == op
    assert isinstance(e.left, ast.Binary) and name_of(e.right) == "c"
    assert name_of(e.left.left) == "a" and name_of(e.left.right) == "b"


def test_coalesce_is_right_associative() -> None:
    e = expr("a ?? b ?? c")
    assert isinstance(e, ast.Binary) and e.op == "??"
    assert name_of(e.left) == "a"
    assert isinstance(e.right, ast.Binary) and e.right.op == "??"
    assert name_of(e.right.left) == "b" and name_of(e.right.right) == "c"


def test_ternary_is_right_associative() -> None:
    e = expr("a ? b : c ? d : e")
    assert isinstance(e, ast.Ternary)
    assert name_of(e.cond) == "a" and name_of(e.then) == "b"
    assert isinstance(e.other, ast.Ternary)
    assert [name_of(e.other.cond), name_of(e.other.then), name_of(e.other.other)] == ["c", "d", "e"]


def test_ternary_nested_in_then_branch() -> None:
    e = expr("a ? b ? c : d : e")
    assert isinstance(e, ast.Ternary) and isinstance(e.then, ast.Ternary) and name_of(e.other) == "e"


def test_ternary_binds_looser_than_coalesce_and_or() -> None:
    e = expr("a ?? b ? c or d : e ?? f")
    assert isinstance(e, ast.Ternary)
    assert isinstance(e.cond, ast.Binary) and e.cond.op == "??"
    assert isinstance(e.then, ast.Binary) and e.then.op == "or"
    assert isinstance(e.other, ast.Binary) and e.other.op == "??"


def test_coalesce_binds_looser_than_or() -> None:
    e = expr("a or b ?? c")
    assert isinstance(e, ast.Binary) and e.op == "??"
    assert isinstance(e.left, ast.Binary) and e.left.op == "or"


def test_not_binds_looser_than_comparison() -> None:
    e = expr("not a == b")
    assert isinstance(e, ast.Unary) and e.op == "not"
    assert isinstance(e.operand, ast.Binary) and e.operand.op == "=="


def test_double_not() -> None:
    e = expr("not not a")
    assert isinstance(e, ast.Unary) and isinstance(e.operand, ast.Unary) and name_of(e.operand.operand) == "a"


@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">=", "in"])
def test_comparison_operators(op: str) -> None:
    e = expr(f"a + 1 {op} b * 2")
    assert isinstance(e, ast.Binary) and e.op == op
    assert isinstance(e.left, ast.Binary) and e.left.op == "+"
    assert isinstance(e.right, ast.Binary) and e.right.op == "*"


def test_unary_minus_binds_tighter_than_multiplication_and_looser_than_postfix() -> None:
    e = expr("-2 * -a.b")
    assert isinstance(e, ast.Binary) and e.op == "*"
    assert isinstance(e.left, ast.Unary) and isinstance(e.left.operand, ast.IntLit)
    assert isinstance(e.right, ast.Unary) and isinstance(e.right.operand, ast.Member)


def test_parentheses_override_precedence() -> None:
    e = expr("(a + b) * c")
    assert isinstance(e, ast.Binary) and e.op == "*"
    assert isinstance(e.left, ast.Binary) and e.left.op == "+"


def test_parenthesised_expression_over_lines() -> None:
    e = expr("(a\n  + b\n)")
    assert isinstance(e, ast.Binary) and e.op == "+"


# --- expressions: literals -------------------------------------------------------------


def test_scalar_literals() -> None:
    arr = expr('[42, 3.14, 1e-3, 30s, "s", true, false, null]')
    assert isinstance(arr, ast.ArrayLit)
    i, n, n2, d, s, t, f, nl = arr.items
    assert isinstance(i, ast.IntLit) and i.value == 42
    assert isinstance(n, ast.NumLit) and n.value == 3.14
    assert isinstance(n2, ast.NumLit) and n2.value == 0.001
    assert isinstance(d, ast.DurationLit) and d.ms == 30_000
    assert isinstance(s, ast.StrLit) and s.parts == ["s"]
    assert isinstance(t, ast.BoolLit) and t.value is True
    assert isinstance(f, ast.BoolLit) and f.value is False
    assert isinstance(nl, ast.NullLit)


def test_negative_number_is_negation() -> None:
    e = expr("-3")
    assert isinstance(e, ast.Unary) and e.op == "-"
    assert isinstance(e.operand, ast.IntLit) and e.operand.value == 3


def test_array_literals() -> None:
    assert expr("[]").items == []  # type: ignore[attr-defined]
    a = expr("[\n  1,\n  2,\n]")
    assert isinstance(a, ast.ArrayLit) and [x.value for x in a.items] == [1, 2]  # type: ignore[attr-defined]


def test_object_literal_keys() -> None:
    o = expr('{a: 1, "any key": 2, type: 3, if: 4, null: 5}')
    assert isinstance(o, ast.ObjectLit)
    assert [e.key for e in o.entries] == ["a", "any key", "type", "if", "null"]
    assert o.entries[1].key_span.text == '"any key"'
    assert o.entries[0].span.text == "a: 1"


def test_object_literal_multiline_trailing_comma() -> None:
    o = expr("{\n  a: 1,\n  b: [\n    2,\n  ],\n}")
    assert isinstance(o, ast.ObjectLit)
    assert [e.key for e in o.entries] == ["a", "b"]


def test_empty_object_literal() -> None:
    o = expr("{}")
    assert isinstance(o, ast.ObjectLit) and o.entries == []


def test_object_shorthand_is_an_error() -> None:
    _m, diags = parse_src("let o = {a}")
    assert codes(diags)[0] == "F1006"
    assert diags[0].span.text == "}"
    assert diags[0].hints and "{a: a}" in diags[0].hints[0]


def test_string_interpolation_parts_are_expressions_with_exact_spans() -> None:
    text = 'let s = "Ticket ${t.id}: ${len(xs) + 1}"'
    module = parse_ok(text)
    s = module.statements[0].value  # type: ignore[attr-defined]
    assert isinstance(s, ast.StrLit) and s.constant is None
    assert s.parts[0] == "Ticket "
    first = s.parts[1]
    assert isinstance(first, ast.Member) and first.span.text == "t.id"
    assert s.parts[2] == ": "
    second = s.parts[3]
    assert isinstance(second, ast.Binary) and second.op == "+" and second.span.text == "len(xs) + 1"


def test_interpolation_with_nested_string_and_object() -> None:
    s = expr('"a ${ {k: "}"}.k } b ${ f("x${y}") }"')
    assert isinstance(s, ast.StrLit)
    inner = [p for p in s.parts if not isinstance(p, str)]
    assert isinstance(inner[0], ast.Member) and isinstance(inner[0].obj, ast.ObjectLit)
    assert str_of(inner[0].obj.entries[0].value) == "}"
    call = inner[1]
    assert isinstance(call, ast.Call)
    nested = call.args[0].value
    assert isinstance(nested, ast.StrLit) and nested.parts[0] == "x" and name_of(nested.parts[1]) == "y"  # type: ignore[arg-type]


def test_interpolation_inside_triple_string() -> None:
    s = expr('"""\n  Hello ${name}\n  """')
    assert isinstance(s, ast.StrLit)
    assert s.parts[0] == "Hello "
    assert isinstance(s.parts[1], ast.Name) and s.parts[1].span.text == "name"


@pytest.mark.parametrize(
    "inner,code,bad",
    [('f("\\q")', "F1009", "\\q"), ("5x", "F1005", "5x"), ("a @ b", "F1001", "@"), ("1.2.3", "F1004", "1.2.3")],
)
def test_lexical_error_inside_interpolation_reported_once_with_exact_span(inner: str, code: str, bad: str) -> None:
    text = 'let s = "${ ' + inner + ' }"\nlet t = 1'
    module, diags = parse_src(text)
    assert codes(diags) == [code]
    assert diags[0].span.text == bad
    assert diags[0].span.start == text.index(bad)
    assert [st.name.name for st in module.statements] == ["s", "t"]  # type: ignore[attr-defined]


def test_invalid_escape_in_nested_string_of_triple_string() -> None:
    text = 'let s = """\n  ${ f("\\q") }\n  """'
    _module, diags = parse_src(text)
    assert codes(diags) == ["F1009"]
    assert diags[0].span.start == text.index("\\q")
    assert (diags[0].span.start_pos.line, diags[0].span.start_pos.column) == (2, 9)


def test_interpolated_string_as_object_key_is_an_error() -> None:
    _module, diags = parse_src('let o = {"${a}": 1}')
    assert codes(diags)[0] == "F1006"
    assert diags[0].span.text == '"${a}"'


def test_empty_interpolation_is_an_error() -> None:
    _m, diags = parse_src('let s = "${}"')
    assert codes(diags) == ["F1006"]


def test_bad_interpolation_gives_one_diagnostic() -> None:
    module, diags = parse_src('let s = "${a +}"\nlet t = 1')
    assert len(diags) == 1
    assert diags[0].span.start_pos.line == 1
    assert [s.name.name for s in module.statements] == ["s", "t"]  # type: ignore[attr-defined]


def test_incomplete_interpolation_is_f1006() -> None:
    _m, diags = parse_src('let s = "${a +}"\nlet t = 1')
    assert codes(diags) == ["F1006"]


# --- expressions: postfix ---------------------------------------------------------------


def test_postfix_chain() -> None:
    e = expr("a.b?.c[0][1:2][*].name.{x, y}(1, k: 2)")
    assert isinstance(e, ast.Call)
    assert [a.name.name if a.name else None for a in e.args] == [None, "k"]
    pick = e.callee
    assert isinstance(pick, ast.Pick) and [f.name for f in pick.fields] == ["x", "y"]
    proj = pick.obj
    assert isinstance(proj, ast.Project) and [p.name for p in proj.path] == ["name"]
    sl = proj.obj
    assert isinstance(sl, ast.Slice)
    assert isinstance(sl.lower, ast.IntLit) and sl.lower.value == 1
    assert isinstance(sl.upper, ast.IntLit) and sl.upper.value == 2
    idx = sl.obj
    assert isinstance(idx, ast.Index) and isinstance(idx.index, ast.IntLit) and idx.index.value == 0
    opt = idx.obj
    assert isinstance(opt, ast.Member) and opt.name.name == "c" and opt.optional is True
    plain = opt.obj
    assert isinstance(plain, ast.Member) and plain.name.name == "b" and plain.optional is False
    assert name_of(plain.obj) == "a"
    assert e.span.text == "a.b?.c[0][1:2][*].name.{x, y}(1, k: 2)"
    assert proj.span.text == "a.b?.c[0][1:2][*].name"
    assert sl.span.text == "a.b?.c[0][1:2]"


@pytest.mark.parametrize("src,lower,upper", [("xs[:2]", None, 2), ("xs[1:]", 1, None), ("xs[:]", None, None)])
def test_slices(src: str, lower: int | None, upper: int | None) -> None:
    e = expr(src)
    assert isinstance(e, ast.Slice)
    assert (e.lower.value if e.lower else None) == lower  # type: ignore[attr-defined]
    assert (e.upper.value if e.upper else None) == upper  # type: ignore[attr-defined]


def test_negative_index_and_string_index() -> None:
    a = expr("xs[-1]")
    assert isinstance(a, ast.Index) and isinstance(a.index, ast.Unary)
    b = expr('obj["key"]')
    assert isinstance(b, ast.Index) and str_of(b.index) == "key"


def test_projection_path_and_bare_projection() -> None:
    e = expr("xs[*].a.b")
    assert isinstance(e, ast.Project) and [p.name for p in e.path] == ["a", "b"]
    bare = expr("xs[*]")
    assert isinstance(bare, ast.Project) and bare.path == []


def test_projection_followed_by_pick() -> None:
    e = expr("xs[*].{id, title}")
    assert isinstance(e, ast.Pick)
    assert isinstance(e.obj, ast.Project) and e.obj.path == []


def test_pick_with_reserved_words_multiline_trailing_comma() -> None:
    e = expr("o.{\n  type,\n  id,\n}")
    assert isinstance(e, ast.Pick) and [f.name for f in e.fields] == ["type", "id"]


def test_reserved_words_after_dot_and_optional_dot() -> None:
    e = expr("err.stage")
    assert isinstance(e, ast.Member) and e.name.name == "stage" and name_of(e.obj) == "err"
    e2 = expr("a?.type.in")
    assert isinstance(e2, ast.Member) and e2.name.name == "in"
    assert isinstance(e2.obj, ast.Member) and e2.obj.name.name == "type" and e2.obj.optional is True


def test_team_member_call() -> None:
    e = expr('support.main("prompt")')
    assert isinstance(e, ast.Call) and isinstance(e.callee, ast.Member)
    assert e.callee.name.name == "main"


def test_call_args_positional_then_named() -> None:
    e = expr('triager("p", context: { ticket: t }, label: "classify")')
    assert isinstance(e, ast.Call) and name_of(e.callee) == "triager"
    assert [a.name.name if a.name else None for a in e.args] == [None, "context", "label"]
    assert isinstance(e.args[1].value, ast.ObjectLit)
    assert e.args[1].span.text == "context: { ticket: t }"


def test_named_argument_output_is_a_type() -> None:
    e = expr('f("p", output: { a: int, b?: string[] }, tools: [x])')
    assert isinstance(e, ast.Call)
    out = e.args[1].value
    assert isinstance(out, ast.TypeArg)
    assert isinstance(out.type, ast.TObject) and [f.name.name for f in out.type.fields] == ["a", "b"]
    assert out.span.text == "{ a: int, b?: string[] }"
    assert isinstance(e.args[2].value, ast.ArrayLit)


def test_named_argument_output_union_literal_type() -> None:
    e = expr('f("p", output: "yes" | "no")')
    out = e.args[1].value  # type: ignore[attr-defined]
    assert isinstance(out, ast.TypeArg) and isinstance(out.type, ast.TUnion)


def test_named_argument_with_reserved_name() -> None:
    e = expr("f(type: 1, in: 2)")
    assert isinstance(e, ast.Call)
    assert [a.name.name for a in e.args if a.name] == ["type", "in"]


def test_call_multiline_trailing_comma() -> None:
    e = expr("f(\n  1,\n  k: 2,\n)")
    assert isinstance(e, ast.Call) and len(e.args) == 2


def test_empty_call() -> None:
    e = expr("now()")
    assert isinstance(e, ast.Call) and e.args == []


def test_postfix_does_not_continue_on_the_next_line_outside_brackets() -> None:
    body = stmts("let a = x\n(y)")
    assert len(body) == 2
    assert name_of(body[0].value) == "x"  # type: ignore[attr-defined]


# --- expressions: lambdas ----------------------------------------------------------------


def test_lambda_one_param() -> None:
    e = expr("map(xs, x => x + 1)")
    lam = e.args[1].value  # type: ignore[attr-defined]
    assert isinstance(lam, ast.Lambda) and [p.name for p in lam.params] == ["x"]
    assert isinstance(lam.body, ast.Binary) and lam.body.op == "+"
    assert lam.span.text == "x => x + 1"


def test_lambda_two_params() -> None:
    lam = expr("map(xs, (x, i) => x * i)").args[1].value  # type: ignore[attr-defined]
    assert isinstance(lam, ast.Lambda) and [p.name for p in lam.params] == ["x", "i"]
    assert isinstance(lam.body, ast.Binary)


def test_lambda_no_params() -> None:
    lam = expr("f(() => 1)").args[0].value  # type: ignore[attr-defined]
    assert isinstance(lam, ast.Lambda) and lam.params == []


def test_lambda_block_body() -> None:
    lam = expr("map(xs, x => {\n  let y = x + 1; return y\n})").args[1].value  # type: ignore[attr-defined]
    assert isinstance(lam, ast.Lambda)
    assert isinstance(lam.body, ast.Block)
    assert [type(s).__name__ for s in lam.body.body] == ["Let", "Return"]


def test_lambda_object_body_in_parentheses() -> None:
    lam = expr("map(xs, x => ({a: 1}))").args[1].value  # type: ignore[attr-defined]
    assert isinstance(lam, ast.Lambda)
    assert isinstance(lam.body, ast.ObjectLit) and lam.body.entries[0].key == "a"


def test_lambda_body_ends_at_comma() -> None:
    e = expr("parallelMap(ts, t => f(t), concurrency: 8)")
    assert isinstance(e, ast.Call) and len(e.args) == 3
    assert e.args[2].name is not None and e.args[2].name.name == "concurrency"


def test_parenthesised_name_is_not_a_lambda() -> None:
    e = expr("(x) + 1")
    assert isinstance(e, ast.Binary) and name_of(e.left) == "x"


def test_lambda_params_trailing_comma() -> None:
    lam = expr("map(xs, (x, i,) => x)").args[1].value  # type: ignore[attr-defined]
    assert isinstance(lam, ast.Lambda) and [p.name for p in lam.params] == ["x", "i"]


# --- expressions: parallel, operator interaction, run, expect -----------------------------


def test_parallel_comma_separated() -> None:
    e = expr('parallel { a: f("x"), b: g("y") }')
    assert isinstance(e, ast.Parallel)
    assert [b.name.name for b in e.branches] == ["a", "b"]
    assert [name_of(b.value.callee) for b in e.branches] == ["f", "g"]  # type: ignore[attr-defined]
    assert e.keyword_span.text == "parallel"
    assert e.branches[0].span.text == 'a: f("x")'


def test_parallel_newline_separated_trailing_comma() -> None:
    e = expr('parallel {\n  style: reviewer("s ${d}")\n  facts: checker(\n    "f",\n  ),\n}')
    assert isinstance(e, ast.Parallel)
    assert [b.name.name for b in e.branches] == ["style", "facts"]


def test_approve_with_details() -> None:
    e = expr('approve "Send ${len(drafts)} emails?" details { drafts: drafts }')
    assert isinstance(e, ast.Approve)
    assert isinstance(e.question, ast.StrLit)
    assert isinstance(e.details, ast.ObjectLit) and e.details.entries[0].key == "drafts"


def test_approve_without_details_and_ending_at_comma() -> None:
    e = expr('f(approve "x", 1)')
    assert isinstance(e, ast.Call)
    a = e.args[0].value
    assert isinstance(a, ast.Approve) and a.details is None
    assert isinstance(e.args[1].value, ast.IntLit)


def test_approve_question_is_a_full_ternary() -> None:
    e = expr('approve a ? "x" : "y" details d ?? {}')
    assert isinstance(e, ast.Approve)
    assert isinstance(e.question, ast.Ternary)
    assert isinstance(e.details, ast.Binary) and e.details.op == "??"


def test_ask_with_and_without_choice() -> None:
    plain = expr('ask "Anything?"')
    assert isinstance(plain, ast.Ask) and plain.choice is None
    c = expr('ask "Which draft?" choice ["A", "B"]')
    assert isinstance(c, ast.Ask)
    assert isinstance(c.choice, ast.ArrayLit) and [str_of(x) for x in c.choice.items] == ["A", "B"]


def test_ask_inside_object_ends_at_comma() -> None:
    o = expr('{a: ask "q" choice ["A"], b: 2}')
    assert isinstance(o, ast.ObjectLit) and [e.key for e in o.entries] == ["a", "b"]
    assert isinstance(o.entries[0].value, ast.Ask)


def test_contextual_words_are_plain_names_elsewhere() -> None:
    body = stmts(
        "let details = 1\nlet choice = details + 1\nlet stdin = 2\nlet timeout = 3\nlet requires = 4\nlet approval = 5"
    )
    assert [s.name.name for s in body] == ["details", "choice", "stdin", "timeout", "requires", "approval"]  # type: ignore[attr-defined]
    assert name_of(body[1].value.left) == "details"  # type: ignore[attr-defined]


def test_run_with_clauses() -> None:
    e = expr('run "git" ["status"] timeout 10s stdin "x"')
    assert isinstance(e, ast.Run)
    assert str_of(e.executable) == "git"
    assert isinstance(e.arguments, ast.ArrayLit) and str_of(e.arguments.items[0]) == "status"
    assert isinstance(e.timeout, ast.DurationLit) and e.timeout.ms == 10_000
    assert e.stdin is not None and str_of(e.stdin) == "x"
    assert e.span.text == 'run "git" ["status"] timeout 10s stdin "x"'


def test_run_clauses_in_other_order_and_triple_stdin() -> None:
    e = expr('run "python3" ["-", name] stdin """\n  import sys\n""" timeout t')
    assert isinstance(e, ast.Run)
    assert e.stdin is not None and str_of(e.stdin) == "import sys"
    assert name_of(e.timeout) == "t"  # type: ignore[arg-type]


def test_run_without_clauses_and_names_as_operands() -> None:
    e = expr("run exe args")
    assert isinstance(e, ast.Run)
    assert name_of(e.executable) == "exe" and name_of(e.arguments) == "args"
    assert e.stdin is None and e.timeout is None


def test_run_clause_twice_is_an_error() -> None:
    _m, diags = parse_src('let r = run "a" [] timeout 1s timeout 2s')
    assert codes(diags) == ["F1006"]


def test_expect_on_the_same_line() -> None:
    s = stmt('let t = triager("x", context: {t: 1}) expect it.id == 1 : "m" expect it.ok')
    assert isinstance(s, ast.Let)
    e = s.value
    assert isinstance(e, ast.Expect)
    assert isinstance(e.call, ast.Call) and name_of(e.call.callee) == "triager"
    c1, c2 = e.clauses
    assert isinstance(c1.cond, ast.Binary) and isinstance(c1.cond.left, ast.Member)
    assert isinstance(c1.cond.left.obj, ast.It)
    assert c1.message is not None and str_of(c1.message) == "m"
    assert isinstance(c2.cond, ast.Member) and c2.message is None
    assert c1.span.text == 'expect it.id == 1 : "m"'


def test_expect_on_the_next_lines_continues_the_statement() -> None:
    body = stmts('let u = triager("x")\n  # comment\n  expect it.id == 1 : "m"\n\n  expect it.ok\nprint u')
    assert len(body) == 2
    e = body[0].value  # type: ignore[attr-defined]
    assert isinstance(e, ast.Expect) and len(e.clauses) == 2
    assert isinstance(body[1], ast.Print)
    assert e.span.text == 'triager("x")\n  # comment\n  expect it.id == 1 : "m"\n\n  expect it.ok'


def test_expect_on_expression_statement_and_return() -> None:
    body = stmts('writer("x")\n  expect len(it) > 0\nreturn writer("y") expect it != ""')
    assert isinstance(body[0], ast.ExprStmt) and isinstance(body[0].expr, ast.Expect)
    assert isinstance(body[1], ast.Return) and isinstance(body[1].value, ast.Expect)


def test_expect_inside_lambda_body() -> None:
    e = expr('parallelMap(ts, t => triager("x")\n    expect it.id == t.id : "echo")')
    lam = e.args[1].value  # type: ignore[attr-defined]
    assert isinstance(lam, ast.Lambda) and isinstance(lam.body, ast.Expect)
    assert lam.body.clauses[0].message is not None


def test_assign_with_expect() -> None:
    body = stmts('var v = ""\nv = w("x")\n  expect it != ""')
    assert isinstance(body[1], ast.Assign) and isinstance(body[1].value, ast.Expect)


# --- the spec's complete example ----------------------------------------------------------


def _complete_example() -> str:
    text = SPEC.read_text(encoding="utf-8")
    m = re.search(r"## 7\. A complete example\n\n```\n(.*?)```", text, re.S)
    assert m is not None
    return m.group(1)


def test_complete_example_parses() -> None:
    module = parse_ok(_complete_example())
    assert [type(d).__name__ for d in module.decls] == ["TypeDecl", "TypeDecl", "TypeDecl", "AgentDecl", "WorkflowDecl"]
    assert [type(s).__name__ for s in module.statements] == ["ExprStmt"]
    wf = module.decls[4]
    assert isinstance(wf, ast.WorkflowDecl)
    assert [type(s).__name__ for s in wf.body.body] == ["Limits", "Pipeline", "If", "Return"]
    pipeline = wf.body.body[1]
    assert isinstance(pipeline, ast.Pipeline) and [str_of(s.name) for s in pipeline.stages] == ["classify", "check"]
    let = pipeline.stages[0].body.body[0]
    assert isinstance(let, ast.Let)
    lam = let.value.args[1].value  # type: ignore[attr-defined]
    assert isinstance(lam, ast.Lambda) and isinstance(lam.body, ast.Expect)


# --- spans ----------------------------------------------------------------------------------

SPAN_PROGRAM = '''use "lib.flow"
type V = Foo? | 42 | -1 | { a: (int | string)[], b?: int(minimum: 0), ... }
tool refund(order_id: string) -> { ok: bool } requires approval
agent A { model: "scripted", output: { a: int }
  tools: [s] }
team support { main: A, members: [B] }
workflow w(a: int, b?: bool) -> int {
  limits { agent_runs: 40, duration: 2m }
  let xs: int[] = [1, 2,]
  var c = 0; c = c + 1
  if a > 1 { print a } else if a < 0 { log a } else { print 0 }
  for x, i in xs { break }
  while c < 3 { continue }
  stage "s" { f() }
  pipeline "p" { stage "q" { g() } }
  verify a == 1 : "m"
  require a
  emit progress { done: 1 }
  publish "out.txt" a + 1
  async t { let r = f() }
  await t
  try { f() } catch "process" as err { print err.stage } catch { log 1 }
  let r = run "git" ["status"] timeout 10s stdin "x"
  let q = ask "q" choice ["A", "B"]
  let y = approve "q" details {d: 1}
  let z = o.b?.c[0][1:2][*].name.{x, y}(1, k: 2, output: string[])
  let l = map(xs, (x, i) => { return x })
  let pp = parallel { a: f("x"), b: g("y") }
  let t2 = A("x") expect it.ok : "m"
  let nn = -x ?? not y ? 1 : 2
  f(a)
  return a
}
'''


def _span_module() -> ast.Module:
    return parse_ok(SPAN_PROGRAM)


def test_every_node_span_is_trimmed_and_inside_its_parent_except_known_bugs() -> None:
    module = _span_module()
    problems = []
    for node, parent in walk_with_parent(module):
        if isinstance(node, ast.Module):
            continue
        text = node.span.text
        if not text or text != text.strip():
            problems.append(("untrimmed", type(node).__name__, text))
        inside = parent is None or isinstance(parent, ast.Module) or (
            parent.span.start <= node.span.start and node.span.end <= parent.span.end
        )
        if not inside:
            problems.append(("outside parent", type(node).__name__, text, type(parent).__name__))
    assert problems == []


def test_print_log_return_spans_cover_their_value() -> None:
    body = stmts("print a + 1\nlog b\nreturn c ?? 0")
    assert [s.span.text for s in body] == ["print a + 1", "log b", "return c ?? 0"]


def test_every_node_span_is_inside_its_parent() -> None:
    module = _span_module()
    bad = [
        (type(n).__name__, n.span.text, type(p).__name__)
        for n, p in walk_with_parent(module)
        if p is not None and not isinstance(p, ast.Module)
        and not (p.span.start <= n.span.start and n.span.end <= p.span.end)
    ]
    assert bad == []


@pytest.mark.parametrize(
    "cls,text",
    [
        (ast.Use, 'use "lib.flow"'),
        (ast.TypeDecl, 'type V = Foo? | 42 | -1 | { a: (int | string)[], b?: int(minimum: 0), ... }'),
        (ast.TUnion, 'Foo? | 42 | -1 | { a: (int | string)[], b?: int(minimum: 0), ... }'),
        (ast.TOptional, "Foo?"),
        (ast.TLiteral, "-1"),
        (ast.TObject, "{ a: (int | string)[], b?: int(minimum: 0), ... }"),
        (ast.TUnion, "int | string"),
        (ast.TField, "b?: int(minimum: 0)"),
        (ast.TConstrained, "int(minimum: 0)"),
        (ast.NamedValue, "minimum: 0"),
        (ast.ToolDecl, "tool refund(order_id: string) -> { ok: bool } requires approval"),
        (ast.Param, "order_id: string"),
        (ast.AgentDecl, 'agent A { model: "scripted", output: { a: int }\n  tools: [s] }'),
        (ast.AgentField, "output: { a: int }"),
        (ast.AgentField, "tools: [s]"),
        (ast.TeamDecl, "team support { main: A, members: [B] }"),
        (ast.Limits, "limits { agent_runs: 40, duration: 2m }"),
        (ast.NamedValue, "duration: 2m"),
        (ast.Let, "let xs: int[] = [1, 2,]"),
        (ast.ArrayLit, "[1, 2,]"),
        (ast.Let, "var c = 0"),
        (ast.Assign, "c = c + 1"),
        (ast.If, "if a > 1 { print a } else if a < 0 { log a } else { print 0 }"),
        (ast.If, "if a < 0 { log a } else { print 0 }"),
        (ast.Block, "{ print 0 }"),
        (ast.For, "for x, i in xs { break }"),
        (ast.While, "while c < 3 { continue }"),
        (ast.Stage, 'stage "s" { f() }'),
        (ast.Pipeline, 'pipeline "p" { stage "q" { g() } }'),
        (ast.Verify, 'verify a == 1 : "m"'),
        (ast.Verify, "require a"),
        (ast.Emit, "emit progress { done: 1 }"),
        (ast.Publish, 'publish "out.txt" a + 1'),
        (ast.StrLit, '"out.txt"'),
        (ast.Async, "async t { let r = f() }"),
        (ast.Await, "await t"),
        (ast.Try, 'try { f() } catch "process" as err { print err.stage } catch { log 1 }'),
        (ast.Catch, 'catch "process" as err { print err.stage }'),
        (ast.Catch, "catch { log 1 }"),
        (ast.Member, "err.stage"),
        (ast.Run, 'run "git" ["status"] timeout 10s stdin "x"'),
        (ast.Ask, 'ask "q" choice ["A", "B"]'),
        (ast.Approve, 'approve "q" details {d: 1}'),
        (ast.ObjectLit, "{d: 1}"),
        (ast.ObjectEntry, "d: 1"),
        (ast.Pick, "o.b?.c[0][1:2][*].name.{x, y}"),
        (ast.Project, "o.b?.c[0][1:2][*].name"),
        (ast.Slice, "o.b?.c[0][1:2]"),
        (ast.Index, "o.b?.c[0]"),
        (ast.Member, "o.b?.c"),
        (ast.Call, "o.b?.c[0][1:2][*].name.{x, y}(1, k: 2, output: string[])"),
        (ast.Arg, "k: 2"),
        (ast.Arg, "output: string[]"),
        (ast.TypeArg, "string[]"),
        (ast.Lambda, "(x, i) => { return x }"),
        (ast.Block, "{ return x }"),
        (ast.Parallel, 'parallel { a: f("x"), b: g("y") }'),
        (ast.ParallelBranch, 'b: g("y")'),
        (ast.Expect, 'A("x") expect it.ok : "m"'),
        (ast.ExpectClause, 'expect it.ok : "m"'),
        (ast.Member, "it.ok"),
        (ast.Ternary, "-x ?? not y ? 1 : 2"),
        (ast.Binary, "-x ?? not y"),
        (ast.Unary, "not y"),
        (ast.Binary, "a > 1"),
        (ast.Unary, "-x"),
        (ast.DurationLit, "2m"),
        (ast.ExprStmt, "f(a)"),
    ],
)
def test_node_span_text(cls: type, text: str) -> None:
    """The node of class `cls` that starts where `text` first occurs spans exactly `text`."""
    module = _span_module()
    start = SPAN_PROGRAM.index(text)
    at = [n for n in walk(module) if isinstance(n, cls) and n.span.start == start]
    assert at, f"no {cls.__name__} starts at {text!r}"
    assert text in [n.span.text for n in at]


def test_it_span() -> None:
    e = expr('f("x") expect it.ok')
    assert isinstance(e, ast.Expect)
    it = find(e, ast.It)
    assert it.span.text == "it"


@pytest.mark.parametrize(
    "src,kind",
    [
        ("(a + b) * c", ast.Binary),
        ("(a).b", ast.Member),
        ("(f)(1)", ast.Call),
        ("(xs)[0]", ast.Index),
        ("(a) ? b : c", ast.Ternary),
        ("(a) ?? b", ast.Binary),
    ],
)
def test_span_of_expression_starting_with_parentheses(src: str, kind: type) -> None:
    e = expr(src)
    assert isinstance(e, kind)
    assert e.span.text == src


@pytest.mark.parametrize("src", ["(int | string)[]", "(int)?", "(int) | string"])
def test_span_of_type_starting_with_parentheses(src: str) -> None:
    d = decl(f"type T = {src}")
    assert isinstance(d, ast.TypeDecl)
    assert d.type.span.text == src


def test_parenthesised_operand_span_is_inside_its_parent() -> None:
    e = expr("x * (a + b)")
    assert isinstance(e, ast.Binary) and e.span.text == "x * (a + b)"
    assert e.right.span.text == "a + b"


def test_workflow_span_is_the_whole_declaration() -> None:
    module = _span_module()
    wf = find(module, ast.WorkflowDecl)
    assert wf.span.text.startswith("workflow w(a: int, b?: bool) -> int {")
    assert wf.span.text.endswith("  return a\n}")


def test_name_and_ident_spans() -> None:
    s = stmt("let answer = other")
    assert isinstance(s, ast.Let)
    assert s.name.span.text == "answer"
    assert s.value.span.text == "other"
    pos = s.name.span.start_pos
    assert (pos.line, pos.column) == (2, 5)


def test_multiline_call_span() -> None:
    s = stmt("let t = f(\n  1,\n  2,\n)")
    assert isinstance(s, ast.Let)
    assert s.value.span.text == "f(\n  1,\n  2,\n)"
    assert s.span.text == "let t = f(\n  1,\n  2,\n)"


# --- recovery -------------------------------------------------------------------------------


def test_three_independent_errors_three_diagnostics() -> None:
    text = """workflow one() {
  let a = (1 +
}

workflow two() {
  let b = 1 +* 2
}

workflow three() {
  print 1 2
}

workflow good() -> int {
  return 1
}
"""
    module, diags = parse_src(text)
    assert codes(diags) == ["F1006", "F1006", "F1006"]
    assert [d.span.start_pos.line for d in diags] == [3, 6, 10]
    assert [d.span.text for d in diags] == ["}", "*", "2"]
    names = [d.name.name for d in module.decls]
    assert names == ["one", "two", "three", "good"]
    good = module.decls[3]
    assert isinstance(good, ast.WorkflowDecl) and isinstance(good.body.body[0], ast.Return)


def test_three_errors_of_different_kinds() -> None:
    text = """workflow one() {
  let b = 3 $ 4
}
workflow two() {
  let c = a < b < c
}
workflow three() {
  let d = [1, 2
  print d
}
type Ok = { id: string }
"""
    module, diags = parse_src(text)
    assert len(diags) == 3, [(d.code, d.span.text) for d in diags]
    assert codes(diags)[:2] == ["F1001", "F1006"]
    assert [d.span.start_pos.line for d in diags][:2] == [2, 5]
    assert module.decls[-1].name.name == "Ok"
    assert isinstance(module.decls[-1], ast.TypeDecl)


def test_let_without_value_at_end_of_line() -> None:
    module, diags = parse_src("let x = \nlet y = 2")
    assert codes(diags) == ["F1006"]
    assert diags[0].span.start_pos.line == 1
    # The broken binding is kept (so later uses do not cascade) and the next one parses.
    x, y = module.statements
    assert isinstance(x, ast.Let) and x.name.name == "x" and isinstance(x.value, ast.ErrorExpr)
    assert isinstance(y, ast.Let) and isinstance(y.value, ast.IntLit)


def test_let_without_value_at_end_of_file() -> None:
    _module, diags = parse_src("let x = ")
    assert len(diags) == 1 and diags[0].code in ("F1006", "F1007")


def test_unclosed_brace_at_end_of_file_points_at_the_opener() -> None:
    text = "workflow w() {\n  let x = 1\n"
    _module, diags = parse_src(text)
    assert codes(diags) == ["F1007"]
    related = diags[0].related
    assert len(related) == 1
    assert related[0].span.text == "{"
    assert related[0].span.start == text.index("{")
    assert (related[0].span.start_pos.line, related[0].span.start_pos.column) == (1, 14)


def test_unclosed_object_literal_at_end_of_file() -> None:
    text = "let o = {a: 1"
    _module, diags = parse_src(text)
    assert codes(diags) == ["F1007"]
    assert [r.span.start for r in diags[0].related] == [text.index("{")]


def test_unclosed_call_at_end_of_file() -> None:
    text = "let o = f(1,"
    _module, diags = parse_src(text)
    assert codes(diags) == ["F1007"]
    assert [r.span.text for r in diags[0].related] == ["("]


def test_declaration_inside_workflow_is_f1012_and_parsing_continues() -> None:
    module, diags = parse_src("workflow w() {\n  type T = int\n  let z = 1\n}\nworkflow v() {}")
    assert codes(diags) == ["F1012"]
    assert diags[0].span.text == "type"
    assert [d.name.name for d in module.decls] == ["w", "v"]
    w = module.decls[0]
    assert isinstance(w, ast.WorkflowDecl)
    assert [type(s).__name__ for s in w.body.body] == ["Let"]


def test_multiline_agent_inside_workflow_is_one_f1012() -> None:
    module, diags = parse_src('workflow w() {\n  agent A { model: "x"\n    role: "y" }\n  let z = 1\n}')
    assert codes(diags) == ["F1012"]
    w = module.decls[0]
    assert isinstance(w, ast.WorkflowDecl)
    assert [s.name.name for s in w.body.body] == ["z"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("word", ["use", "tool", "team", "workflow"])
def test_other_declarations_inside_a_body_are_f1012(word: str) -> None:
    src = {"use": 'use "x.flow"', "tool": "tool t() -> int", "team": "team s { main: a, members: [] }",
           "workflow": "workflow inner() { }"}[word]
    _module, diags = parse_src(f"workflow w() {{\n  if true {{\n    {src}\n  }}\n  print 1\n}}")
    assert codes(diags) == ["F1012"]
    assert diags[0].span.text == word


def test_reserved_word_as_binding_name_is_f1010() -> None:
    module, diags = parse_src("let type = 1\nlet ok = 2")
    assert codes(diags) == ["F1010"]
    assert diags[0].span.text == "type"
    # Parsing goes on: the binding is still there.
    first = module.statements[0]
    assert isinstance(first, ast.Let) and first.name.name == "type" and isinstance(first.value, ast.IntLit)
    assert len(module.statements) == 2


@pytest.mark.parametrize("src,word", [("for if in xs { }", "if"), ("workflow run() {}", "run"), ("agent stage {}", "stage"),
                                      ("workflow w(in: int) {}", "in")])
def test_reserved_word_as_other_names_is_f1010(src: str, word: str) -> None:
    _module, diags = parse_src(src)
    assert codes(diags) == ["F1010"]
    assert diags[0].span.text == word


@pytest.mark.parametrize("target", ["a.b", "a[0]", "f()"])
def test_invalid_assignment_target_is_f1013(target: str) -> None:
    module, diags = parse_src(f"{target} = 1\nlet ok = 2")
    assert codes(diags) == ["F1013"]
    assert diags[0].span.text == target
    assert isinstance(module.statements[-1], ast.Let)


def test_duplicate_object_key_is_f1014() -> None:
    text = 'let o = {a: 1, "b": 2, a: 3}'
    module, diags = parse_src(text)
    assert codes(diags) == ["F1014"]
    assert diags[0].span.start == text.rindex("a:")
    assert [r.span.start for r in diags[0].related] == [text.index("a:")]
    o = module.statements[0].value  # type: ignore[attr-defined]
    assert isinstance(o, ast.ObjectLit) and [e.key for e in o.entries] == ["a", "b"]


def test_duplicate_key_string_and_name_spelling() -> None:
    _module, diags = parse_src('let o = {a: 1, "a": 2}')
    assert codes(diags) == ["F1014"]


def test_duplicate_field_in_object_type_is_f1014() -> None:
    _module, diags = parse_src("type T = {a: int, a: string}")
    assert codes(diags) == ["F1014"]


@pytest.mark.parametrize("src", ["a < b < c", "a == b == c", "a < b >= c", "x in xs in ys"])
def test_chained_comparison_is_f1006(src: str) -> None:
    module, diags = parse_src(f"let q = {src}\nlet ok = a < b and b < c")
    assert codes(diags) == ["F1006"]
    assert diags[0].span.start_pos.line == 1
    ok = module.statements[1]
    assert isinstance(ok, ast.Let) and isinstance(ok.value, ast.Binary) and ok.value.op == "and"


def test_bad_tokens_give_only_the_lexer_diagnostic() -> None:
    module, diags = parse_src('let x = 5x\nlet y = "abc\nprint @\nlet z = 1')
    assert codes(diags) == ["F1005", "F1002", "F1001"]
    assert isinstance(module.statements[-1], ast.Let) and module.statements[-1].name.name == "z"


def test_stray_closer_at_top_level_is_one_f1008() -> None:
    module, diags = parse_src("workflow w() {\n}\n}\nlet z = 1")
    assert codes(diags) == ["F1008"]
    assert diags[0].span.start_pos.line == 3
    assert [d.name.name for d in module.decls] == ["w"]
    assert isinstance(module.statements[0], ast.Let)


def test_extra_closing_paren_in_a_body_is_one_diagnostic() -> None:
    module, diags = parse_src("workflow w() { f()) }\nlet z = 1")
    assert len(diags) == 1
    assert diags[0].span.text == ")"
    assert [d.name.name for d in module.decls] == ["w"]
    assert isinstance(module.statements[0], ast.Let)


def test_mismatched_bracket_in_array_is_one_diagnostic() -> None:
    module, diags = parse_src("let a = [1, 2)\nlet b = 2")
    assert len(diags) == 1
    assert diags[0].span.text == ")"
    assert isinstance(module.statements[1], ast.Let) and module.statements[1].name.name == "b"


BRACE_ERRORS = [
    pytest.param("let o = {a: 1 b: 2}", id="object-literal"),
    pytest.param("let o = {a}", id="object-shorthand"),
    pytest.param("let p = parallel { a: 1 b: 2 }", id="parallel"),
    pytest.param("let t: {a: int b: int} = x", id="object-type"),
    pytest.param("limits { steps: 1 agent_runs: 2 }", id="limits"),
]


@pytest.mark.parametrize("line", BRACE_ERRORS)
def test_error_inside_braces_is_reported_first(line: str) -> None:
    _module, diags = parse_src(f"workflow w() {{\n  {line}\n  print 1\n}}")
    assert diags and diags[0].code == "F1006"
    assert diags[0].span.start_pos.line == 2


@pytest.mark.parametrize("line", BRACE_ERRORS)
def test_error_inside_braces_in_workflow_is_one_diagnostic(line: str) -> None:
    module, diags = parse_src(f"workflow w() {{\n  {line}\n  print 1\n}}\ntype Ok = int")
    assert codes(diags) == ["F1006"], [(d.code, d.span.text) for d in diags]
    assert module.statements == []
    w = module.decls[0]
    assert isinstance(w, ast.WorkflowDecl) and isinstance(w.body.body[-1], ast.Print)
    assert module.decls[-1].name.name == "Ok"


@pytest.mark.parametrize("line", [p for p in BRACE_ERRORS if p.id != "limits"])
def test_error_inside_braces_at_top_level_is_one_diagnostic(line: str) -> None:
    module, diags = parse_src(f"{line}\nlet z = 1")
    assert codes(diags) == ["F1006"], [(d.code, d.span.text) for d in diags]
    assert isinstance(module.statements[-1], ast.Let) and module.statements[-1].name.name == "z"


@pytest.mark.parametrize("line", ["let o = f(1 2)", "let o = [1 2]", "let o = (1 2)", "let o = f([1, 2)"])
def test_error_inside_parens_or_brackets_is_one_diagnostic(line: str) -> None:
    module, diags = parse_src(f"workflow w() {{\n  {line}\n  print 1\n}}\nlet z = 1")
    assert codes(diags) == ["F1006"], [(d.code, d.span.text) for d in diags]
    w = module.decls[0]
    assert isinstance(w, ast.WorkflowDecl) and [type(x).__name__ for x in w.body.body] == ["Let", "Print"]
    assert [type(x).__name__ for x in module.statements] == ["Let"]


def test_mismatched_brace_closing_a_paren_is_one_diagnostic() -> None:
    module, diags = parse_src("let a = (1 }\nlet b = 2")
    assert len(diags) == 1, [(d.code, d.span.text) for d in diags]
    assert isinstance(module.statements[-1], ast.Let) and module.statements[-1].name.name == "b"


def test_error_in_if_body_keeps_later_statements() -> None:
    module, diags = parse_src("workflow w() {\n  if a {\n    let = 1\n  }\n  print 2\n}")
    assert codes(diags) == ["F1006"]
    w = module.decls[0]
    assert isinstance(w, ast.WorkflowDecl)
    assert [type(s).__name__ for s in w.body.body] == ["If", "Print"]


def test_missing_in_after_for_variable() -> None:
    _module, diags = parse_src("workflow w() {\n  for x xs { }\n}")
    assert codes(diags) == ["F1006"]
    assert diags[0].span.text == "xs"


def test_missing_colon_in_ternary() -> None:
    _module, diags = parse_src("let a = b ? c\nlet d = 1")
    assert codes(diags) == ["F1006"]


def test_statement_must_end_at_line_end() -> None:
    module, diags = parse_src("let a = 1 let b = 2\nlet c = 3")
    assert codes(diags) == ["F1006"]
    assert diags[0].span.text == "let"
    assert isinstance(module.statements[-1], ast.Let) and module.statements[-1].name.name == "c"

"""The logic behind the kernel's complete_request, inspect_request and is_complete_request
(flow_kernel/kernel/assist.py): pure functions of the cell, the cursor and the session."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flow_kernel import Session
from flow_kernel.kernel.assist import BUILTIN_DOCS, MAGICS, complete, inspect, is_complete
from flow_kernel.lang.builtins import BUILTINS
from flow_kernel.lang.session_scope import SessionScope

EARLIER_CELL = 'type T = { name: string, age: int }\nlet p: T = { name: "a", age: 1 }'

TEAM = """\
## Triages tickets.
agent triager { model: "mock" }
type Draft = { text: string, words: int }
agent writer { model: "mock", output: Draft }
agent reviewer { model: "mock", output: "accept" | "revise" }
## The support desk.
team support { main: triager, members: [writer, reviewer] }
"""

SUPPORT = """\
type Severity = "low" | "medium" | "high"
type Ticket = { id: string, title: string(minLength: 1), body?: string }
type Triage = { id: string, severity: Severity, summary: string }

## Looks up the knowledge base.
tool search_kb(query: string, limit?: int) -> string[]
## Refunds an order.
tool refund(order_id: string, amount: number) -> { ok: bool } requires approval

## Classifies one support ticket.
agent classifier {
  model: "scripted"
  role: "support triage specialist"
  tools: [search_kb]
  output: Triage
  script: [{ id: "T1", severity: "low", summary: "Password reset" }]
}

## Triages every ticket.
workflow triage_all(tickets: Ticket[], strict?: bool) -> Triage[] {
  return map(tickets, t => classifier("Ticket ${t.id}: ${t.title}"))
}
"""


@pytest.fixture(scope="module")
def scope() -> SessionScope:
    """The scope after one real cell: a type alias and a binding with its static type."""
    session = Session(sandbox=False, journal_dir=None, operator="none")
    session.run(EARLIER_CELL)
    return session.scope


def matches(code: str, scope: SessionScope, cursor: int | None = None, magics: tuple[str, ...] = MAGICS) -> list[str]:
    reply = complete(code, len(code) if cursor is None else cursor, scope, magics)
    return list(reply["matches"])


def kinds(reply: dict[str, Any]) -> dict[str, str]:
    return {m["text"]: m["type"] for m in reply["metadata"]["_jupyter_types_experimental"]}


def shown(code: str, scope: SessionScope, cursor: int | None = None, detail_level: int = 0) -> str:
    reply = inspect(code, len(code) if cursor is None else cursor, scope, detail_level)
    assert reply["found"], code
    assert set(reply["data"]) == {"text/plain", "text/html"}  # sanitised HTML, never raw Markdown
    assert reply["metadata"] == {}
    return str(reply["data"]["text/plain"])


def markdown(code: str, scope: SessionScope, cursor: int | None = None) -> str:
    """The reply's Markdown as the host rendered it (flow_kernel.markup.markdown_html)."""
    reply = inspect(code, len(code) if cursor is None else cursor, scope)
    assert reply["found"], code
    return str(reply["data"]["text/html"])


# --- complete: fields ----------------------------------------------------------------------------


def test_fields_of_a_session_binding_from_an_earlier_cell(scope: SessionScope) -> None:
    assert "p" in scope.bindings
    reply = complete("p.", 2, scope)
    assert reply["matches"] == ["age", "name"]
    assert (reply["cursor_start"], reply["cursor_end"]) == (2, 2)
    assert kinds(reply) == {"age": "field", "name": "field"}


def test_field_prefix_replaces_only_the_prefix(scope: SessionScope) -> None:
    code = 'print "${p.name}"\nprint p.na'
    reply = complete(code, len(code), scope)
    assert reply["matches"] == ["name"]
    assert reply["cursor_start"] == len(code) - 2
    assert reply["cursor_end"] == len(code)
    assert reply["metadata"]["_jupyter_types_experimental"] == [
        {"text": "name", "type": "field", "start": len(code) - 2, "end": len(code)}]


def test_fields_of_a_let_in_the_cell_itself(scope: SessionScope) -> None:
    code = 'let order = { id: "A1", total: 12.5, lines: [{ sku: "x", qty: 1 }] }\nprint order.'
    assert matches(code, scope) == ["id", "lines", "total"]
    assert matches(code + "t", scope) == ["total"]


def test_fields_through_a_path_index_projection_and_optional_chain(scope: SessionScope) -> None:
    cell = ('type Line = { sku: string, qty: int }\n'
            'type Order = { id: string, lines: Line[], note?: { by: string, text: string } }\n'
            'let o: Order = { id: "A1", lines: [{ sku: "x", qty: 1 }] }\n')
    assert matches(cell + "o.lines[0].", scope) == ["qty", "sku"]
    assert matches(cell + "o.lines[*].", scope) == ["qty", "sku"]
    assert matches(cell + "o.note?.", scope) == ["by", "text"]
    assert matches(cell + "o.nothing.", scope) == []
    assert matches(cell + "len(o).", scope) == []  # a call result: unknown


def test_fields_of_a_parameter_in_a_workflow_still_being_written(scope: SessionScope) -> None:
    code = "workflow describe(person: T, loud?: bool) -> string {\n  return person."
    assert matches(code, scope) == ["age", "name"]


def test_fields_of_an_async_task(scope: SessionScope) -> None:
    code = "async task { let who = p\n  let n = 1 }\nawait task\nprint task."
    assert matches(code, scope) == ["n", "who"]


def test_team_members_after_the_team_name(scope: SessionScope) -> None:
    code = TEAM + 'let reply = support.'
    reply = complete(code, len(code), scope)
    assert reply["matches"] == ["main", "member", "reviewer", "writer"]
    assert kinds(reply) == {"main": "agent", "member": "function", "reviewer": "agent", "writer": "agent"}
    assert matches(code + "wr", scope) == ["writer"]


def test_team_members_of_a_team_from_an_earlier_cell() -> None:
    session = Session(sandbox=False, journal_dir=None, operator="none")
    session.run(TEAM)
    assert matches("support.m", session.scope) == ["main", "member"]


# --- complete: names -----------------------------------------------------------------------------


def test_keywords_builtins_and_session_names(scope: SessionScope) -> None:
    reply = complete("wor", 3, scope)
    assert reply["matches"] == ["workflow"]
    assert kinds(reply) == {"workflow": "keyword"}
    assert (reply["cursor_start"], reply["cursor_end"]) == (0, 3)
    par = complete("let ys = paral", 14, scope)
    assert kinds(par) == {"parallel": "keyword", "parallelMap": "function"}
    assert kinds(complete("print p", 7, scope)) == {"p": "variable", "parallel": "keyword",
                                                   "parallelMap": "function", "parseJson": "function",
                                                   "pick": "function",
                                                   "pipeline": "keyword", "print": "keyword",
                                                   "publish": "keyword"}
    assert kinds(complete("let x: T", 8, scope))["T"] == "type"


def test_names_declared_in_the_cell_with_their_kinds(scope: SessionScope) -> None:
    code = SUPPORT + "\n"
    reply = complete(code, len(code), scope)
    got = kinds(reply)
    assert got["classifier"] == "agent"
    assert got["triage_all"] == "workflow"
    assert got["Ticket"] == "type"
    assert got["search_kb"] == "tool"
    assert got["refund"] == "tool"
    assert got["len"] == "function"
    assert got["let"] == "keyword"
    assert got["p"] == "variable"  # the session's
    assert got["T"] == "type"  # the earlier cell's
    assert kinds(complete(code + "tri", len(code) + 3, scope)) == {"triage_all": "workflow", "trim": "function"}


def test_empty_prefix_offers_everything_sorted_and_unique(scope: SessionScope) -> None:
    reply = complete(TEAM, len(TEAM), scope)
    names = reply["matches"]
    assert names == sorted(set(names))
    assert {"support", "writer", "let", "map", "p", "T", "string"} <= set(names)
    assert [m["text"] for m in reply["metadata"]["_jupyter_types_experimental"]] == names


def test_a_declaration_wins_over_a_builtin_of_the_same_name(scope: SessionScope) -> None:
    code = "type merge = string\nmer"
    assert kinds(complete(code, len(code), scope)) == {"merge": "type"}


def test_names_from_broken_code_are_still_offered(scope: SessionScope) -> None:
    # The agent does not parse (its `model:` has no value): the token scan still finds it.
    code = "agent helper {\n  model:\n}\nlet answer = hel"
    assert kinds(complete(code, len(code), scope)) == {"helper": "agent"}
    # A tool declared above an agent that is still open.
    code = "tool lookup(q: string) -> string\nagent assistant {\n  model: \"mock\"\n  tools: [lo"
    assert kinds(complete(code, len(code), scope)) == {"log": "keyword", "lookup": "tool",
                                                            "lower": "function"}


def test_local_names_inside_a_workflow_body(scope: SessionScope) -> None:
    code = ("workflow total(items: int[]) -> int {\n  let subtotal = sum(items)\n"
            "  for item, index in items { print index }\n  return su")
    assert kinds(complete(code, len(code), scope)) == {"subtotal": "variable", "sum": "function"}
    code2 = code[: -2] + "i"
    got = complete(code2, len(code2), scope)["matches"]
    assert {"items", "item", "index", "if", "in", "int", "it"} <= set(got)


def test_the_name_being_written_is_not_its_own_completion(scope: SessionScope) -> None:
    assert matches("let trimmed", scope) == []
    assert matches("agent tri", scope) == ["trim"]


def test_nothing_inside_strings_or_comments(scope: SessionScope) -> None:
    assert matches('print "hello p.', scope) == []
    assert matches('print "hello wor', scope) == []
    assert matches('let x = 1  # see p.', scope) == []
    assert matches('let s = """\n  text p.', scope) == []
    assert matches("let n = 12", scope) == []


def test_inside_an_interpolation_the_expression_completes(scope: SessionScope) -> None:
    assert matches('print "hello ${p.', scope) == ["age", "name"]
    assert matches('print "hello ${len(p.n', scope) == ["name"]
    assert matches('print """\n  ${ upper(p.na', scope) == ["name"]
    assert matches('print "${ str("${p.', scope) == ["age", "name"]


def test_cursor_in_the_middle_of_the_cell(scope: SessionScope) -> None:
    code = "let a = p.\nlet b = 2"
    reply = complete(code, code.index("\n"), scope)
    assert reply["matches"] == ["age", "name"]
    code = "print le(p)"
    reply = complete(code, code.index("("), scope)
    assert reply["matches"] == ["len", "let"]
    assert (reply["cursor_start"], reply["cursor_end"]) == (6, 8)


# --- complete: magics ----------------------------------------------------------------------------


def test_magics_at_the_start_of_a_line(scope: SessionScope) -> None:
    reply = complete("%pro", 4, scope, MAGICS)
    assert reply["matches"] == ["%provider"]
    assert (reply["cursor_start"], reply["cursor_end"]) == (0, 4)
    assert kinds(reply) == {"%provider": "magic"}
    assert matches("%re", scope) == ["%record", "%replay", "%reset", "%resume"]
    assert matches("%", scope) == sorted(f"%{m}" for m in MAGICS)
    code = "%check\n  %ru"
    reply = complete(code, len(code), scope)
    assert reply["matches"] == ["%runs"]
    assert reply["cursor_start"] == code.index("%ru")


def test_magic_names_come_from_the_argument(scope: SessionScope) -> None:
    assert matches("%", scope, magics=("check", "%who")) == ["%check", "%who"]
    assert matches("%%py", scope, magics=("python",)) == ["%%python"]


def test_percent_inside_an_expression_is_not_a_magic(scope: SessionScope) -> None:
    # `%` is the remainder operator here: the names after it complete as usual.
    assert matches("let r = 7 %re", scope) == ["reduce", "replace", "require", "requires", "return"]
    assert not any(m.startswith("%") for m in matches("let r = 7 %", scope))


def test_magic_arguments(scope: SessionScope) -> None:
    assert matches("%schema ", scope) == ["T"]
    code = TEAM + "\n"
    assert matches("%schema wr\n" + code, scope, cursor=len("%schema wr")) == ["writer"]
    assert matches("%explain F100", scope) == [f"F100{i}" for i in range(1, 10)]
    assert matches("%operator auto-", scope) == ["auto-approve", "auto-deny"]


def test_cells_with_leading_magics_still_complete_flow(scope: SessionScope) -> None:
    code = "%check\n%operator none\nprint p."
    assert matches(code, scope) == ["age", "name"]


# --- inspect -------------------------------------------------------------------------------------


def test_inspect_agent(scope: SessionScope) -> None:
    code = SUPPORT + 'let t = classifier("hi")'
    text = shown(code, scope, code.rindex("classifier") + 3)
    assert text.startswith("agent classifier")
    assert "Classifies one support ticket." in text
    assert "model: scripted" in text
    assert "role: support triage specialist" in text
    assert "tools: search_kb" in text
    assert "output: Triage" in text
    assert "Output JSON Schema" in text and '"$ref": "#/$defs/Triage"' in text
    md = markdown(code, scope, code.rindex("classifier") + 3)
    assert md.startswith("<pre><code>agent classifier\n</code></pre>")
    assert "<li><strong>output</strong>: <code>Triage</code></li>" in md
    assert "<p><strong>Output JSON Schema</strong></p>\n<pre><code>{" in md and '"enum": [\n' in md


def test_inspect_workflow_signature_and_schemas(scope: SessionScope) -> None:
    code = SUPPORT + "triage_all("
    text = shown(code, scope)  # the cursor after `(`: the called workflow
    assert text.splitlines()[0] == "workflow triage_all(tickets: Ticket[], strict?: bool) -> Triage[]"
    assert "Triages every ticket." in text
    assert "Input JSON Schema" in text and '"required": [\n    "tickets"\n  ]' in text
    assert "Output JSON Schema" in text


def test_inspect_type_alias(scope: SessionScope) -> None:
    code = SUPPORT + "let s: Severity = \"low\""
    text = shown(code, scope, code.rindex("Severity") + 1)
    assert text.splitlines()[0] == 'type Severity = "low" | "medium" | "high"'
    assert '"enum": [' in text
    md = markdown(code, scope, code.rindex("Severity"))
    assert md.startswith('<pre><code>type Severity = "low" | "medium" | "high"\n</code></pre>')


def test_inspect_tool(scope: SessionScope) -> None:
    code = SUPPORT
    text = shown(code, scope, code.index("refund") + 2)
    assert text.splitlines()[0] == "tool refund(order_id: string, amount: number) -> {ok: bool} requires approval"
    assert "requires approval: yes" in text
    assert "Refunds an order." in text
    text = shown(code, scope, code.index("search_kb]") + 2)
    assert text.splitlines()[0] == "tool search_kb(query: string, limit?: int) -> string[]"
    assert "requires approval: no" in text


def test_inspect_a_tool_lent_by_an_mcp_server(scope: SessionScope) -> None:
    code = 'tool find(query: string) -> any from mcp "docs/search"\nagent a { model: "mock", tools: [find] }\n'
    text = shown(code, scope, code.index("find]") + 1)
    assert text.splitlines()[0] == 'tool find(query: string) -> any from mcp "docs/search"'
    assert "the MCP server `docs` ([mcp.docs] in flow.toml)" in text


def test_inspect_team_and_its_members(scope: SessionScope) -> None:
    code = TEAM + 'support.writer("draft")'
    text = shown(code, scope, code.rindex("support") + 2)
    assert text.splitlines()[0] == "team support { main: triager, members: [writer, reviewer] }"
    assert "The support desk." in text
    assert "main: triager -> string" in text
    assert "member: writer -> Draft" in text
    assert "member: reviewer -> \"accept\" | \"revise\"" in text
    member = shown(code, scope, code.rindex("writer") + 1)
    assert member.splitlines()[0] == "support.writer → agent writer"
    assert "output: Draft" in member
    assert shown(TEAM + "support.main", scope).splitlines()[0] == "support.main → agent triager"
    any_member = shown(TEAM + "support.member", scope)
    assert any_member.startswith('support.member(name: string, prompt: string, ...options) -> string | Draft | "accept" | "revise"')


def test_inspect_builtins(scope: SessionScope) -> None:
    text = shown("len", scope)
    assert text.splitlines()[0] == "len(x: string | T[] | object) -> int"
    code = "let xs = map([1, 2], "
    assert shown(code, scope).splitlines()[0] == "map(xs: T[], f: (x: T, i?: int) => U) -> U[]"
    assert "range(a: int, b: int) -> int[]" in shown("range(0, 3)", scope, 2)
    assert "<code>sum([])</code> is 0" in markdown("sum", scope)


def test_every_builtin_has_a_documented_signature() -> None:
    assert set(BUILTIN_DOCS) == set(BUILTINS)
    for name, (signature, note) in BUILTIN_DOCS.items():
        assert signature.startswith(name + "("), name
        assert note, name


def test_inspect_session_and_cell_bindings(scope: SessionScope) -> None:
    text = shown("print p", scope)
    assert text.splitlines()[0] == "let p: T"
    assert "type T = {name: string, age: int}" in text
    assert '"$ref": "#/$defs/T"' in text
    assert shown("var count = 0\ncount = count + 1", scope, 6).splitlines()[0] == "var count: int"
    assert shown("p.name", scope).splitlines()[0] == "p.name: string"
    assert shown("T", scope).splitlines()[0] == "type T = { name: string, age: int }"  # an earlier cell's


def test_inspect_detail_level_shows_the_source(scope: SessionScope) -> None:
    code = SUPPORT + "classifier"
    assert "Source:" not in shown(code, scope)
    detailed = shown(code, scope, detail_level=1)
    assert "Source:" in detailed and 'script: [{ id: "T1"' in detailed


def test_inspect_unknown(scope: SessionScope) -> None:
    for code, cursor in [("nothing_here", 3), ("", 0), ("let x = 42", 9), ("   ", 2), ("p.missing", 5)]:
        reply = inspect(code, cursor, scope)
        assert reply["found"] is False, code
        assert reply["data"] == {}


# --- is_complete ---------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [
    "",
    "   \n",
    "let x = 1",
    "let x = (1 + 2) * 3",
    'print "a (string) with [brackets] and { braces"',
    "let y = 1  # a comment with an open (",
    SUPPORT,
    'let s = """\n  two\n  lines ${len("x")}\n"""',
    'print "${ {a: 1}.a }"',
    "err.in",  # a field named like a keyword
    "%load lib.flow",
    "%check\nlet x = 1",
])
def test_complete_code(code: str) -> None:
    assert is_complete(code) == {"status": "complete"}


@pytest.mark.parametrize(("code", "indent"), [
    ("let xs = [1, 2,", "  "),
    ("f(1,\n  [2, {", "      "),
    ("workflow go() -> int {\n  let x = 1", "  "),
    ("workflow go() -> int {\n  if true {\n    return 1", "    "),
    ("agent a {\n  model: \"mock\"", "  "),
    ('print "unterminated', ""),
    ('let s = """\n  still going', ""),
    ('f(1, """\n text', "  "),
    ('print "a ${x', ""),
    ('print "a ${ f("b', ""),
    ('let s = """\n  ${ len(', ""),
    ("let x = 1 +", ""),
    ("let x =", ""),
    ("let ok = a and", ""),
    ("let ok = not", ""),
    ("let n = a ??", ""),
    ("let v = c ? 1 :", ""),
    ("let f = x =>", ""),
    ("print p.", ""),
    ("type A = \"a\" |", ""),
    ("workflow w() ->", ""),
    ("let x = (1 +", "  "),
    ("%check\nlet x = (", "  "),
])
def test_incomplete_code(code: str, indent: str) -> None:
    assert is_complete(code) == {"status": "incomplete", "indent": indent}


@pytest.mark.parametrize("code", [
    "x)",
    "}",
    "let x = (1]",
    "f(1, 2))",
    'print "broken\nlet y = 1',  # a plain string cannot go on on the next line
    'print "${x\nlet y = 1',
    "let x = 1 !",  # a character more text cannot fix
    "let x = 5x",
    "let s = \"bad \\q escape\"",
    "let x = [1, 2\nlet y = 3)",
])
def test_invalid_code(code: str) -> None:
    assert is_complete(code) == {"status": "invalid"}


# --- never raise ---------------------------------------------------------------------------------

FRAGMENTS = [
    "let ", "var ", "agent ", "team ", "workflow ", "type ", "tool ", "x", "p", "T", "support",
    ".", "?.", "(", ")", "[", "]", "{", "}", ",", ":", "=", "=>", "+", "and ", '"', '"""', "${",
    "#", "##", "\n", " ", "%", "%check", "1", "5x", "\\", "!", "\t", "é", "[*]", "->", "main",
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.one_of(st.text(max_size=60), st.lists(st.sampled_from(FRAGMENTS), max_size=25).map("".join)),
    data=st.data(),
)
def test_never_raise(scope: SessionScope, text: str, data: st.DataObject) -> None:
    cursor = data.draw(st.integers(min_value=-2, max_value=len(text) + 2))
    reply = complete(text, cursor, scope, MAGICS)
    assert reply["matches"] == sorted(set(reply["matches"]))
    assert 0 <= reply["cursor_start"] <= reply["cursor_end"] <= len(text)
    assert is_complete(text)["status"] in ("complete", "incomplete", "invalid")
    assert isinstance(inspect(text, cursor, scope)["found"], bool)


def test_completion_after_an_agent_and_a_dot_offers_the_call() -> None:
    """`triager.` + Tab: an agent has no fields; the reply says so and offers the call and
    its options, replacing the dot (issue 18)."""
    code = 'agent triager { model: "scripted", script: ["x"] }\nlet r = triager.'
    reply = complete(code, len(code), SessionScope())
    assert reply["cursor_start"] == code.rindex(".") and reply["cursor_end"] == len(code)
    assert reply["matches"][0] == '("")' and '("", label: "")' in reply["matches"]
    assert len(reply["matches"]) == 11  # the call, then one form per option (choice and fallback share one)
    types = reply["metadata"]["_jupyter_types_experimental"]
    assert {t["type"] for t in types} == {"call: an agent has no fields"}
    typed = code + "ch"
    assert complete(typed, len(typed), SessionScope())["matches"] == ['("", choice: ["a", "b"], fallback: "a")']
    typed = code + "max"
    assert complete(typed, len(typed), SessionScope())["matches"] == ['("", max_tool_calls: 8)']
    applied = code[: reply["cursor_start"]] + reply["matches"][2] + code[reply["cursor_end"]:]
    assert applied.endswith('triager("", label: "")')

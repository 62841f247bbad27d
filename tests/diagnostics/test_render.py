"""The text, JSON and HTML renderers, on hand-made diagnostics (no checker involved)."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from flow_kernel.diagnostics import (
    Diagnostic,
    Related,
    Severity,
    render_html,
    render_json,
    render_text,
)
from flow_kernel.source import SourceFile

TRIAGE = """\
agent triager {
  model: "mock"
}
workflow go(t: string) -> string {
  let r = triagr(t)
  return r
}
"""
SRC = SourceFile("triage.flow", TRIAGE)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def at(source: SourceFile, needle: str, nth: int = 0) -> tuple[int, int]:
    """Offsets of the `nth` occurrence of `needle` in `source`."""
    start = -1
    for _ in range(nth + 1):
        start = source.text.index(needle, start + 1)
    return start, start + len(needle)


def diag(
    source: SourceFile,
    needle: str,
    *,
    code: str = "F2001",
    severity: Severity = Severity.ERROR,
    message: str = "undefined name `triagr`",
    related: tuple[Related, ...] = (),
    hints: tuple[str, ...] = (),
) -> Diagnostic:
    return Diagnostic(code, severity, message, source.span(*at(source, needle)), related, hints)


def undefined_name() -> Diagnostic:
    return diag(
        SRC,
        "triagr",
        related=(Related(SRC.span(*at(SRC, "triager")), "a similar name is declared here"),),
        hints=("did you mean `triager`?",),
    )


def caret_under(block: str, source_line: str) -> tuple[str, str]:
    """The text above the carets that follow `source_line` in `block`, and the carets."""
    lines = block.splitlines()
    i = next(i for i, line in enumerate(lines) if line.endswith(source_line))
    text, carets = lines[i], lines[i + 1]
    col = carets.index("^")
    width = len(carets) - col
    assert set(carets[col:]) == {"^"}
    return text[col : col + width], carets[col:]


# --- text -------------------------------------------------------------------------


def test_full_text_rendering() -> None:
    assert render_text([undefined_name()]) == (
        "triage.flow:5:11 [F2001] error: undefined name `triagr`\n"
        "  5 |   let r = triagr(t)\n"
        "    |           ^^^^^^\n"
        "  = note: triage.flow:1:7: a similar name is declared here\n"
        "  1 | agent triager {\n"
        "    |       ^^^^^^^\n"
        "  = hint: did you mean `triager`?\n"
    )


def test_header_is_file_line_column_code_severity_message() -> None:
    d = diag(SRC, "r =", code="F7001", severity=Severity.WARNING, message="`r` is never used")
    first = render_text([d]).splitlines()[0]
    assert first == "triage.flow:5:7 [F7001] warning: `r` is never used"
    info = diag(SRC, "go", code="F7003", severity=Severity.INFO, message="redefined")
    assert render_text([info]).startswith("triage.flow:4:10 [F7003] info: redefined\n")


def test_without_context_one_line_per_diagnostic_plus_notes_and_hints() -> None:
    d = undefined_name()
    assert (
        render_text([d, d], context=False)
        == (
            "triage.flow:5:11 [F2001] error: undefined name `triagr`\n"
            "  = note: triage.flow:1:7: a similar name is declared here\n"
            "  = hint: did you mean `triager`?\n"
        )
        * 2
    )
    plain = diag(SRC, "go")
    assert render_text([plain], context=False) == (
        "triage.flow:4:10 [F2001] error: undefined name `triagr`\n"
    )


def test_blocks_are_separated_by_a_blank_line() -> None:
    out = render_text([diag(SRC, "go"), diag(SRC, "return")])
    assert "^^\n\ntriage.flow:6:3" in out


def test_no_diagnostics_renders_nothing() -> None:
    assert render_text([]) == ""
    assert render_json([]) == {"diagnostics": []}


def test_caret_spans_the_primary_span() -> None:
    above, carets = caret_under(render_text([diag(SRC, "triagr(t)")]), "let r = triagr(t)")
    assert above == "triagr(t)"
    assert carets == "^" * 9


def test_multi_line_span_is_underlined_to_the_end_of_its_first_line() -> None:
    start, _ = at(SRC, "workflow")
    _, end = at(SRC, "return r")
    d = Diagnostic("F3008", Severity.ERROR, "bad", SRC.span(start, end))
    above, _ = caret_under(render_text([d]), "workflow go(t: string) -> string {")
    assert above == "workflow go(t: string) -> string {"


def test_empty_span_gets_one_caret() -> None:
    start, _ = at(SRC, "triagr")
    d = Diagnostic("F1006", Severity.ERROR, "expected `)`", SRC.span(start, start))
    above, carets = caret_under(render_text([d]), "let r = triagr(t)")
    assert (above, carets) == ("t", "^")


def test_span_at_end_of_line_puts_one_caret_after_the_text() -> None:
    src = SourceFile("a.flow", 'print "oops\nlet x = 1\n')
    nl = src.text.index("\n")
    d = Diagnostic("F1002", Severity.ERROR, "unterminated", src.span(nl, nl + 1))
    lines = render_text([d]).splitlines()
    assert lines[1] == '  1 | print "oops'
    assert lines[2] == "    |" + " " * (1 + len('print "oops')) + "^"


def test_span_at_end_of_input_without_final_newline() -> None:
    src = SourceFile("a.flow", "workflow w() {")
    end = len(src.text)
    d = Diagnostic("F1007", Severity.ERROR, "unexpected end of input", src.span(end, end))
    lines = render_text([d]).splitlines()
    assert lines[0] == "a.flow:1:15 [F1007] error: unexpected end of input"
    assert lines[2].index("^") == lines[1].index("{") + 1


def test_span_on_the_empty_last_line() -> None:
    src = SourceFile("a.flow", "let x = (\n")
    end = len(src.text)
    d = Diagnostic("F1007", Severity.ERROR, "unexpected end of input", src.span(end, end))
    lines = render_text([d]).splitlines()
    assert lines == ["a.flow:2:1 [F1007] error: unexpected end of input", "  2 |", "    | ^"]


def test_tabs_are_expanded_and_carets_follow() -> None:
    src = SourceFile("t.flow", "workflow w() {\n\tlet\tx = y\n}\n")
    d = Diagnostic("F2001", Severity.ERROR, "undefined name `y`", src.span(*at(src, "y")))
    out = render_text([d])
    assert "\t" not in out
    lines = out.splitlines()
    assert lines[1] == "  2 |     let x = y"
    assert lines[2].index("^") == lines[1].index("y")


def test_wide_characters_take_two_columns() -> None:
    src = SourceFile("w.flow", 'let s = "日本語" + n\n')
    n = src.text.index("n\n")
    d = Diagnostic("F2001", Severity.ERROR, "undefined name `n`", src.span(n, n + 1))
    lines = render_text([d]).splitlines()
    # 3 wide characters before `n`: the caret sits 3 columns further right than the index
    prefix = len("  1 | ")
    assert lines[2].index("^") - prefix == len('let s = "日本語" + ') + 3
    wide = Diagnostic("F3001", Severity.ERROR, "m", src.span(*at(src, "日本語")))
    assert render_text([wide]).splitlines()[2].endswith(" " * 9 + "^" * 6)


def test_control_characters_are_made_visible() -> None:
    src = SourceFile("c.flow", "let x = 1\x00 + y\r\nlet z = 2\r\n")
    d = Diagnostic("F1001", Severity.ERROR, "unexpected character", src.span(*at(src, "\x00")))
    out = render_text([d])
    assert "\x00" not in out and "\r" not in out
    lines = out.splitlines()
    assert lines[1] == "  1 | let x = 1\u2400 + y"
    assert lines[2].index("^") == lines[1].index("\u2400")


def test_related_span_in_another_file_and_gutter_width() -> None:
    lib = SourceFile("lib/support.flow", "type Ticket = { id: string }\n")
    main = SourceFile("main.flow", "\n" * 11 + "type Ticket = string\n")
    d = Diagnostic(
        "F2002",
        Severity.ERROR,
        "`Ticket` is declared twice",
        main.span(*at(main, "Ticket")),
        (Related(lib.span(*at(lib, "Ticket")), "first declared here"),),
    )
    assert render_text([d]).splitlines() == [
        "main.flow:12:6 [F2002] error: `Ticket` is declared twice",
        "  12 | type Ticket = string",
        "     |      ^^^^^^",
        "  = note: lib/support.flow:1:6: first declared here",
        "   1 | type Ticket = { id: string }",
        "     |      ^^^^^^",
    ]


def test_hints_come_last_in_order() -> None:
    d = diag(SRC, "triagr", hints=("first", "second"))
    assert render_text([d]).splitlines()[-2:] == ["  = hint: first", "  = hint: second"]


def test_color_only_adds_escape_codes() -> None:
    d = undefined_name()
    plain = render_text([d])
    colored = render_text([d], color=True)
    assert "\x1b[" not in plain
    assert "\x1b[1;31m" in colored  # errors are red
    assert ANSI.sub("", colored) == plain
    warning = diag(SRC, "r", severity=Severity.WARNING)
    assert "\x1b[1;33m" in render_text([warning], color=True)


def test_display_name_maps_every_file_name() -> None:
    out = render_text([undefined_name()], display_name=lambda name: "shown/" + name)
    assert out.startswith("shown/triage.flow:5:11 ")
    assert "  = note: shown/triage.flow:1:7: " in out


lines_of_text = st.lists(
    st.text(alphabet=st.sampled_from("ab \t日\u0301\x00é{}\r"), max_size=12), min_size=1, max_size=4
)


@given(lines_of_text, st.data())
def test_any_span_renders_with_at_least_one_caret(lines: list[str], data: st.DataObject) -> None:
    src = SourceFile("p.flow", "\n".join(lines))
    start = data.draw(st.integers(0, len(src.text)))
    end = data.draw(st.integers(start, len(src.text)))
    d = Diagnostic("F1001", Severity.ERROR, "m", src.span(start, end))
    out = render_text([d]).splitlines()
    assert out[0].startswith(f"p.flow:{src.position(start).line}:")
    assert "^" in out[2]
    assert not any(ch in "".join(out) for ch in "\t\x00\r")


# --- JSON -------------------------------------------------------------------------

POSITION = {
    "type": "object",
    "properties": {
        "line": {"type": "integer", "minimum": 1},
        "column": {"type": "integer", "minimum": 1},
    },
    "required": ["line", "column"],
    "additionalProperties": False,
}
SPAN = {
    "type": "object",
    "properties": {"start": POSITION, "end": POSITION},
    "required": ["start", "end"],
    "additionalProperties": False,
}
# The JSON form of diagnostics.md: `flow check --format json`.
DIAGNOSTICS_JSON = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "diagnostics": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "code": {"type": "string", "pattern": "^F[1-9][0-9]{3}$"},
                    "severity": {"enum": ["error", "warning", "info"]},
                    "message": {"type": "string", "minLength": 1},
                    "file": {"type": "string", "minLength": 1},
                    "span": SPAN,
                    "related": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "message": {"type": "string"},
                                "file": {"type": "string", "minLength": 1},
                                "span": SPAN,
                            },
                            "required": ["message", "file", "span"],
                            "additionalProperties": False,
                        },
                    },
                    "hints": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["code", "severity", "message", "file", "span", "related", "hints"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["diagnostics"],
    "additionalProperties": False,
}


def test_json_schema_of_the_format_is_itself_valid() -> None:
    Draft202012Validator.check_schema(DIAGNOSTICS_JSON)


def test_json_shape_and_values() -> None:
    warning = diag(SRC, "r", code="F7001", severity=Severity.WARNING, message="`r` is never used")
    doc = render_json([undefined_name(), warning])
    Draft202012Validator(DIAGNOSTICS_JSON).validate(doc)
    assert json.loads(json.dumps(doc)) == doc
    first = doc["diagnostics"][0]
    assert first == {
        "code": "F2001",
        "severity": "error",
        "message": "undefined name `triagr`",
        "file": "triage.flow",
        "span": {"start": {"line": 5, "column": 11}, "end": {"line": 5, "column": 17}},
        "related": [
            {
                "message": "a similar name is declared here",
                "file": "triage.flow",
                "span": {"start": {"line": 1, "column": 7}, "end": {"line": 1, "column": 14}},
            }
        ],
        "hints": ["did you mean `triager`?"],
    }
    assert list(first) == ["code", "severity", "message", "file", "span", "related", "hints"]
    assert doc["diagnostics"][1]["severity"] == "warning"
    assert doc["diagnostics"][1]["related"] == [] and doc["diagnostics"][1]["hints"] == []


def test_json_multi_line_span_end_and_display_name() -> None:
    start, _ = at(SRC, "workflow")
    _, end = at(SRC, "return r")
    d = Diagnostic("F3008", Severity.ERROR, "bad", SRC.span(start, end))
    doc = render_json([d], display_name=str.upper)
    Draft202012Validator(DIAGNOSTICS_JSON).validate(doc)
    assert doc["diagnostics"][0]["span"] == {
        "start": {"line": 4, "column": 1},
        "end": {"line": 6, "column": 11},
    }
    assert doc["diagnostics"][0]["file"] == "TRIAGE.FLOW"


# --- HTML -------------------------------------------------------------------------


def test_html_is_escaped_and_classed_by_severity() -> None:
    src = SourceFile("<x>.flow", 'print "<script>alert(1)</script>"\n')
    d = Diagnostic(
        "F3001",
        Severity.WARNING,
        "expected `<b>` & more",
        src.span(*at(src, "<script>")),
        (Related(src.span(0, 5), "see <here>"),),
        ("try `a < b`",),
    )
    out = render_html([d])  # the one HTML renderer (diagnostics/html.py; its own tests: test_html.py)
    assert out.startswith('<div class="flow-diagnostics">')
    assert '<section class="flow-diagnostic flow-warning" data-code="F3001" style="' in out
    assert "<script>" not in out and "<b>" not in out and "<here>" not in out
    assert "&lt;script&gt;" in out and "expected <code>&lt;b&gt;</code> &amp; more" in out
    assert "&lt;x&gt;.flow:1:8" in out
    assert out.count('<pre class="flow-excerpt" style=') == 2
    assert "try <code>a &lt; b</code>" in out
    error_html = render_html([undefined_name()])
    assert 'class="flow-diagnostic flow-error"' in error_html
    assert "^^^^^^" in error_html

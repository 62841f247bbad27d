"""The lexer (language.md §1): token kinds, reserved and contextual words, numbers,
durations, strings with escapes, interpolation and triple-quoted dedent, comments,
bad tokens and their F1xxx diagnostics, and 1-based spans."""

from __future__ import annotations

import pytest

from flow_kernel.diagnostics.registry import Reporter
from flow_kernel.lang.lexer import tokenize
from flow_kernel.lang.tokens import RESERVED, Interpolation, Kind, Token
from flow_kernel.source import SourceFile

SPEC_RESERVED = """use type tool agent team workflow let var if else for in while return break
continue stage pipeline parallel async await verify require expect emit print log publish
approve ask run try catch as true false null and or not limits external schema it""".split()

CONTEXTUAL = ["details", "choice", "stdin", "timeout", "requires", "approval"]


def lex(text: str):
    src = SourceFile("test.flow", text)
    reporter = Reporter()
    tokens, docs = tokenize(src, reporter)
    return tokens, docs, reporter.diagnostics


def lex_ok(text: str) -> list[Token]:
    tokens, _docs, diags = lex(text)
    assert diags == [], [(d.code, d.message) for d in diags]
    return tokens


def kinds(tokens: list[Token]) -> list[Kind]:
    return [t.kind for t in tokens]


def texts(tokens: list[Token]) -> list[str]:
    return [t.text for t in tokens]


def codes(diags) -> list[str]:
    return [d.code for d in diags]


def one_string(text: str) -> Token:
    toks = lex_ok(text)
    assert kinds(toks) == [Kind.STRING, Kind.EOF]
    return toks[0]


def interp_text(text: str, part: Interpolation) -> str:
    return text[part.start : part.end]


# --- token kinds ------------------------------------------------------------------


def test_every_token_kind_in_one_line() -> None:
    text = 'let x_1 = 42 3.14 30s "s" + y\nz'
    toks = lex_ok(text)
    assert [(t.kind, t.text) for t in toks] == [
        (Kind.KEYWORD, "let"),
        (Kind.IDENT, "x_1"),
        (Kind.OP, "="),
        (Kind.INT, "42"),
        (Kind.NUMBER, "3.14"),
        (Kind.DURATION, "30s"),
        (Kind.STRING, '"s"'),
        (Kind.OP, "+"),
        (Kind.IDENT, "y"),
        (Kind.NEWLINE, "\n"),
        (Kind.IDENT, "z"),
        (Kind.EOF, ""),
    ]


def test_bad_token_kind_is_error() -> None:
    toks, _, diags = lex("a @ b")
    assert kinds(toks) == [Kind.IDENT, Kind.ERROR, Kind.IDENT, Kind.EOF]
    assert codes(diags) == ["F1001"]


@pytest.mark.parametrize(
    "op",
    [",", ":", ";", ".", "+", "-", "*", "/", "%", "<", ">", "=", "|", "?", "?.", "??", "=>",
     "==", "!=", "<=", ">=", "->", "..."],
)
def test_each_operator_is_one_token(op: str) -> None:
    toks = lex_ok(f"a {op} b")
    assert [(t.kind, t.text) for t in toks] == [
        (Kind.IDENT, "a"), (Kind.OP, op), (Kind.IDENT, "b"), (Kind.EOF, ""),
    ]
    assert toks[1].is_op(op)


def test_brackets_are_operator_tokens() -> None:
    toks = lex_ok("( ) [ ] { }")
    assert [(t.kind, t.text) for t in toks[:-1]] == [(Kind.OP, c) for c in "()[]{}"]


def test_operators_are_maximal_munch() -> None:
    toks = lex_ok("a?.b ?? c => d == e != f <= g >= h -> i ... j")
    assert [t.text for t in toks if t.kind is Kind.OP] == ["?.", "??", "=>", "==", "!=", "<=", ">=", "->", "..."]


def test_operators_glued_together() -> None:
    toks = lex_ok("a<=-b")
    assert texts(toks) == ["a", "<=", "-", "b", ""]


def test_leading_and_consecutive_newlines_collapse() -> None:
    toks = lex_ok("\n\n  a\n\n\n  b\n")
    assert kinds(toks) == [Kind.IDENT, Kind.NEWLINE, Kind.IDENT, Kind.NEWLINE, Kind.EOF]


def test_crlf_and_tabs_are_whitespace() -> None:
    toks = lex_ok("a\r\n\tb")
    assert kinds(toks) == [Kind.IDENT, Kind.NEWLINE, Kind.IDENT, Kind.EOF]
    assert toks[2].span.start_pos.line == 2
    assert toks[2].span.start_pos.column == 2


# --- words ----------------------------------------------------------------------------


def test_reserved_set_is_the_spec_list() -> None:
    assert set(SPEC_RESERVED) == set(RESERVED)


@pytest.mark.parametrize("word", SPEC_RESERVED)
def test_reserved_word_lexes_as_keyword(word: str) -> None:
    toks = lex_ok(word)
    assert toks[0].kind is Kind.KEYWORD
    assert toks[0].text == word
    assert toks[0].is_kw(word)


@pytest.mark.parametrize("word", CONTEXTUAL)
def test_contextual_keyword_lexes_as_identifier(word: str) -> None:
    toks = lex_ok(word)
    assert toks[0].kind is Kind.IDENT
    assert toks[0].is_word(word)
    assert not toks[0].is_kw(word)


@pytest.mark.parametrize("word", ["string", "number", "int", "bool", "any", "duration", "progress", "it_", "letter", "_", "_x9", "Ifx"])
def test_other_words_are_identifiers(word: str) -> None:
    toks = lex_ok(word)
    assert (toks[0].kind, toks[0].text) == (Kind.IDENT, word)


def test_identifier_may_contain_digits_but_not_start_with_one() -> None:
    toks = lex_ok("a1b2 _3")
    assert [(t.kind, t.text) for t in toks[:2]] == [(Kind.IDENT, "a1b2"), (Kind.IDENT, "_3")]


def test_keyword_prefix_is_a_longer_identifier() -> None:
    toks = lex_ok("lets iff return_value")
    assert kinds(toks)[:3] == [Kind.IDENT, Kind.IDENT, Kind.IDENT]


# --- numbers ------------------------------------------------------------------------


def test_integer() -> None:
    tok = lex_ok("42")[0]
    assert tok.kind is Kind.INT and tok.value == 42 and isinstance(tok.value, int)


def test_zero() -> None:
    tok = lex_ok("0")[0]
    assert tok.kind is Kind.INT and tok.value == 0


@pytest.mark.parametrize("text,value", [("3.14", 3.14), ("1e-3", 0.001), ("1E5", 100000.0), ("2e+3", 2000.0), ("0.5", 0.5), ("1.5e2", 150.0)])
def test_number(text: str, value: float) -> None:
    toks = lex_ok(text)
    assert kinds(toks) == [Kind.NUMBER, Kind.EOF]
    assert toks[0].value == value and isinstance(toks[0].value, float)
    assert toks[0].text == text


def test_minus_is_an_operator_before_a_number() -> None:
    toks = lex_ok("-3")
    assert [(t.kind, t.text) for t in toks] == [(Kind.OP, "-"), (Kind.INT, "3"), (Kind.EOF, "")]
    assert toks[1].value == 3


def test_minus_between_numbers() -> None:
    toks = lex_ok("5-3")
    assert [(t.kind, t.text) for t in toks[:3]] == [(Kind.INT, "5"), (Kind.OP, "-"), (Kind.INT, "3")]


def test_dot_after_integer_without_digit_is_member_access() -> None:
    toks = lex_ok("1 .x")
    assert [(t.kind, t.text) for t in toks[:3]] == [(Kind.INT, "1"), (Kind.OP, "."), (Kind.IDENT, "x")]


# --- durations ----------------------------------------------------------------------


@pytest.mark.parametrize("text,ms", [("250ms", 250), ("30s", 30_000), ("5m", 300_000), ("2h", 7_200_000), ("0ms", 0), ("1s", 1000)])
def test_duration_value_in_ms(text: str, ms: int) -> None:
    toks = lex_ok(text)
    assert kinds(toks) == [Kind.DURATION, Kind.EOF]
    assert toks[0].value == ms
    assert toks[0].text == text


def test_duration_requires_no_space() -> None:
    toks = lex_ok("5 s")
    assert [(t.kind, t.text) for t in toks[:2]] == [(Kind.INT, "5"), (Kind.IDENT, "s")]


# --- bad numbers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,code",
    [("5x", "F1005"), ("10sec", "F1005"), ("5min", "F1005"), ("1.5s", "F1005"), ("3.5e", "F1004"), ("1.2.3", "F1004")],
)
def test_bad_number_is_one_bad_token(text: str, code: str) -> None:
    toks, _docs, diags = lex(f"let a = {text}\nb")
    assert codes(diags) == [code]
    assert diags[0].span.text == text
    assert diags[0].span.start_pos.line == 1 and diags[0].span.start_pos.column == 9
    bad = [t for t in toks if t.kind is Kind.ERROR]
    assert len(bad) == 1 and bad[0].text == text
    # Lexing goes on after the bad token.
    assert (toks[-3].kind, toks[-2].text) == (Kind.NEWLINE, "b")


# --- strings --------------------------------------------------------------------------


def test_plain_string_value_and_parts() -> None:
    tok = one_string('"hello world"')
    assert tok.value == "hello world"
    assert tok.parts == ["hello world"]
    assert tok.text == '"hello world"'


def test_empty_string() -> None:
    tok = one_string('""')
    assert tok.value == ""
    assert [p for p in tok.parts if p] == []


@pytest.mark.parametrize(
    "escape,char",
    [(r"\n", "\n"), (r"\t", "\t"), (r"\"", '"'), (r"\\", "\\"), (r"\$", "$"), (r"\u0041", "A"), (r"\u00e9", "é"), (r"\u00E9", "é")],
)
def test_each_escape(escape: str, char: str) -> None:
    tok = one_string(f'"a{escape}b"')
    assert tok.value == f"a{char}b"


def test_all_escapes_together() -> None:
    tok = one_string(r'"\n\t\"\\\$\u263A"')
    assert tok.value == '\n\t"\\$\u263a'


def test_escaped_dollar_is_not_interpolation() -> None:
    tok = one_string(r'"\${x}"')
    assert tok.parts == ["${x}"]
    assert tok.value == "${x}"


def test_lone_dollar_is_literal() -> None:
    tok = one_string('"cost: $5 and $x"')
    assert tok.value == "cost: $5 and $x"


@pytest.mark.parametrize("body,bad", [(r"ab\qc", r"\q"), (r"x \u12G4", r"\u"), (r"\a", r"\a")])
def test_invalid_escape_has_a_narrow_span(body: str, bad: str) -> None:
    text = f'let s = "{body}"'
    toks, _docs, diags = lex(text)
    assert codes(diags) == ["F1009"]
    span = diags[0].span
    assert span.text == bad
    assert span.start == text.index(bad)
    # The string itself is still a token.
    assert Kind.STRING in kinds(toks)


def test_invalid_escape_after_an_interpolation() -> None:
    text = r'"${x} \q"'
    _toks, _docs, diags = lex(text)
    assert codes(diags) == ["F1009"]
    assert diags[0].span.text == r"\q"
    assert diags[0].span.start == text.index(r"\q")


def test_two_invalid_escapes_two_diagnostics() -> None:
    text = r'"\q and \w"'
    _toks, _docs, diags = lex(text)
    assert codes(diags) == ["F1009", "F1009"]
    assert [d.span.text for d in diags] == [r"\q", r"\w"]


def test_unterminated_string_at_end_of_line_is_f1002() -> None:
    text = 'let s = "abc\nlet t = 1'
    toks, _docs, diags = lex(text)
    assert codes(diags) == ["F1002"]
    assert diags[0].span.start == text.index('"')
    assert diags[0].span.start_pos.line == 1
    # The next line still lexes normally.
    assert texts(toks)[-5:] == ["let", "t", "=", "1", ""]


def test_unterminated_string_at_end_of_file_is_f1002() -> None:
    _toks, _docs, diags = lex('print "abc')
    assert codes(diags) == ["F1002"]
    assert "F1007" not in codes(diags)


def test_unterminated_string_with_interpolation_is_f1002() -> None:
    _toks, _docs, diags = lex('print "a ${x} b\nx')
    assert codes(diags) == ["F1002"]


def test_escaped_quote_does_not_terminate() -> None:
    _toks, _docs, diags = lex('"abc\\"\nx')
    assert codes(diags) == ["F1002"]


# --- interpolation ----------------------------------------------------------------------


def test_interpolation_parts() -> None:
    text = '"Hello ${name}, you are ${age + 1}!"'
    tok = one_string(text)
    assert tok.value is None
    assert len(tok.parts) == 5
    assert tok.parts[0] == "Hello "
    assert isinstance(tok.parts[1], Interpolation) and interp_text(text, tok.parts[1]) == "name"
    assert tok.parts[2] == ", you are "
    assert isinstance(tok.parts[3], Interpolation) and interp_text(text, tok.parts[3]) == "age + 1"
    assert tok.parts[4] == "!"


def test_interpolation_only() -> None:
    text = '"${x}"'
    tok = one_string(text)
    pieces = [p for p in tok.parts if p != ""]
    assert len(pieces) == 1 and isinstance(pieces[0], Interpolation)
    assert interp_text(text, pieces[0]) == "x"


def test_interpolation_with_nested_string_and_braces() -> None:
    text = '"a ${ {k: "}"}.k } b"'
    tok = one_string(text)
    interps = [p for p in tok.parts if isinstance(p, Interpolation)]
    assert len(interps) == 1
    assert interp_text(text, interps[0]) == ' {k: "}"}.k '
    assert tok.parts[0] == "a "
    assert tok.parts[-1] == " b"


def test_interpolation_with_nested_interpolating_string() -> None:
    text = '"${ "in ${b} ner" } out"'
    tok = one_string(text)
    interps = [p for p in tok.parts if isinstance(p, Interpolation)]
    assert [interp_text(text, p) for p in interps] == [' "in ${b} ner" ']
    assert tok.parts[-1] == " out"


def test_escapes_next_to_interpolation() -> None:
    text = r'"a\n${x}\t"'
    tok = one_string(text)
    assert tok.parts[0] == "a\n"
    assert isinstance(tok.parts[1], Interpolation) and interp_text(text, tok.parts[1]) == "x"
    assert tok.parts[2] == "\t"


def test_unterminated_interpolation_is_f1003() -> None:
    text = 'let s = "a ${ x\nlet t = 1'
    toks, _docs, diags = lex(text)
    assert codes(diags) == ["F1003"]
    assert diags[0].span.start == text.index("${")
    assert diags[0].span.text == "${"
    assert texts(toks)[-5:] == ["let", "t", "=", "1", ""]


def test_unterminated_interpolation_with_open_brace_inside() -> None:
    _toks, _docs, diags = lex('"a ${ {x: 1 }"\n')
    assert codes(diags) == ["F1003"]


# --- triple-quoted strings ----------------------------------------------------------------


def test_triple_dedent_rules() -> None:
    text = '"""\n    line1\n      line2\n    line3\n    """'
    tok = one_string(text)
    assert tok.value == "line1\n  line2\nline3"


def test_triple_first_line_kept_when_not_empty() -> None:
    tok = one_string('"""abc\n  def"""')
    # The first line has no indentation, so nothing is common.
    assert tok.value == "abc\n  def"


def test_triple_first_line_with_only_spaces_is_dropped() -> None:
    tok = one_string('"""   \n  a\n  b\n"""')
    assert tok.value == "a\nb"


def test_triple_last_line_kept_when_it_has_text() -> None:
    tok = one_string('"""\n  a\n  b"""')
    assert tok.value == "a\nb"


def test_triple_blank_lines_in_the_middle_do_not_count_for_indentation() -> None:
    tok = one_string('"""\n    a\n\n    b\n    """')
    assert tok.value == "a\n\nb"


def test_triple_whitespace_only_middle_line() -> None:
    tok = one_string('"""\n    a\n  \n    b\n    """')
    assert tok.value == "a\n\nb"


def test_triple_on_one_line() -> None:
    assert one_string('"""hi "there" """').value == 'hi "there" '


def test_triple_empty() -> None:
    tok = one_string('""""""')
    assert [p for p in tok.parts if p] == []


def test_triple_may_hold_quotes_and_newlines() -> None:
    tok = one_string('"""\n  say "hi"\n  ok\n  """')
    assert tok.value == 'say "hi"\nok'


def test_triple_with_interpolation() -> None:
    text = '"""\n    Hello ${name},\n      bye ${x}\n    """'
    tok = one_string(text)
    assert tok.value is None
    assert tok.parts[0] == "Hello "
    assert isinstance(tok.parts[1], Interpolation) and interp_text(text, tok.parts[1]) == "name"
    assert tok.parts[2] == ",\n  bye "
    assert isinstance(tok.parts[3], Interpolation) and interp_text(text, tok.parts[3]) == "x"
    assert [p for p in tok.parts[4:] if p] == []


def test_triple_interpolation_at_line_start_counts_as_text() -> None:
    text = '"""\n  ${x}\n  y\n  """'
    tok = one_string(text)
    pieces = [p for p in tok.parts if p != ""]
    assert isinstance(pieces[0], Interpolation) and interp_text(text, pieces[0]) == "x"
    assert pieces[1:] == ["\ny"]


def test_triple_escapes_are_processed() -> None:
    tok = one_string('"""\n  a\\tb\n  \\u0041\n  """')
    assert tok.value == "a\tb\nA"


def test_triple_spans_lines_in_token_span() -> None:
    text = 'x = """\n  a\n  """\ny'
    toks = lex_ok(text)
    s = next(t for t in toks if t.kind is Kind.STRING)
    assert s.span.text == '"""\n  a\n  """'
    assert s.span.start_pos.line == 1 and s.span.end_pos.line == 3
    assert toks[-2].span.start_pos.line == 4


def test_unterminated_triple_string_is_f1007() -> None:
    text = 'let s = """\n  abc\n  def\n'
    _toks, _docs, diags = lex(text)
    assert codes(diags) == ["F1007"]
    assert diags[0].span.start == text.index('"""')


def test_invalid_escape_in_triple_string_single_line() -> None:
    text = '"""a\\qb"""'
    _toks, _docs, diags = lex(text)
    assert codes(diags) == ["F1009"]
    assert diags[0].span.text == "\\q"



def test_invalid_escape_in_dedented_triple_string_points_at_the_escape() -> None:
    text = '"""\n    a\n    b \\q\n    """'
    _toks, _docs, diags = lex(text)
    assert codes(diags) == ["F1009"]
    assert diags[0].span.text == "\\q"
    assert diags[0].span.start_pos.line == 3
    assert diags[0].span.start_pos.column == 7


# --- comments ---------------------------------------------------------------------------


def test_comment_to_end_of_line() -> None:
    toks = lex_ok("a # comment with \"quote\" and ${x} and @\nb")
    assert [(t.kind, t.text) for t in toks] == [
        (Kind.IDENT, "a"), (Kind.NEWLINE, "\n"), (Kind.IDENT, "b"), (Kind.EOF, ""),
    ]


def test_comment_lines_do_not_add_newline_tokens() -> None:
    toks = lex_ok("a\n# one\n  # two\n\nb")
    assert kinds(toks) == [Kind.IDENT, Kind.NEWLINE, Kind.IDENT, Kind.EOF]


def test_hash_inside_string_is_not_a_comment() -> None:
    tok = one_string('"a # b"')
    assert tok.value == "a # b"


def test_doc_comments_are_collected_with_lines() -> None:
    _toks, docs, diags = lex("## First line\n##  Second line\n# plain\nagent A {}")
    assert diags == []
    assert [(d.line, d.text) for d in docs] == [(1, "First line"), (2, "Second line")]


def test_doc_comment_is_not_a_token() -> None:
    toks = lex_ok("## doc\nx")
    assert kinds(toks) == [Kind.IDENT, Kind.EOF]


def test_plain_comment_is_not_a_doc() -> None:
    _toks, docs, _ = lex("# not doc\nx")
    assert docs == []


# --- unexpected characters and brackets ------------------------------------------------


@pytest.mark.parametrize("ch", ["@", "!", "&", "'", "^", "~", "`", "\\", "$", "é"])
def test_unexpected_character_is_f1001(ch: str) -> None:
    text = f"let a = b {ch} c"
    toks, _docs, diags = lex(text)
    assert codes(diags) == ["F1001"]
    assert diags[0].span.text == ch
    assert diags[0].span.start == text.index(ch)
    assert texts(toks)[-2] == "c"


def test_non_ascii_digits_are_not_numbers() -> None:
    text = "let a = \u0663 1\u0663"
    toks, _docs, diags = lex(text)
    assert codes(diags) == ["F1001", "F1001"]
    assert [d.span.start for d in diags] == [8, 11]
    assert [(t.kind, t.text) for t in toks if t.kind is Kind.INT] == [(Kind.INT, "1")]


def test_bang_alone_is_unexpected_but_bang_equals_is_an_operator() -> None:
    toks, _docs, diags = lex("!x a != b")
    assert codes(diags) == ["F1001"]
    assert diags[0].span.start == 0 and diags[0].span.text == "!"
    assert "!=" in texts(toks)


def test_each_bad_character_reported_once() -> None:
    _toks, _docs, diags = lex("@ @\n!")
    assert codes(diags) == ["F1001", "F1001", "F1001"]
    assert [(d.span.start_pos.line, d.span.start_pos.column) for d in diags] == [(1, 1), (1, 3), (2, 1)]


@pytest.mark.parametrize("closer", [")", "]", "}"])
def test_unmatched_closing_bracket_is_f1008(closer: str) -> None:
    text = f"let a = 1 {closer}\nlet b = 2"
    _toks, _docs, diags = lex(text)
    assert codes(diags) == ["F1008"]
    assert diags[0].span.text == closer
    assert diags[0].span.start == text.index(closer)


def test_balanced_brackets_are_not_reported() -> None:
    lex_ok("f([{a: (1)}])")


def test_extra_closer_after_balanced_ones() -> None:
    text = "f(1))"
    _toks, _docs, diags = lex(text)
    assert codes(diags) == ["F1008"]
    assert diags[0].span.start == 4


# --- spans ------------------------------------------------------------------------------


def test_spans_are_one_based_and_point_at_the_token() -> None:
    text = 'let x = 1\n  print "a b" 30s\n\tfoo.bar'
    toks = lex_ok(text)
    got = [(t.text, t.span.start_pos.line, t.span.start_pos.column, t.span.text) for t in toks if t.kind is not Kind.NEWLINE]
    assert got == [
        ("let", 1, 1, "let"),
        ("x", 1, 5, "x"),
        ("=", 1, 7, "="),
        ("1", 1, 9, "1"),
        ("print", 2, 3, "print"),
        ('"a b"', 2, 9, '"a b"'),
        ("30s", 2, 15, "30s"),
        ("foo", 3, 2, "foo"),
        (".", 3, 5, "."),
        ("bar", 3, 6, "bar"),
        ("", 3, 9, ""),
    ]


def test_end_positions() -> None:
    toks = lex_ok("ab  cde")
    assert (toks[1].span.start_pos.column, toks[1].span.end_pos.column) == (5, 8)
    assert (toks[1].span.start, toks[1].span.end) == (4, 7)


def test_diagnostic_span_positions_are_one_based() -> None:
    _toks, _docs, diags = lex("a\n  b @")
    assert codes(diags) == ["F1001"]
    pos = diags[0].span.start_pos
    assert (pos.line, pos.column) == (2, 5)


def test_a_token_is_its_own_span_with_the_source_text_between_its_offsets() -> None:
    """`Token.span` is the token itself (no second object per token): so a token must be a
    span in every way a span is read — equal to and hashed as the `Span` of its offsets,
    its `text` the source's text between them (a diagnostic's caret, the source map) —
    for every kind of token, over a slice of the bench's file and bad tokens."""
    from flow_kernel.bench.frontend import flow_program
    from flow_kernel.source import Span

    text = flow_program(300) + '\nlet bad = 12abc + "x${a.b} ${f(1)}\\n" + """\n  t ${1}\n"""\n$\n'
    src = SourceFile("t.flow", text)
    tokens, _docs = tokenize(src, Reporter())
    kinds = {tok.kind for tok in tokens}
    assert {Kind.IDENT, Kind.KEYWORD, Kind.OP, Kind.STRING, Kind.INT, Kind.NEWLINE, Kind.ERROR, Kind.EOF} <= kinds
    for tok in tokens:
        span = tok.span
        plain = Span(src, tok.start, tok.end)
        assert span is tok and span.source is src
        assert span == plain and hash(span) == hash(plain)
        assert span.text == src.text[tok.start : tok.end] == tok.text
        assert span.to_json() == plain.to_json()

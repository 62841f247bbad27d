"""Display columns and carets (diagnostics/excerpt.py): what the text and HTML renderers
show under a span, computed once."""

from __future__ import annotations

from flow_kernel.diagnostics.excerpt import (
    TAB_WIDTH,
    char_width,
    display_line,
    excerpt,
    location,
    same_name,
)
from flow_kernel.source import SourceFile, Span


def span_of(text: str, needle: str) -> Span:
    source = SourceFile("/abs/prog.flow", text)
    start = text.index(needle)
    return Span(source, start, start + len(needle))


def test_widths_of_wide_combining_and_plain_characters() -> None:
    assert [char_width(c) for c in "a漢\u0301\u200b"] == [1, 2, 0, 0]


def test_a_tab_goes_to_the_next_stop_and_columns_follow_it() -> None:
    shown, columns = display_line("a\tb")
    assert shown == "a" + " " * (TAB_WIDTH - 1) + "b"
    assert columns == [0, 1, TAB_WIDTH, TAB_WIDTH + 1]


def test_a_control_character_is_shown_and_takes_its_stand_ins_width() -> None:
    shown, columns = display_line("\x1b[2J")
    assert "\x1b" not in shown
    assert columns[1] == char_width(shown[0]) >= 1


def test_carets_sit_under_the_span_after_wide_characters() -> None:
    line, shown, start, count = excerpt(span_of("x\nlet 漢 = tirage(1)\r\n", "tirage"))
    assert (line, shown) == (2, "let 漢 = tirage(1)")
    assert (start, count) == (9, 6)  # `漢` is two columns wide; the \r is no content


def test_an_empty_span_at_the_end_of_a_line_still_has_one_caret() -> None:
    source = SourceFile("p.flow", "abc\n")
    assert excerpt(Span(source, 3, 3)) == (1, "abc", 3, 1)


def test_a_span_over_several_lines_marks_the_rest_of_its_first() -> None:
    assert excerpt(span_of("let a = f(\n  1)\n", "f(\n  1)")) == (1, "let a = f(", 8, 2)


def test_location_names_the_file_as_the_caller_shows_it() -> None:
    span = span_of("x\n  y\n", "y")
    assert location(span, same_name) == "/abs/prog.flow:2:3"
    assert location(span, lambda name: name.rsplit("/", 1)[-1]) == "prog.flow:2:3"

"""What completion and inspection read of a cell (kernel/assist_cell.py): the names a
broken cell declares, the site of the cursor, the member path before it and its type."""

from __future__ import annotations

from flow_kernel.kernel.assist_cell import (
    analyse,
    blank_magics,
    cursor_site,
    member_path,
    path_type,
    team_of,
)
from flow_kernel.lang import SessionScope

CELL = '''type P = { name: string, tags: string[] }
let people: P[] = [{ name: "Ada", tags: [] }]
team crew { main: a, members: [b] }
agent a { model: "mock" }
agent b { model: "mock" }
'''


def test_magic_lines_are_blanked_without_moving_offsets() -> None:
    code = "%record x.json\nlet a = 1"
    blanked = blank_magics(code)
    assert len(blanked) == len(code) and blanked.endswith("\nlet a = 1") and "%" not in blanked


def test_a_cell_the_parser_gives_up_on_still_declares_its_names() -> None:
    cell = analyse("workflow w(first: int, second) {\n  let inner = \nagent helper {", SessionScope())
    assert {"first", "second", "inner"} <= cell.scanned_vars
    assert cell.decl_kinds()["helper"] == "agent" and cell.decl_kinds()["w"] == "workflow"


def test_the_site_is_the_word_being_written_and_nothing_inside_a_string_or_comment() -> None:
    cell = analyse(CELL + "peo", SessionScope())
    site = cursor_site(cell.src, 0, len(cell.src.text))
    assert site is not None and site.prefix == "peo"
    for text in (CELL + 'let s = "peo', CELL + "# peo"):
        assert cursor_site(analyse(text, SessionScope()).src, 0, len(text)) is None


def test_a_member_path_through_an_index_has_the_fields_type() -> None:
    text = CELL + "people[0].tags."
    cell = analyse(text, SessionScope())
    site = cursor_site(cell.src, 0, len(text))
    assert site is not None
    path = member_path(site.before)
    assert path is not None and path.segments == ["people", "[]", "tags"]
    assert str(path_type(cell, path)) == "string[]"
    assert member_path(site.before[:-1]) is None  # not after a `.`


def test_a_team_is_read_from_its_declaration() -> None:
    assert team_of(analyse(CELL, SessionScope()), "crew") == ("a", ["b"])
    assert team_of(analyse(CELL, SessionScope()), "people") is None

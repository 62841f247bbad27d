"""`publish primary NAME e` (docs/language-guide.md "Artifacts"): parsed as a modifier only
before a string, F6010 for a second one the checker sees on one path, none for two in the
arms of one `if` or after an arm that returns; a second one reached at run time stops the
run with `limit-exceeded`; the outcome, the summary and the run's JSON show it first."""

from __future__ import annotations

import io

import pytest

from flow_kernel import SourceFile, check
from flow_kernel.lang import ast
from flow_kernel.runtime.events.terminal import TerminalProgress
from flow_kernel.runtime.session import Session
from flow_kernel.views.run_html import render_html
from flow_kernel.views.run_model import RunModel
from flow_kernel.views.run_stream import Compactor


def codes(text: str) -> list[str]:
    return [d.code for d in check(SourceFile("p.flow", text)).diagnostics]


def publish_of(text: str) -> ast.Publish:
    module = check(SourceFile("p.flow", text)).module
    return next(s for s in module.statements if isinstance(s, ast.Publish))


def test_primary_is_a_modifier_only_before_a_string() -> None:
    marked = publish_of('publish primary "notes.md" "text"')
    assert marked.primary and isinstance(marked.name, ast.StrLit)
    plain = publish_of('let primary = "notes.md"\nlet body = "text"\npublish primary body')  # a variable `primary`
    assert not plain.primary and isinstance(plain.name, ast.Name) and plain.name.name == "primary"
    assert codes('let primary = "notes.md"\npublish (primary) "text"') == []  # before a string: in parentheses


def test_a_second_primary_on_one_path_is_f6010_with_the_first_related() -> None:
    text = 'publish primary "a.md" "A"\nif true {\n  publish primary "b.md" "B"\n}\n'
    (diag,) = check(SourceFile("p.flow", text)).diagnostics
    assert diag.code == "F6010" and diag.span.start == text.index('publish primary "b.md"')
    assert diag.related[0].span.start == 0


@pytest.mark.parametrize("text", [
    'if true {\n  publish primary "a.md" "A"\n} else {\n  publish primary "b.md" "B"\n}\n',
    'if true {\n  publish primary "a.md" "A"\n} else if false {\n  publish primary "b.md" "B"\n} else {\n'
    '  publish primary "c.md" "C"\n}\n',
    'workflow w(x: int) -> string {\n  if x > 1 {\n    publish primary "a.md" "A"\n    return "a"\n  }\n'
    '  publish primary "b.md" "B"\n  return "b"\n}\n',
    'workflow a() -> int {\n  publish primary "a.md" "A"\n  return 1\n}\n'
    'workflow b() -> int {\n  publish primary "b.md" "B"\n  return 2\n}\n',  # two entry points, one each
    'publish "a.md" "A"\npublish "b.md" "B"\npublish primary "c.md" "C"\n',
])
def test_primaries_that_never_both_run_are_fine(text: str) -> None:
    assert codes(text) == []


def test_after_an_arm_that_returns_the_rest_is_the_other_arm_but_not_beyond_its_block() -> None:
    text = ('workflow w(x: int) -> string {\n  if x > 1 {\n    if x > 2 {\n      publish primary "a.md" "A"\n'
            '      return "a"\n    }\n    publish primary "b.md" "B"\n  }\n  publish primary "c.md" "C"\n  return "c"\n}\n')
    assert codes(text) == ["F6010"]  # c follows b on the path where x is 2


def run(text: str):  # type: ignore[no-untyped-def]
    return Session(sandbox=False, journal_dir=None).run(text)


def test_a_second_primary_at_run_time_is_limit_exceeded_naming_the_first() -> None:
    outcome = run('for i in range(2) {\n  publish primary "n${i}.md" "x"\n}\n')
    assert outcome.error is not None and outcome.error.code == "limit-exceeded"
    assert outcome.error.details == {"limit": "primary", "value": 1, "first": "n0.md", "name": "n1.md"}
    assert outcome.error.span is not None and outcome.error.span["line"] == 2
    assert outcome.primary == {"name": "n0.md", "text": "x"}


def test_the_outcome_json_and_the_summary_show_the_primary_first() -> None:
    outcome = run('publish "a.md" "other"\npublish primary "notes.md" "# Notes <script>x</script>"\n'
                  'publish "b.json" {n: 1}\n"done"')
    assert outcome.primary == {"name": "notes.md", "text": "# Notes <script>x</script>"}
    assert outcome.to_json() == {"ok": True, "result": "done", "run": outcome.run_id, "primary": outcome.primary}
    model = RunModel.from_events(outcome.events)
    lines = model.text().splitlines()
    assert lines[:2] == ["Flow run: completed", "primary: notes.md"]
    assert "  published notes.md (primary)" in lines
    html = render_html(model)
    assert html.index("★ primary <code>notes.md</code>") < html.index("workflow")
    assert "<script>" not in html and "&lt;script&gt;" in html  # the text is data: sanitised Markdown
    terminal = TerminalProgress(io.StringIO())
    shown = [terminal.line(e) for e in outcome.events if e["type"] == "artifact.published"]
    assert shown == ["  ⇪ published a.md", "  ⇪ published notes.md (primary)", "  ⇪ published b.json"]
    json_primary = run('publish primary "r.json" {n: 1}\n1').primary
    assert json_primary == {"name": "r.json", "json": {"n": 1}}
    assert run('publish "a.md" "A"\n1').to_json().get("primary") is None


def test_the_live_view_record_marks_only_the_primary() -> None:
    def event(**data: object) -> dict[str, object]:
        return {"type": "artifact.published", "span": {"id": "s1", "parent": None}, "data": data,
                "ts": "2026-01-01T00:00:01+00:00"}

    compact = Compactor()
    assert compact.record(event(name="a.md", text="x")) == {"record": "artifact", "id": "s1", "time": 0, "name": "a.md"}
    marked = compact(event(name="r.md", text="x", primary=True))
    assert marked is not None and marked["pm"] is True and marked["n"] == "r.md"  # the wire's key (views/wire.py)

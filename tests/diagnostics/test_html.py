"""The diagnostics view (runtime.md §9): from real checker output, the bundle's text is
`render_text`'s and deterministic; its HTML is well-formed, escaped, self-contained and
carries every part (badge, code, message, location, excerpt with caret, related spans,
hints, the explanation in a `<details>`)."""

from __future__ import annotations

import html
import html.parser
import re
from dataclasses import dataclass, field

from flow_kernel import SourceFile, check
from flow_kernel.diagnostics import REGISTRY, Diagnostic, Related, Severity, render_text
from flow_kernel.diagnostics.html import diagnostics_bundle, render_html, summary_line

BROKEN = """type Ticket = { title: string, body: string }
agent triager { model: "scripted", output: string }
let attempts = 1
attempts = 2
let total: int = "a < b & c"
print triagr("hi")
"""

VOID = {"br", "hr", "img", "input", "meta", "link", "wbr", "col", "area", "base", "source"}


def _check(text: str = BROKEN, name: str = "triage.flow") -> list[Diagnostic]:
    return list(check(SourceFile(name, text)).diagnostics)


# --- a tiny DOM, enough to check structure and read text back ------------------------------


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self) -> list[Node]:
        out = [self]
        for c in self.children:
            if isinstance(c, Node):
                out += c.iter()
        return out

    def find_all(self, tag: str, cls: str | None = None) -> list[Node]:
        return [n for n in self.iter()[1:] if n.tag == tag and (cls is None or cls in n.classes)]

    def find(self, tag: str, cls: str | None = None) -> Node:
        found = self.find_all(tag, cls)
        assert found, f"no <{tag} class={cls}>"
        return found[0]

    def children_tags(self) -> list[str]:
        return [c.tag for c in self.children if isinstance(c, Node)]


class TreeBuilder(html.parser.HTMLParser):
    """Builds a `Node` tree and fails on any unbalanced or mismatched tag."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        assert tag not in VOID, f"end tag for void <{tag}>"
        assert len(self.stack) > 1, f"stray </{tag}>"
        open_tag = self.stack.pop().tag
        assert open_tag == tag, f"</{tag}> closes <{open_tag}>"

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(markup: str) -> Node:
    builder = TreeBuilder()
    builder.feed(markup)
    builder.close()
    assert builder.stack == [builder.root], f"unclosed: {[n.tag for n in builder.stack[1:]]}"
    return builder.root


def sections(root: Node) -> list[Node]:
    return root.find_all("section", "flow-diagnostic")


def by_code(root: Node, code: str) -> Node:
    found = [s for s in sections(root) if s.attrs.get("data-code") == code]
    assert len(found) == 1, code
    return found[0]


# --- the checker output these tests rely on ------------------------------------------------


def test_the_broken_program_reports_what_the_view_needs() -> None:
    diags = _check()
    codes = [d.code for d in diags]
    assert {"F7002", "F2004", "F3001", "F2001"} <= set(codes)
    f2004 = next(d for d in diags if d.code == "F2004")
    assert f2004.related and f2004.hints
    f2001 = next(d for d in diags if d.code == "F2001")
    assert any("did you mean" in h for h in f2001.hints)
    f3001 = next(d for d in diags if d.code == "F3001")
    assert "<" in f3001.message and "&" in f3001.message and "`" in f3001.message


# --- text/plain ----------------------------------------------------------------------------


def test_text_plain_is_render_text_and_deterministic() -> None:
    first = diagnostics_bundle(_check(), title="cell 1")
    second = diagnostics_bundle(_check(), title="cell 1")
    assert set(first) == {"text/plain", "text/html"}
    assert first["text/plain"] == render_text(_check())
    assert first["text/plain"] == render_text(_check(), color=False)
    assert "\x1b" not in first["text/plain"]
    assert first == second  # the HTML too: no ids, counters or timestamps


def test_empty_bundle() -> None:
    bundle = diagnostics_bundle([])
    assert bundle["text/plain"] == "no diagnostics\n"
    root = parse(bundle["text/html"])
    assert root.find("p", "flow-summary").text() == "no diagnostics"
    assert sections(root) == []


# --- text/html: structure ------------------------------------------------------------------


def test_html_is_well_formed_self_contained_and_scoped() -> None:
    markup = render_html(_check())
    root = parse(markup)
    assert root.children_tags() == ["div"]
    top = root.find("div", "flow-diagnostics")
    assert top.children_tags()[:2] == ["style", "p"]
    lowered = markup.lower()
    for banned in ("<script", "<link", "<img", "<iframe", "src=", "href=", "url(", "@import", "http"):
        assert banned not in lowered, banned
    assert not [a for n in root.iter() for a in n.attrs if a.startswith("on")]
    assert " id=" not in markup
    style = top.find("style").text()
    selectors = [s.strip() for rule in re.findall(r"([^{}]+)\{", style) for s in rule.split(",")]
    assert selectors and all(s.startswith(".flow-diagnostics") for s in selectors), selectors


def test_summary_line_counts_by_severity() -> None:
    diags = _check()
    errors = sum(d.severity is Severity.ERROR for d in diags)
    warnings = sum(d.severity is Severity.WARNING for d in diags)
    expected = f"{errors} errors, {warnings} warning" + ("s" if warnings != 1 else "")
    assert summary_line(diags) == expected
    root = parse(render_html(diags))
    assert root.find("p", "flow-summary").text() == expected
    info = Diagnostic("F7007", Severity.INFO, "x", diags[0].span)
    assert summary_line([diags[0], info, info]) == "1 warning, 2 info"


def test_title_is_escaped() -> None:
    root = parse(render_html(_check(), title="cell <3> & more"))
    assert root.find("p", "flow-title").text() == "cell <3> & more"
    assert "cell &lt;3&gt; &amp; more" in render_html(_check(), title="cell <3> & more")


def test_one_section_per_diagnostic_in_order() -> None:
    diags = _check()
    root = parse(render_html(diags))
    assert [s.attrs["data-code"] for s in sections(root)] == [d.code for d in diags]
    for s, d in zip(sections(root), diags, strict=True):
        assert f"flow-{d.severity.value}" in s.classes


def test_header_has_badge_code_message_and_location() -> None:
    diags = _check()
    root = parse(render_html(diags))
    for s, d in zip(sections(root), diags, strict=True):
        header = s.find("p", "flow-header")
        badge = header.find("strong", "flow-badge")
        assert badge.text() == d.severity.value
        assert f"flow-badge-{d.severity.value}" in badge.classes
        assert header.find("code", "flow-code").text() == d.code
        # backticked parts become <code>, the text reads back unchanged otherwise
        assert header.find("span", "flow-message").text() == d.message.replace("`", "")
        p = d.span.start_pos
        assert header.find("span", "flow-location").find("code").text() == f"triage.flow:{p.line}:{p.column}"
    warning = next(s for s in sections(root) if s.attrs["data-code"] == "F7002")
    assert "flow-badge-warning" in warning.find("strong", "flow-badge").classes


def test_messages_are_escaped() -> None:
    markup = render_html(_check())
    f3001 = next(d for d in _check() if d.code == "F3001")
    assert f3001.message == 'expected `int`, found `"a < b & c"`'
    assert "found <code>&quot;a &lt; b &amp; c&quot;</code>" in markup
    assert '"a < b' not in markup and "< b &" not in markup
    # the source excerpt is escaped as well
    excerpt = by_code(parse(markup), "F3001").find("pre", "flow-excerpt")
    assert excerpt.find("mark").text() == '"a < b & c"'


def test_excerpt_matches_render_text_and_marks_the_span() -> None:
    diags = _check()
    root = parse(render_html(diags))
    for s, d in zip(sections(root), diags, strict=True):
        # excerpts: the primary one, then one per related span, as in the text output
        pres = s.find_all("pre", "flow-excerpt")
        assert len(pres) == 1 + len(d.related)
        text_block = render_text([d]).splitlines()
        text_excerpts = [line[2:] for line in text_block if re.match(r"^  +(\d+ )?\|", line)]
        html_excerpts = [line for pre in pres for line in pre.text().splitlines()]
        assert html_excerpts == text_excerpts
        primary = pres[0]
        assert primary.find("mark", "flow-span").text() == d.span.text
        assert primary.find("span", "flow-caret").text() == "^" * len(d.span.text)
        gutters = [g.text() for g in primary.find_all("span", "flow-gutter")]
        assert gutters[0].split()[0] == str(d.span.start_pos.line)


def test_related_spans_have_their_message_location_and_excerpt() -> None:
    root = parse(render_html(_check()))
    f2004 = by_code(root, "F2004")
    notes = f2004.find("ul", "flow-related").find_all("li", "flow-note")
    assert len(notes) == 1
    note = notes[0]
    assert note.find("strong").text() == "note"
    assert note.find("span", "flow-message").text() == "bound here"
    assert note.find("span", "flow-location").text() == "triage.flow:3:5"
    assert note.find("pre", "flow-excerpt").find("mark").text() == "attempts"
    assert "3 | let attempts = 1" in note.find("pre").text()
    # the primary excerpt is the assignment on line 4
    assert f2004.find("pre").find("mark").text() == "attempts"
    assert f2004.find("pre").text().startswith("4 | attempts = 2")
    assert by_code(root, "F3001").find_all("ul", "flow-related") == []


def test_hints_are_a_list() -> None:
    root = parse(render_html(_check()))
    hints = by_code(root, "F2001").find("ul", "flow-hints").find_all("li", "flow-hint")
    assert [h.text() for h in hints] == ["hint: did you mean triager?"]
    assert hints[0].find("code").text() == "triager"
    f2004 = by_code(root, "F2004").find("ul", "flow-hints")
    assert f2004.find("li").text() == "hint: declare it with var attempts = …"
    assert by_code(root, "F3001").find_all("ul", "flow-hints") == []


def test_explanation_is_collapsed_in_details() -> None:
    diags = _check()
    markup = render_html(diags)
    root = parse(markup)
    for s, d in zip(sections(root), diags, strict=True):
        details = s.find("details", "flow-explain")
        assert "open" not in details.attrs
        assert details.children_tags()[0] == "summary"
        assert details.find("summary").text() == f"Explain {d.code}"
        info = REGISTRY[d.code]
        body = details.find("div", "flow-explanation")
        assert body.find("strong").text() == info.severity.value
        first_words = " ".join(info.explanation.split()[:6]).replace("`", "")
        assert first_words in " ".join(body.text().split())
        codes = [c.text() for c in body.find_all("pre")]
        assert codes == [info.failing.strip("\n"), info.fixed.strip("\n")]
    # the example code is escaped (F3001's failing example has quotes)
    assert 'let total: int = &quot;three&quot;' in markup


def test_unknown_code_has_no_explanation() -> None:
    span = _check()[0].span
    d = Diagnostic("X0000", Severity.ERROR, "made up <x>", span, hints=("a & b",))
    root = parse(render_html([d]))
    s = by_code(root, "X0000")
    assert s.find_all("details") == []
    assert s.find("span", "flow-message").text() == "made up <x>"
    assert s.find("li", "flow-hint").text() == "hint: a & b"


# --- display details -----------------------------------------------------------------------


def test_wide_characters_and_tabs_line_up_with_the_text_output() -> None:
    src = SourceFile("wide.flow", 'let s = "名前";\tprint undefinedname\n')
    diags = list(check(src).diagnostics)
    d = next(d for d in diags if d.code == "F2001")
    pre = parse(render_html([d])).find("pre", "flow-excerpt")
    text_lines = [line[2:] for line in render_text([d]).splitlines()[1:3]]
    assert pre.text().splitlines() == text_lines
    assert pre.find("mark").text() == "undefinedname"


def test_related_span_in_another_file_and_display_name() -> None:
    a = SourceFile("/abs/a.flow", "let x = 1\n")
    b = SourceFile("/abs/b.flow", "\n\n\n\n\n\n\n\n\n\nlet y = x <& 2\n")
    d = Diagnostic(
        "F2003", Severity.ERROR, "`x` <declared> twice", b.span(b.text.index("x"), b.text.index("x") + 1),
        related=(Related(a.span(4, 5), "first <declared> here"),),
    )
    bundle = diagnostics_bundle([d], display_name=lambda name: name.rsplit("/", 1)[-1])
    assert bundle["text/plain"] == render_text([d], display_name=lambda name: name.rsplit("/", 1)[-1])
    root = parse(bundle["text/html"])
    s = by_code(root, "F2003")
    assert s.find("span", "flow-location").text() == "at b.flow:11:9"
    note = s.find("li", "flow-note")
    assert note.find("span", "flow-location").text() == "a.flow:1:5"
    assert note.find("span", "flow-message").text() == "first <declared> here"
    # one gutter width for the whole diagnostic, as in the text output
    assert note.find("pre").text().splitlines()[0] == " 1 | let x = 1"
    assert "/abs/" not in bundle["text/html"]
    assert html.escape("<&") in bundle["text/html"]


def test_the_looks_survive_without_the_stylesheet() -> None:
    """Sanitisers drop `<style>` (an untrusted notebook in JupyterLab, GitHub): the badge,
    the section's border, the excerpt and the marked span carry inline styles too, from a
    fixed table, which the safelist check of tests/security accepts (issue 18)."""
    from flow_kernel.diagnostics.html import STYLE, render_html
    from tests.security.markup_check import live_markup, view_policy

    src = SourceFile("<cell>", "let x = 1 +\n")
    d = Diagnostic("F1006", Severity.ERROR, "expected an expression", src.span(10, 11))
    out = render_html([d]).replace(STYLE, "")  # what a sanitiser leaves
    assert '<strong class="flow-badge flow-badge-error" style="display:inline-block;' in out
    assert "background:#cf222e" in out and "border-left:4px solid #cf222e" in out
    assert '<pre class="flow-excerpt" style="background:#f6f8fa;' in out and 'style="background:#ffebe9"' in out
    assert live_markup(out, view_policy()) == []

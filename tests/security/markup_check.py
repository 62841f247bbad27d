"""Is there live markup in an output? An HTML parser reads the fragment as a browser would
and reports every element, attribute or address outside an allow-list — independent of
the lists in flow_kernel/markup.py, so a too-generous safelist there fails here.

`live_markup(html, policy)` returns the findings (empty: nothing live). `bundle_findings`
judges a whole MIME bundle the way JupyterLab shows a live kernel's output: `text/html`
as it is and `text/markdown` rendered with its HTML passed through and every link kept,
which is what the old artifact path (raw `text/markdown`) gave the page.
"""

from __future__ import annotations

import html.parser
import re
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt

SAFE_SCHEMES = {"http", "https", "mailto"}
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "data", "poster", "background", "srcset"}


@dataclass(frozen=True)
class Policy:
    tags: frozenset[str]
    attributes: dict[str, frozenset[str]]  # tag -> allowed attributes ("*": on every tag)
    styles: frozenset[str] = frozenset()  # the exact <style> texts allowed (the views' own)
    classes: bool = False  # `class` values must then be plain words
    inline_styles: bool = False  # `style=` allowed, each declaration a plain property and value (SAFE_STYLE)


# What sanitised Markdown may contain.
MARKDOWN = Policy(
    tags=frozenset({"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "code", "em",
                    "strong", "s", "del", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td"}),
    attributes={"a": frozenset({"href", "title", "rel"}), "ol": frozenset({"start"})},
)


def view_policy(*styles: str) -> Policy:
    """What the run view, the diagnostics view and `<pre>` text outputs may contain. Inline
    styles (the run summary's, which must survive sanitisers that drop `<style>`) only as
    declarations of a known property with a value of colours, lengths and words: no url(),
    no expression(), no quotes, nothing from data could be one of them unescaped."""
    return Policy(
        tags=frozenset({"style", "div", "header", "section", "p", "span", "strong", "em", "mark", "ul", "li",
                        "details", "summary", "progress", "pre", "code"}),
        attributes={"*": frozenset({"class", "style"}), "details": frozenset({"class", "open", "style"}),
                    "progress": frozenset({"value", "max"}), "section": frozenset({"class", "data-code", "style"})},
        styles=frozenset(s.removeprefix("<style>").removesuffix("</style>") for s in styles),
        classes=True,
        inline_styles=True,
    )


SAFE_STYLE_PROPERTIES = frozenset({
    "font-family", "font-size", "font-weight", "line-height", "color", "background", "border", "border-left",
    "border-radius", "padding", "padding-left", "margin", "margin-left", "margin-bottom", "max-width", "text-align",
    "display", "width", "height", "overflow", "vertical-align", "white-space"})
SAFE_STYLE_VALUE = re.compile(r"[#\w .%,-]+")


def style_findings(value: str) -> list[str]:
    findings = []
    for declaration in filter(None, (d.strip() for d in value.split(";"))):
        prop, colon, val = declaration.partition(":")
        if not colon or prop.strip() not in SAFE_STYLE_PROPERTIES or not SAFE_STYLE_VALUE.fullmatch(val.strip()) \
                or re.search(r"url|expression|import|\\", val, re.IGNORECASE):
            findings.append(f"style {declaration[:80]!r}")
    return findings


class _Reader(html.parser.HTMLParser):
    def __init__(self, policy: Policy) -> None:
        super().__init__(convert_charrefs=True)
        self.policy = policy
        self.findings: list[str] = []
        self._in_style = False
        self._style_text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        policy = self.policy
        if tag not in policy.tags:
            self.findings.append(f"element <{tag}>")
        allowed = policy.attributes.get(tag, policy.attributes.get("*", frozenset()))
        for name, value in attrs:
            if name.startswith("on"):
                self.findings.append(f"event handler {name}= on <{tag}>")
            elif name not in allowed:
                self.findings.append(f"attribute {name}= on <{tag}>")
            if name in URL_ATTRIBUTES and value is not None and not _safe_url(value):
                self.findings.append(f"address {value!r} in {name}= on <{tag}>")
            if name == "style" and value is not None:
                self.findings.extend(style_findings(value) if policy.inline_styles else [f"style= on <{tag}>"])
            if name == "class" and policy.classes and value is not None and not re.fullmatch(r"[\w -]*", value):
                self.findings.append(f"class {value!r} on <{tag}>")
            if tag == "progress" and name in ("value", "max") and not re.fullmatch(r"-?[\d.e+-]*", value or ""):
                self.findings.append(f"{name}={value!r} on <progress>")
        if tag == "style":
            self._in_style, self._style_text = True, ""

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag == "style":
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "style" and self._in_style:
            self._in_style = False
            if self._style_text not in self.policy.styles:
                self.findings.append(f"a <style> of its own: {self._style_text[:80]!r}")

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self._style_text += data

    def handle_decl(self, decl: str) -> None:
        self.findings.append(f"declaration <!{decl}>")

    def unknown_decl(self, data: str) -> None:
        self.findings.append(f"declaration <![{data}]>")

    def handle_pi(self, data: str) -> None:
        self.findings.append(f"processing instruction <?{data}>")


def _safe_url(value: str) -> bool:
    # Browsers drop ASCII whitespace and controls inside a scheme ("jav\tascript:"); so do we.
    cleaned = re.sub(r"[\x00-\x20]", "", value).lower()
    scheme = re.match(r"([a-z][a-z0-9+.-]*):", cleaned)
    if scheme is None:
        return ":" not in cleaned.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]  # relative
    return scheme.group(1) in SAFE_SCHEMES


def live_markup(fragment: str, policy: Policy) -> list[str]:
    """Every element, attribute, address or style outside `policy` in `fragment`."""
    reader = _Reader(policy)
    reader.feed(fragment)
    reader.close()
    findings = reader.findings
    # A second, cruder look that does not depend on how the parser recovers from junk:
    # every `<name` that starts a tag must name an allowed element.
    for name in re.findall(r"<\s*/?\s*([A-Za-z][^\s/>]*)", fragment):
        if name.lower() not in policy.tags:
            findings.append(f"tag text <{name}")
    return findings


def jupyterlab_markdown(text: str) -> str:
    """Markdown as JupyterLab shows a live kernel's `text/markdown`: its HTML passed
    through and links kept whatever their scheme (the page sanitises nothing it trusts)."""
    md = MarkdownIt("commonmark", {"html": True})
    md.validateLink = lambda url: True  # type: ignore[method-assign]
    return md.render(text)


def bundle_findings(bundle: dict[str, Any], policy: Policy = MARKDOWN) -> list[str]:
    """What would be live in the page if JupyterLab showed `bundle`."""
    findings: list[str] = []
    if "text/markdown" in bundle:
        findings += [f"text/markdown: {f}" for f in live_markup(jupyterlab_markdown(str(bundle["text/markdown"])), policy)]
    if "text/html" in bundle:
        findings += [f"text/html: {f}" for f in live_markup(str(bundle["text/html"]), policy)]
    return findings

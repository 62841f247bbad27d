"""The one way text becomes HTML: every `text/html` the kernel, `%%flow`, the views and the
diagnostics emit is built with `escape` or comes out of `markdown_html` (docs/security.md,
"No markup from data").

JupyterLab does not sanitise the outputs of a live kernel: what a kernel sends as
`text/html` or `text/markdown` is put into the page as it is, scripts and `onerror`
handlers included, and a script in the page can start a Python kernel through the
server's REST API. Strings that reach an output — an artifact a program publishes, an
agent's reply, a name or a status in a run event (a bypassed sandbox can forge any of
them), a doc comment — are data, never markup. So:

- `escape(value)` is the only escaping helper: any value as text that is inert inside an
  element and inside a double- or single-quoted attribute.
- `markdown_html(text)` renders Markdown on the host with markdown-it-py (CommonMark, raw
  HTML off, images off) and then cleans the result with nh3 (Rust's ammonia) against a
  safelist: structural tags only, links only to http, https, mailto or a relative
  address, each with `rel="noopener noreferrer nofollow"`. Two layers on purpose: the
  renderer never produces raw HTML from the text, and the sanitiser removes whatever a
  renderer bug might still let through.

This module sits at the bottom of the package, beside `source.py`, because the pure
`diagnostics` layer escapes with it too; it reads no files and imports its two
libraries only when Markdown is first rendered (so `flow check` does not pay for them).
"""

from __future__ import annotations

import html
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["ALLOWED_ATTRIBUTES", "ALLOWED_TAGS", "LINK_REL", "URL_SCHEMES", "escape", "markdown_html"]

# What rendered Markdown may contain. No `img` (a remote image is a request the reader did
# not choose: a reply could leak what it read through the address), no `style`, `script`,
# `iframe`, `form`, `input`, `svg`, `math`, no `class`, `id` or `style` attributes (page
# styles and DOM clobbering), no event handlers.
ALLOWED_TAGS = frozenset({
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "code",
    "em", "strong", "s", "del", "ul", "ol", "li", "a",
    "table", "thead", "tbody", "tr", "th", "td",
})
ALLOWED_ATTRIBUTES: dict[str, set[str]] = {"a": {"href", "title"}, "ol": {"start"}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})  # and relative addresses
LINK_REL = "noopener noreferrer nofollow"


def escape(value: Any) -> str:
    """`value` as HTML text (None as ""): `& < > " '` escaped, so it is inert in element
    content and in quoted attribute values alike."""
    return html.escape("" if value is None else str(value), quote=True)


def markdown_html(text: str) -> str:
    """Markdown as sanitised HTML: safe to send as `text/html` whoever wrote `text`."""
    return _clean(_markdown().render(str(text)))


@cache
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt

    # "commonmark" with html=False: `<tag>` in the text is shown as text, never passed
    # through. Tables and strikethrough are the two GFM extensions people write in reports.
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable("image")  # `![alt](src)` shows as "!" and a link: no request without a click
    return md


def _clean(rendered: str) -> str:
    import nh3

    return nh3.clean(
        rendered,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel=LINK_REL,
        strip_comments=True,
        clean_content_tags={"script", "style"},
    )

"""Diagnostics as HTML (runtime.md §9): the one HTML renderer, and the notebook's MIME bundle.

It sits in the pure `diagnostics` layer beside the text and JSON renderers (render.py),
whose display columns and excerpts it shares, so the HTML lines up with `flow check`'s
text; every piece of text is escaped with `flow_kernel.markup.escape`.

`diagnostics_bundle` returns `{"text/plain", "text/html"}`. The text is exactly what
`render_text` prints (no colour), so nbval compares stable text. The HTML is
self-contained (one `<style>` scoped under `.flow-diagnostics`, no scripts, nothing
fetched) and semantic, so it still reads well where styles are stripped (GitHub,
nbconvert): `<strong>` severities, `<code>` codes, `<pre>` excerpts with a text caret
line under a `<mark>`ed span, `<ul>` notes and hints, and a collapsed `<details>` with
the code's explanation. Both forms are deterministic: no ids, counters or timestamps.

Outline of the HTML:

    div.flow-diagnostics
      style
      p.flow-title > strong                   (only with `title`)
      p.flow-summary > strong                 "2 errors, 1 warning"
      section.flow-diagnostic.flow-<sev>[data-code]   (one per diagnostic)
        p.flow-header
          strong.flow-badge.flow-badge-<sev>  "error"
          code.flow-code                      "F2001"
          span.flow-message                   (`x` in messages becomes <code>x</code>)
          span.flow-location > code           "file:line:col"
        pre.flow-excerpt                      gutter, source line with mark.flow-span,
                                              caret line with span.flow-caret
        ul.flow-related > li.flow-note        (only with related spans)
          strong "note" · span.flow-location > code · span.flow-message · pre.flow-excerpt
        ul.flow-hints > li.flow-hint          (only with hints)
          strong "hint" · span.flow-message
        details.flow-explain                  (only for registered codes)
          summary "Explain F2001"
          div.flow-explanation                (the explanation as simple HTML)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from flow_kernel.diagnostics.excerpt import (
    DisplayName,
    char_width,
    display_line,
    excerpt,
    location,
    same_name,
)
from flow_kernel.diagnostics.explain import explain_markdown
from flow_kernel.diagnostics.model import Diagnostic, Severity
from flow_kernel.diagnostics.registry import lookup
from flow_kernel.diagnostics.render import render_text
from flow_kernel.markup import escape as _e
from flow_kernel.source import Span

__all__ = ["STYLE", "diagnostics_bundle", "render_html", "summary_line"]

STYLE = """<style>
.flow-diagnostics{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;
  line-height:1.45;color:var(--jp-content-font-color1,inherit);max-width:980px}
.flow-diagnostics .flow-title,.flow-diagnostics .flow-summary{margin:2px 0 6px}
.flow-diagnostics .flow-diagnostic{border:1px solid var(--jp-border-color2,#d0d7de);
  border-left:4px solid #6e7781;border-radius:6px;padding:6px 10px;margin:6px 0}
.flow-diagnostics .flow-error{border-left-color:#cf222e}
.flow-diagnostics .flow-warning{border-left-color:#bf8700}
.flow-diagnostics .flow-info{border-left-color:#0969da}
.flow-diagnostics .flow-header{margin:0 0 4px}
.flow-diagnostics .flow-badge{display:inline-block;border-radius:10px;padding:0 8px;
  color:#fff;background:#6e7781;font-size:12px;text-transform:uppercase}
.flow-diagnostics .flow-badge-error{background:#cf222e}
.flow-diagnostics .flow-badge-warning{background:#9a6700}
.flow-diagnostics .flow-badge-info{background:#0969da}
.flow-diagnostics .flow-code{font-weight:600}
.flow-diagnostics .flow-location{color:var(--jp-content-font-color2,#57606a);font-size:12px}
.flow-diagnostics pre.flow-excerpt{background:var(--jp-layout-color2,#f6f8fa);
  color:var(--jp-content-font-color1,inherit);padding:4px 8px;border-radius:4px;margin:2px 0 4px;
  overflow-x:auto;white-space:pre;font-family:var(--jp-code-font-family,ui-monospace,monospace)}
.flow-diagnostics .flow-gutter{color:var(--jp-content-font-color3,#8c959f);user-select:none}
.flow-diagnostics mark.flow-span{background:rgba(207,34,46,.18);color:inherit;border-radius:2px}
.flow-diagnostics .flow-warning mark.flow-span{background:rgba(191,135,0,.22)}
.flow-diagnostics .flow-info mark.flow-span{background:rgba(9,105,218,.16)}
.flow-diagnostics .flow-note mark.flow-span{background:rgba(9,105,218,.16)}
.flow-diagnostics .flow-caret{color:#cf222e;font-weight:600}
.flow-diagnostics .flow-warning .flow-caret{color:#9a6700}
.flow-diagnostics .flow-info .flow-caret,.flow-diagnostics .flow-note .flow-caret{color:#0969da}
.flow-diagnostics ul.flow-related,.flow-diagnostics ul.flow-hints{margin:2px 0;padding-left:18px}
.flow-diagnostics .flow-hint>strong{color:#1a7f37}
.flow-diagnostics .flow-note>strong{color:#0969da}
.flow-diagnostics details.flow-explain{margin-top:4px}
.flow-diagnostics details.flow-explain>summary{cursor:pointer;color:var(--jp-content-font-color2,#57606a)}
.flow-diagnostics .flow-explanation{border-left:2px solid var(--jp-border-color2,#d0d7de);
  padding-left:8px;margin:4px 0}
.flow-diagnostics .flow-explanation pre{background:var(--jp-layout-color2,#f6f8fa);padding:4px 8px;
  border-radius:4px;margin:2px 0}
</style>"""

_SEVERITY_ORDER = (Severity.ERROR, Severity.WARNING, Severity.INFO)

# The same looks again as inline styles, on the elements that carry meaning: sanitisers drop
# `<style>` (JupyterLab in an untrusted notebook, GitHub) and keep a safelist of inline
# properties, so a saved notebook's diagnostics keep their colours. Fixed strings:
# nothing from a diagnostic goes into a style.
_COLOURS = {"error": ("#cf222e", "#ffebe9"), "warning": ("#9a6700", "#fff8c5"), "info": ("#0969da", "#ddf4ff")}
_SECTION = "border:1px solid #d0d7de;border-left:4px solid {0};border-radius:6px;padding:6px 10px;margin:6px 0"
_BADGE = "display:inline-block;border-radius:10px;padding:0 8px;color:#ffffff;background:{0};font-size:12px"
_EXCERPT = ("background:#f6f8fa;padding:4px 8px;border-radius:4px;margin:2px 0 4px;overflow:auto;white-space:pre;"
            "font-family:ui-monospace,monospace")
_MARK = "background:{1}"
_CARET = "color:{0};font-weight:600"
_GUTTER = "color:#8c959f"


def _style(template: str, severity: str) -> str:
    return template.format(*_COLOURS.get(severity, ("#6e7781", "#eaeef2")))


_BACKTICKED = re.compile(r"`([^`\n]+)`")


def _inline(text: str) -> str:
    """Escaped text whose `code` spans become `<code>`; a lone backtick stays literal."""
    return _BACKTICKED.sub(r"<code>\1</code>", _e(text))


# --- public API ----------------------------------------------------------------------


def summary_line(diagnostics: Sequence[Diagnostic]) -> str:
    """"2 errors, 1 warning" (severities in that order, "info" is not pluralised, as in
    `flow check`); "no diagnostics" for none."""
    parts: list[str] = []
    for severity in _SEVERITY_ORDER:
        n = sum(1 for d in diagnostics if d.severity is severity)
        if n:
            name = severity.value
            parts.append(f"{n} {name}" + ("" if n == 1 or severity is Severity.INFO else "s"))
    return ", ".join(parts) if parts else "no diagnostics"


def diagnostics_bundle(
    diagnostics: Sequence[Diagnostic],
    *,
    title: str | None = None,
    display_name: DisplayName | None = None,
) -> dict[str, Any]:
    """The MIME bundle for a notebook output: `text/plain` is `render_text` without colour
    (or "no diagnostics" for none), `text/html` is `render_html`. Diagnostics are shown in
    the order given (callers pass them sorted, e.g. `Reporter.sorted()`)."""
    text = render_text(diagnostics, color=False, display_name=display_name)
    return {
        "text/plain": text if diagnostics else "no diagnostics\n",
        "text/html": render_html(diagnostics, title=title, display_name=display_name),
    }


def render_html(
    diagnostics: Sequence[Diagnostic],
    *,
    title: str | None = None,
    display_name: DisplayName | None = None,
) -> str:
    """The diagnostics view as one self-contained, deterministic HTML fragment (the
    module docstring shows its outline)."""
    name = display_name or same_name
    parts = ['<div class="flow-diagnostics">', STYLE]
    if title:
        parts.append(f'<p class="flow-title"><strong>{_e(title)}</strong></p>')
    parts.append(f'<p class="flow-summary"><strong>{_e(summary_line(diagnostics))}</strong></p>')
    parts += [_diagnostic(d, name) for d in diagnostics]
    parts.append("</div>")
    return "\n".join(parts) + "\n"


# --- one diagnostic ------------------------------------------------------------------


def _diagnostic(d: Diagnostic, display_name: DisplayName) -> str:
    sev = d.severity.value
    spans = [d.span, *(r.span for r in d.related)]
    width = max(len(str(s.start_pos.line)) for s in spans)
    out = [
        f'<section class="flow-diagnostic flow-{sev}" data-code="{_e(d.code)}" style="{_style(_SECTION, sev)}">',
        '<p class="flow-header">'
        f'<strong class="flow-badge flow-badge-{sev}" style="{_style(_BADGE, sev)}">{sev}</strong> '
        f'<code class="flow-code">{_e(d.code)}</code> '
        f'<span class="flow-message">{_inline(d.message)}</span> '
        f'<span class="flow-location">at <code>{_e(location(d.span, display_name))}</code></span>'
        "</p>",
        _excerpt_html(d.span, width, sev),
    ]
    if d.related:
        out.append('<ul class="flow-related">')
        for rel in d.related:
            out.append(
                '<li class="flow-note"><strong>note</strong>: '
                f'<span class="flow-location"><code>{_e(location(rel.span, display_name))}</code></span>: '
                f'<span class="flow-message">{_inline(rel.message)}</span>\n'
                f"{_excerpt_html(rel.span, width, 'info')}</li>"
            )
        out.append("</ul>")
    if d.hints:
        out.append('<ul class="flow-hints">')
        out += [
            f'<li class="flow-hint"><strong>hint</strong>: '
            f'<span class="flow-message">{_inline(hint)}</span></li>'
            for hint in d.hints
        ]
        out.append("</ul>")
    explanation = _explanation_html(d.code)
    if explanation is not None:
        out.append(
            f'<details class="flow-explain"><summary>Explain {_e(d.code)}</summary>\n'
            f'<div class="flow-explanation">\n{explanation}\n</div>\n</details>'
        )
    out.append("</section>")
    return "\n".join(out)


def _excerpt_html(span: Span, width: int, severity: str = "error") -> str:
    """The source line and its caret line, aligned like `render_text` (same gutter, same
    display columns); the spanned characters are also wrapped in `<mark>`."""
    line, shown, caret_col, carets = excerpt(span)
    start, end = _char_range(shown, caret_col, caret_col + carets)
    marked = (
        _e(shown[:start]) + f'<mark class="flow-span" style="{_style(_MARK, severity)}">{_e(shown[start:end])}</mark>'
        + _e(shown[end:])
        if end > start
        else _e(shown)
    )
    gutter = f'<span class="flow-gutter" style="{_GUTTER}">{line:>{width}} |</span>'
    blank = f'<span class="flow-gutter" style="{_GUTTER}">{"":>{width}} |</span>'
    text_line = f"{gutter} {marked}" if shown else gutter
    caret_line = f'{blank} {" " * caret_col}<span class="flow-caret" style="{_style(_CARET, severity)}">{"^" * carets}</span>'
    return f'<pre class="flow-excerpt" style="{_EXCERPT}">{text_line}\n{caret_line}</pre>'


def _char_range(shown: str, start_col: int, end_col: int) -> tuple[int, int]:
    """The character offsets in `shown` (a line as displayed: tabs expanded, controls
    made visible) covering display columns [start_col, end_col)."""
    _, columns = display_line(shown)
    n = len(shown)
    start = next((i for i in range(n) if columns[i] >= start_col), n)
    end = start
    while end < n and columns[end] < end_col:
        end += 1
    while end < n and char_width(shown[end]) == 0:  # combining marks stay with their base
        end += 1
    return start, end


# --- the explanation -----------------------------------------------------------------


def _explanation_html(code: str) -> str | None:
    """`explain_markdown` for `code` as simple HTML, or None for an unregistered code.

    The Markdown is generated (explain.py), so a small converter suffices: the heading is
    dropped (the `<summary>` names the code), fenced blocks become `<pre><code>`,
    paragraphs `<p>` with `**bold**` and `code` spans."""
    info = lookup(code)
    if info is None:
        return None
    lines = explain_markdown(info).splitlines()
    out: list[str] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            out.append(f"<p>{_markdown_inline(' '.join(para))}</p>")
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^(`{3,})(\w*)\s*$", line)
        if fence:
            flush()
            ticks, lang = fence.group(1), fence.group(2)
            body: list[str] = []
            i += 1
            while i < len(lines) and lines[i] != ticks:
                body.append(lines[i])
                i += 1
            cls = f' class="language-{_e(lang)}"' if lang else ""
            out.append(f"<pre><code{cls}>{_e(chr(10).join(body))}</code></pre>")
        elif line.startswith("#") or not line.strip():
            flush()
        else:
            para.append(line.strip())
        i += 1
    flush()
    return "\n".join(out)


_BOLD = re.compile(r"\*\*([^*\n]+)\*\*")


def _markdown_inline(text: str) -> str:
    """`_inline`, plus `**bold**` outside code spans."""
    pieces = re.split(r"(`[^`\n]+`)", text)
    return "".join(
        _inline(piece) if i % 2 else _BOLD.sub(r"<strong>\1</strong>", _e(piece))
        for i, piece in enumerate(pieces)
    )

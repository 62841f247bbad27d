"""The run view as HTML: the live widget's body and the static form a saved notebook keeps.

Self-contained (a scoped `<style>`, no scripts, nothing fetched) and semantic (`<details>`,
`<ul>`, `<progress>`, `<pre>`), so it reads well on GitHub and in nbconvert output too,
where styles are partly stripped.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from flow_kernel.markup import escape as _e
from flow_kernel.runtime.events import is_default_label
from flow_kernel.short_text import shorten
from flow_kernel.views.run_model import Item, Node, RunModel

STYLE = """<style>
.flow-run{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;line-height:1.45;
  border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;max-width:980px}
.flow-run header{display:flex;gap:12px;align-items:center;flex-wrap:wrap;margin-bottom:6px}
.flow-run .badge{border-radius:10px;padding:1px 8px;font-weight:600;color:#fff;background:#6e7781}
.flow-run .running{background:#0969da}.flow-run .completed{background:#1a7f37}.flow-run .failed{background:#cf222e}
.flow-run .budget{display:inline-flex;gap:4px;align-items:center;color:#57606a}
.flow-run ul{list-style:none;margin:2px 0;padding-left:18px}.flow-run>ul{padding-left:0}
.flow-run .state-completed>.mark{color:#1a7f37}.flow-run .state-failed>.mark{color:#cf222e}
.flow-run .state-running>.mark{color:#0969da}
.flow-run details.card{border-left:3px solid #d0d7de;padding-left:6px;margin:2px 0}
.flow-run details.card.state-failed{border-left-color:#cf222e}
.flow-run .meta{color:#57606a;font-size:12px}
.flow-run pre{background:#f6f8fa;padding:4px 6px;border-radius:4px;white-space:pre-wrap;margin:2px 0}
.flow-run .err{color:#cf222e}.flow-run .ok{color:#1a7f37}
.flow-run .json ul{padding-left:14px}.flow-run .key{color:#953800}
</style>"""

_MARK = {"completed": "✓", "failed": "✗", "running": "●"}


def render_html(model: RunModel, *, live: bool = True, now: datetime.datetime | None = None) -> str:
    """`live` adds what differs from run to run — elapsed times, latencies, the run id.
    Without it the HTML is deterministic like `RunModel.text()` (nbval compares both)."""
    parts = [STYLE, '<div class="flow-run">', _header(model, now, live)]
    parts.append("<ul>" + "".join(_node(model, n, live) for n in model.roots) + "</ul>")
    if model.error is not None:
        parts.append(_error(model))
    elif model.has_result:
        parts.append(f"<div><strong>Result</strong>{json_tree(model.result)}</div>")
    parts.append("</div>")
    return "".join(parts)


def _header(model: RunModel, now: datetime.datetime | None, live: bool) -> str:
    title = f" <strong>{_e(model.title)}</strong>" if model.title else ""
    elapsed = _elapsed(model.started, model.ended, now) if live else ""
    budgets = "".join(
        f'<span class="budget">{_e(name)} {_e(used)}' + (f'/{_e(limit)} <progress value="{_e(min(used, limit))}" max="{_e(limit)}"></progress>'
                                                    if limit else "") + "</span>"
        for name, used, limit in model.budgets())
    run = f'<span class="meta">run {_e(model.run_id)}</span>' if model.run_id and live else ""
    return (f'<header><span class="badge {_e(model.status)}">{_e(model.status)}</span>{title}'
            f'<span class="meta">{_e(elapsed)}</span>{budgets}{run}</header>')


def _node(model: RunModel, node: Node, live: bool) -> str:
    if node.kind == "agent":
        return f"<li>{_agent(node, live)}</li>"
    title = f"stage “{_e(node.name)}”" if node.kind == "stage" else f"{_e(node.kind)} <strong>{_e(node.name)}</strong>"
    extra = ""
    if node.state == "failed" and node.data.get("code"):
        extra = f' <span class="err">{_e(node.data.get("code"))}: {_e(node.data.get("message") or "")}</span>'
    timing = _elapsed(node.started, node.ended, None) if node.ended and live else ""
    body = ""
    for child in node.children:
        body += _node(model, child, live) if isinstance(child, Node) else _item(model, child)
    if node.progress is not None:
        done, total = node.progress.get("done"), node.progress.get("total")
        n_done, n_total = _number(done), _number(total)
        bar = f'<progress value="{_e(n_done)}" max="{_e(n_total)}"></progress> ' \
            if n_done is not None and n_total else ""
        count = f"{done}/{total}" if total is not None else str(done if done is not None else "")
        body += f"<li>{bar}{_e(count)} {_e(node.progress.get('message') or '')}</li>"
    return (f'<li class="state-{_e(node.state)}"><span class="mark">{_mark(node.state)}</span> {title}{extra}'
            f' <span class="meta">{_e(timing)}</span>' + (f"<ul>{body}</ul>" if body else "") + "</li>")


def _agent(node: Node, live: bool) -> str:
    d = node.data
    attempts = node.attempts
    usage = d.get("usage") if isinstance(d.get("usage"), dict) else {}
    assert isinstance(usage, dict)
    meta = [f"{len(attempts)} attempt{'s' if len(attempts) != 1 else ''}"] if attempts else []
    if d.get("latency_ms") is not None and live:
        meta.append(f"{d['latency_ms']} ms")
    tokens = (_number(usage.get("input_tokens")) or 0) + (_number(usage.get("output_tokens")) or 0)
    if tokens:
        meta.append(f"{usage.get('input_tokens', 0)} + {usage.get('output_tokens', 0)} tokens")
    if d.get("provider") and d.get("provider") != d.get("model"):
        meta.append(f"{d.get('provider')}/{d.get('model')}")
    label = d.get("label")
    shown = f" [{_e(label)}]" if label and not is_default_label(label) else ""
    summary = (f'<summary><span class="mark">{_mark(node.state)}</span> agent <strong>{_e(node.name)}</strong>{shown}'
               f' <span class="meta">{_e(" · ".join(meta))}</span>')
    if node.state == "failed":
        summary += f' <span class="err">{_e(d.get("code"))}: {_e(d.get("message") or "")}</span>'
    summary += "</summary>"
    body = ""
    if d.get("prompt") is not None:
        body += f"<details><summary>prompt</summary><pre>{_e(d.get('prompt'))}</pre></details>"
    if "output" in d:
        body += f"<div>output{json_tree(d.get('output'))}</div>"
    tried = [a for a in attempts if not a.get("ok")]
    if tried:
        body += "<div>attempts<ul>" + "".join(_attempt(a) for a in attempts) + "</ul></div>"
    calls = d.get("tool_calls")
    if isinstance(calls, list) and calls:
        body += "<div>tool calls<ul>" + "".join(
            f"<li><code>{_e(c.get('tool'))}</code>({_e(shorten(c.get('arguments'), 160, as_json=True))})"
            f" → {_e(shorten(c.get('result'), 160, as_json=True))}</li>"
            for c in calls if isinstance(c, dict)) + "</ul></div>"
    opened = " open" if node.state == "failed" else ""
    return f'<details class="card state-{_e(node.state)}"{opened}>{summary}{body}</details>'


def _attempt(a: dict[str, Any]) -> str:
    head = f"{_e(a.get('kind'))} {_e(a.get('attempt'))}"
    if a.get("ok"):
        return f'<li class="ok">{head}: valid</li>'
    if a.get("invalid"):
        listed = a.get("errors")
        errors = "".join(f"<li>{_e(e)}</li>" for e in (listed if isinstance(listed, list) else [listed] if listed else []))
        return f'<li class="err">{head}: invalid output {_e(shorten(a.get("output"), 160, as_json=True))}<ul>{errors}</ul></li>'
    return f'<li class="err">{head}: {_e(a.get("error"))} {_e(a.get("message") or "")}</li>'


def _item(model: RunModel, item: Item) -> str:
    d = item.data
    if item.kind == "log":
        return f"<li>· {_e(d.get('text'))}</li>"
    if item.kind == "verify.evaluated":
        ok = bool(d.get("passed"))
        return (f'<li class="{"ok" if ok else "err"}">{"✓" if ok else "✗"} verify {_e(d.get("message"))}'
                f' <code class="meta">{_e(d.get("condition") or "")}</code></li>')
    if item.kind == "require.failed":
        return f'<li class="err">✗ require {_e(d.get("message"))} <code class="meta">{_e(d.get("condition") or "")}</code></li>'
    if item.kind == "artifact.published":
        return f"<li>⇪ published <code>{_e(d.get('name'))}</code></li>"
    if item.kind == "approval.requested":
        approval = model.approval_of(item)
        verb = {"ask": "question", "tool": "tool approval"}.get(str(d.get("kind")), "approval")
        text = f"<li>? {verb}: <strong>{_e(d.get('question'))}</strong>"
        if d.get("details") is not None:
            text += f"<pre>{_e(json.dumps(d.get('details'), ensure_ascii=False, indent=2))}</pre>"
        if approval is None or approval.pending:
            return text + ' <span class="meta">waiting for an answer</span></li>'
        if approval.error:
            return text + f' → <span class="err">{_e(approval.error)}</span></li>'
        answer = {True: "approved", False: "denied"}.get(approval.answer) if isinstance(approval.answer, bool) \
            else f"“{approval.answer}”"
        return text + f" → <strong>{_e(answer)}</strong> <span class=\"meta\">by {_e(approval.by)}</span></li>"
    return ""


def _error(model: RunModel) -> str:
    e = model.error or {}
    where = ""
    span = e.get("span")
    if isinstance(span, dict):
        where = f'<div class="meta">{_e(span.get("file"))}:{_e(span.get("line"))}:{_e(span.get("column"))}</div>'
        if model.error_line is not None:
            # Clamped to the line: a forged span must not ask for a billion spaces.
            limit = len(model.error_line) + 1
            column = min(limit, max(1, int(_number(span.get("column")) or 1)))
            end = min(limit, int(_number(span.get("end_column")) or column + 1))
            width = max(1, end - column) if span.get("end_line") == span.get("line") else 1
            where += f"<pre>{_e(model.error_line)}\n{' ' * (column - 1)}{'^' * width}</pre>"
    place = model.error_place()
    where += f'<div class="meta">failed in {_e(place)}</div>' if place else ""
    stage = f'<div class="meta">in stage “{_e(e.get("stage"))}”</div>' if e.get("stage") else ""
    return (f'<div class="err"><strong>error[{_e(e.get("code"))}]</strong>: {_e(e.get("message"))}</div>'
            f"{where}{stage}")


def json_tree(value: Any, depth: int = 0) -> str:
    """A JSON value as nested lists; objects and arrays beyond the first level collapse."""
    if isinstance(value, dict) and value:
        rows = "".join(f'<li><span class="key">{_e(k)}</span>: {json_tree(v, depth + 1)}</li>' for k, v in value.items())
        return _fold(f"{{{len(value)}}}", rows, depth)
    if isinstance(value, list) and value:
        rows = "".join(f"<li>{json_tree(v, depth + 1)}</li>" for v in value)
        return _fold(f"[{len(value)}]", rows, depth)
    return f"<code>{_e(json.dumps(value, ensure_ascii=False))}</code>"


def _fold(summary: str, rows: str, depth: int) -> str:
    if depth == 0:
        return f'<ul class="json">{rows}</ul>'
    return f'<details class="json"><summary>{_e(summary)}</summary><ul>{rows}</ul></details>'


def _elapsed(started: str | None, ended: str | None, now: datetime.datetime | None) -> str:
    if started is None:
        return ""
    try:
        start = datetime.datetime.fromisoformat(started)
        end = datetime.datetime.fromisoformat(ended) if ended else (now or datetime.datetime.now(datetime.UTC))
    except ValueError:
        return ""
    seconds = max(0.0, (end - start).total_seconds())
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def _mark(state: str) -> str:
    return _MARK.get(state, "●")


def _number(value: Any) -> int | float | None:
    """A count from an event as a number, or None: a forged event may carry any JSON
    where a number is expected, and the view must neither fail nor echo it into markup."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if value == value and abs(value) != float("inf") else None

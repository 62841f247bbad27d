"""The run view's static summary as HTML: what a saved notebook keeps in the cell, read
without the kernel, without trust and on GitHub.

Sanitisers decide what survives there: JupyterLab's drops `<style>` in an untrusted
notebook and keeps a safelist of inline style properties, GitHub drops styles altogether.
So the meaning is in the markup — ✓ ✗ ⊘ marks, `<strong>`, `<details>` cards, counts in
words — and the looks are inline styles from the fixed table below (never a value from an
event: every value is escaped text, every number in a style is a number we computed), on
`<div>`s rather than lists, so no host's list CSS adds bullets or indents. Its size is
bounded: a parallelMap is one row with its counts and a bar and lists only a few of its
items (run_model.GROUP_LISTED), and the whole summary lists at most run_model.CARDS calls.
The result is not here: the cell's `Out` shows it, once.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from flow_kernel.markup import escape as _e
from flow_kernel.markup import markdown_html
from flow_kernel.runtime.events import Point, degraded_text
from flow_kernel.short_text import shorten
from flow_kernel.views.panel_view import panel_call_words, panel_html
from flow_kernel.views.run_model import (
    CARDS,
    Group,
    Node,
    RunModel,
    call_label,
    group_counts,
    group_state,
    grouped,
    says_failure,
)

STYLE = ""  # no stylesheet: every style is inline (the module docstring says why)

# The only styles the summary uses (tests/security: a style attribute is one of these).
FONT = "font-family:system-ui,sans-serif;font-size:13px;line-height:1.45;color:#1f2328"
BOX = f"{FONT};border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;max-width:980px;text-align:left"
HEAD = "margin-bottom:6px"
KIDS = "margin-left:18px"
ROW = "margin:1px 0"
MUTED = "color:#57606a;font-size:12px"
ERR = "color:#cf222e"
OK = "color:#1a7f37"
KEY = "color:#953800"
PRE = "background:#f6f8fa;padding:4px 6px;border-radius:4px;white-space:pre-wrap;margin:2px 0;font-size:12px"
PRIMARY_BOX = "border-left:3px solid #0969da;padding:2px 8px;margin:4px 0 6px 0"
PRIMARY_CHARS = 4000  # the primary artifact's text shown in the summary (the artifact output has it whole)
# A bar: the fills sit at the top of a 6px line (at the baseline of a text line they are clipped away).
BAR = ("display:inline-block;width:200px;height:6px;line-height:6px;background:#eaeef2;border-radius:3px;overflow:hidden;"
       "vertical-align:middle")
COLOURS = {"completed": "#1a7f37", "failed": "#cf222e", "running": "#0969da", "interrupted": "#9a6700",
           "cancelled": "#9a6700"}
_MARK = {"completed": "✓", "failed": "✗", "running": "●", "interrupted": "⊘", "cancelled": "⊘"}


def _colour(state: str) -> str:
    return COLOURS.get(state, "#6e7781")


def badge_style(state: str) -> str:
    return f"border-radius:10px;padding:1px 8px;font-weight:600;color:#ffffff;background:{_colour(state)}"


def card_style(state: str) -> str:
    return f"border-left:3px solid {_colour(state)};padding-left:6px;margin:2px 0"


def mark_style(state: str) -> str:
    return f"color:{_colour(state)}"


def fill_style(fraction: float, colour: str) -> str:
    return f"display:inline-block;vertical-align:top;height:6px;width:{max(0.0, min(1.0, fraction)) * 100:.1f}%;background:{colour}"


def render_html(model: RunModel, *, live: bool = False, now: datetime.datetime | None = None) -> str:
    """The summary; `live` adds what differs from run to run — elapsed times, latencies, the
    run id. Without it the HTML is deterministic like `RunModel.text()` (nbval compares both)."""
    budget = [CARDS, 0]
    parts = [f'<div style="{BOX}">', _header(model, now, live), _primary(model)]
    parts.append("".join(_node(model, n, live, budget) for n in model.roots))
    if budget[1]:
        parts.append(f'<div style="{MUTED}">… {budget[1]} more agent call{"s" if budget[1] != 1 else ""} not listed</div>')
    if model.error is not None and not model.error_in_tree():
        parts.append(_error(model))
    parts.append("</div>")
    return "".join(parts)


def summary_bundle(model: RunModel) -> dict[str, Any]:
    """What the cell keeps when the run ends: deterministic text (nbval) and HTML (people)."""
    return {"text/plain": model.text(result=False), "text/html": render_html(model)}


def _primary(model: RunModel) -> str:
    """The primary artifact, first under the header: its name, and its text as sanitised
    Markdown (flow_kernel.markup) or its value as JSON; empty when the run published none."""
    primary = model.primary
    if primary is None:
        return ""
    if "text" in primary:
        body = markdown_html(shorten(str(primary["text"]), PRIMARY_CHARS))
    else:
        body = f'<div style="{PRE}">{_e(shorten(json.dumps(primary.get("json"), ensure_ascii=False, indent=2), PRIMARY_CHARS))}</div>'
    return (f'<div style="{ROW}">★ primary <code>{_e(primary.get("name"))}</code>'
            f'<div style="{PRIMARY_BOX}">{body}</div></div>')


def _mark(state: str) -> str:
    return f'<span style="{mark_style(state)}">{_MARK.get(state, "●")}</span>'


def _header(model: RunModel, now: datetime.datetime | None, live: bool) -> str:
    title = f" <strong>{_e(model.title)}</strong>" if model.title else ""
    elapsed = f' <span style="{MUTED}">{_e(_elapsed(model.started, model.ended, now))}</span>' if live else ""
    budgets = " · ".join(f"{_e(name)} {_e(used)}" + (f"/{_e(limit)}" if limit else "") for name, used, limit in model.budgets())
    run = f' <span style="{MUTED}">run {_e(model.run_id)}</span>' if model.run_id and live else ""
    return (f'<div style="{HEAD}"><span style="{badge_style(model.status)}">{_e(model.status)}</span>{title}{elapsed}'
            f' <span style="{MUTED}">{budgets}</span>{run}</div>')


def _node(model: RunModel, node: Node, live: bool, budget: list[int]) -> str:
    if node.kind == "agent":
        return _agent(node, live, budget)
    title = f"stage “{_e(node.name)}”" if node.kind == "stage" else f"{_e(node.kind)} <strong>{_e(node.name)}</strong>"
    extra = ""
    if node.state == "failed" and node.data.get("code"):  # the message only where the failure happened
        said = f': {_e(node.data.get("message"))}' if says_failure(node) else ""
        extra = f' <span style="{ERR}">{_e(node.data.get("code"))}{said}</span>'
    timing = f' <span style="{MUTED}">{_e(_elapsed(node.started, node.ended, None))}</span>' if node.ended and live else ""
    body = ""
    for child in grouped(node.children):
        if isinstance(child, Group):
            body += _group(child, live, budget)
        elif isinstance(child, Node):
            body += _node(model, child, live, budget)
        elif isinstance(child, Point):
            body += _item(model, child)
    if node.progress is not None:
        fraction = progress_fraction(node.progress.get("done"), node.progress.get("total"))
        bar = _bar(fraction, 0.0) + " " if fraction is not None else ""
        count = f"{_e(node.progress.get('done'))}/{_e(node.progress.get('total'))}" if node.progress.get("total") is not None \
            else _e(node.progress.get("done") if node.progress.get("done") is not None else "")
        body += f'<div style="{ROW}">{bar}progress {count} {_e(node.progress.get("message") or "")}</div>'
    kids = f'<div style="{KIDS}">{body}</div>' if body else ""
    return f'<div style="{ROW}">{_mark(node.state)} {title}{extra}{timing}</div>{kids}'


def progress_fraction(done: Any, total: Any) -> float | None:
    """done / total when both are numbers (a forged event may send anything), else None."""
    d, t = _number(done), _number(total)
    return d / t if d is not None and t else None


def _bar(done: float, failed: float) -> str:
    return (f'<span style="{BAR}"><span style="{fill_style(done, COLOURS["completed"])}"></span>'
            f'<span style="{fill_style(failed, COLOURS["failed"])}"></span></span>')


def _group(group: Group, live: bool, budget: list[int]) -> str:
    n = max(1, len(group.calls))
    state = group_state(group)
    head = (f'<div style="{ROW}">{_mark(state)} parallelMap <strong>{_e(", ".join(group.agents))}</strong> '
            f'{_bar(group.count("completed") / n, group.count("failed") / n)} {_e(group_counts(group))}</div>')
    shown = group.shown()
    body = "".join(_agent(call, live, budget) for call in shown)
    hidden = len(group.calls) - len(shown)
    if hidden > 0:
        body += f'<div style="{MUTED}">… {hidden} more call{"s" if hidden != 1 else ""} not listed</div>'
    return head + (f'<div style="{KIDS}">{body}</div>' if body else "")


def _agent(node: Node, live: bool, budget: list[int]) -> str:
    if budget[0] <= 0:
        budget[1] += 1
        return ""
    budget[0] -= 1
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
    label = call_label(node)
    summary = (f'<summary>{_mark(node.state)} agent <strong>{_e(node.name)}</strong>'
               + (f" {_e(label)}" if label else "") + f' <span style="{MUTED}">{_e(" · ".join(meta))}</span>')
    if node.state == "failed":
        summary += f' <span style="{ERR}">{_e(d.get("code"))}: {_e(d.get("message") or "")}</span>'
    elif "output" in d:
        summary += f' <span style="{MUTED}">→ {_e(shorten(d.get("output"), 60))}</span>'
    summary += "</summary>"
    body = ""
    raw = d.get("label")
    if panel_call_words(raw) is not None:  # shown in words: the label as journals key it
        body += f'<div style="{ROW}">label <code>{_e(shorten(raw, 200))}</code></div>'
    body += "".join(f'<div style="{MUTED}">↓ {_e(degraded_text(p.data))}</div>'  # the session's model stood in
                    for p in node.children if isinstance(p, Point) and p.kind == "model.degraded")
    if d.get("prompt") is not None:
        body += f'<div style="{ROW}">prompt<div style="{PRE}">{_e(shorten(str(d.get("prompt")), 2000))}</div></div>'
    if "output" in d:
        body += f'<div style="{ROW}">output {json_tree(d.get("output"))}</div>'
    if any(not a.get("ok") for a in attempts):
        body += f'<div style="{ROW}">attempts<div style="{KIDS}">' + "".join(_attempt(a) for a in attempts[:20]) + "</div></div>"
    calls = d.get("tool_calls")
    if isinstance(calls, list) and calls:
        body += f'<div style="{ROW}">tool calls<div style="{KIDS}">' + "".join(
            f"<div><code>{_e(c.get('tool'))}</code>({_e(shorten(c.get('arguments'), 160, as_json=True))})"
            f" → {_e(shorten(c.get('result'), 160, as_json=True))}</div>"
            for c in calls[:20] if isinstance(c, dict)) + "</div></div>"
    return f'<details style="{card_style(node.state)}">{summary}<div style="{KIDS}">{body}</div></details>'


def _attempt(a: dict[str, Any]) -> str:
    head = f"{_e(a.get('kind'))} {_e(a.get('attempt'))}"
    if a.get("ok"):
        return f'<div style="{OK}">{head}: valid</div>'
    if a.get("invalid"):
        listed = a.get("errors")
        errors = "".join(f"<div>· {_e(e)}</div>" for e in (listed if isinstance(listed, list) else [listed] if listed else []))
        return (f'<div style="{ERR}">{head}: invalid output {_e(shorten(a.get("output"), 160, as_json=True))}'
                f'<div style="{KIDS}">{errors}</div></div>')
    return f'<div style="{ERR}">{head}: {_e(a.get("error"))} {_e(a.get("message") or "")}</div>'


def _item(model: RunModel, item: Point) -> str:
    d = item.data
    if item.kind == "log":
        return f'<div style="{ROW}">· {_e(d.get("text"))}</div>'
    if item.kind == "verify.evaluated":
        ok = bool(d.get("passed"))
        return (f'<div style="{OK if ok else ERR}">{"✓" if ok else "✗"} verify {_e(d.get("message"))}'
                f' <code style="{MUTED}">{_e(d.get("condition") or "")}</code></div>')
    if item.kind == "require.failed":
        return f'<div style="{ERR}">✗ require {_e(d.get("message"))} <code style="{MUTED}">{_e(d.get("condition") or "")}</code></div>'
    if item.kind == "artifact.published":
        primary = " (primary)" if d.get("primary") is True else ""
        return f'<div style="{ROW}">⇪ published <code>{_e(d.get("name"))}</code>{primary}</div>'
    if item.kind == "panel.started":  # experts × criteria per round (views/panel_view.py)
        table = model.panel_of(item)
        return f'<div style="{ROW}">{panel_html(table)}</div>' if table is not None else ""
    if item.kind == "approval.requested":
        approval = model.approval_of(item)
        verb = {"ask": "question", "tool": "tool approval"}.get(str(d.get("kind")), "approval")
        text = f'<div style="{ROW}">? {verb}: <strong>{_e(d.get("question"))}</strong>'
        if d.get("details") is not None:
            text += f'<div style="{PRE}">{_e(shorten(json.dumps(d.get("details"), ensure_ascii=False, indent=2), 2000))}</div>'
        if approval is None or approval.pending:
            return text + f' <span style="{MUTED}">waiting for an answer</span></div>'
        if approval.error:
            return text + f' → <span style="{ERR}">{_e(approval.error)}</span></div>'
        answer = {True: "approved", False: "denied"}.get(approval.answer) if isinstance(approval.answer, bool) \
            else f"“{approval.answer}”"
        return text + f' → <strong>{_e(answer)}</strong> <span style="{MUTED}">by {_e(approval.by)}</span></div>'
    return ""


def _error(model: RunModel) -> str:
    """The run's error when no line of the tree says it: its code and message once (the
    cell's error output has its source line)."""
    e = model.error or {}
    return f'<div style="{ERR}"><strong>error[{_e(e.get("code"))}]</strong>: {_e(e.get("message"))}</div>'


def folded(value: dict[str, Any] | list[Any]) -> str:
    """What a fold holds: `{2 keys}`, `[3 items]`."""
    n = len(value)
    return f"{{{n} key{'s' if n != 1 else ''}}}" if isinstance(value, dict) else f"[{n} item{'s' if n != 1 else ''}]"


def json_tree(value: Any, depth: int = 0, budget: list[int] | None = None) -> str:
    """A JSON value as a tree of `<details>` that say what they fold; bounded (a large
    value shows its first entries and how many more there are)."""
    budget = budget if budget is not None else [200]  # entries shown at most
    if isinstance(value, dict | list) and value:
        entries = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        rows = ""
        for n, (k, v) in enumerate(entries):
            if budget[0] <= 0:
                rows += f'<div style="{MUTED}">… {len(entries) - n} more</div>'
                break
            budget[0] -= 1
            rows += f'<div><span style="{KEY}">{_e(k)}</span>: {json_tree(v, depth + 1, budget)}</div>'
        return f'<details><summary>{_e(folded(value))}</summary><div style="{KIDS}">{rows}</div></details>'
    return f"<code>{_e(shorten(value, 300, as_json=True))}</code>"


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


def _number(value: Any) -> int | float | None:
    """A count from an event as a number, or None: a forged event may carry any JSON
    where a number is expected, and the view must neither fail nor echo it into markup."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if value == value and abs(value) != float("inf") else None

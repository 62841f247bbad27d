"""A panel in the run view: for each round, a table of experts × criteria with each
expert's scores, the per-criterion means, the weighted aggregate and the spread.

`PanelTable` is the view-model, folded from the run's `panel.*` events (runtime/events/vocabulary.py)
by `fold`; `RunModel` keeps one per panel call (by label) and shows it where the call
happened. `panel_text` and `panel_html` render it for the text summary (nbval) and the
static HTML summary. Event data come from the sandbox: every value is checked for its type
here and escaped when rendered, like everything else in the run view.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from flow_kernel.markup import escape as _e
from flow_kernel.short_text import shorten

# Inline styles only, on divs and spans (no <table>, no title attribute): what survives the
# sanitisers the run summary must pass (run_html.py's docstring; tests/security/markup_check.py).
ROUND = "margin:2px 0 6px 18px;font-size:12px"
ROW = "border-left:2px solid #d0d7de;padding-left:6px"
NAME = "display:inline-block;width:190px"
SCORE = "display:inline-block;width:76px;text-align:right"
STRONG = "font-weight:600"
MUTED = "color:#57606a"


@dataclass
class PanelRound:
    number: int
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)  # expert -> criterion -> score
    rationales: dict[str, str] = field(default_factory=dict)
    means: dict[str, Any] = field(default_factory=dict)
    aggregate: Any = None
    spread: Any = None
    status: str = "running"  # running | converged (when summarised)


@dataclass
class PanelTable:
    panel: str
    label: str
    experts: list[tuple[str, str]] = field(default_factory=list)  # (agent, domain)
    criteria: list[str] = field(default_factory=list)
    rounds: list[PanelRound] = field(default_factory=list)
    status: str = "running"

    def round(self, number: int) -> PanelRound:
        for r in self.rounds:
            if r.number == number:
                return r
        r = PanelRound(number)
        self.rounds.append(r)
        return r


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _num(value: Any) -> Any:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def fold(tables: dict[str, PanelTable], kind: str, data: dict[str, Any]) -> PanelTable | None:
    """Fold one `panel.*` event in; the table it belongs to (None for a malformed event)."""
    label = _str(data.get("label"))
    if kind == "panel.started":
        experts = [(_str(e.get("agent")), _str(e.get("domain"))) for e in data.get("experts") or []
                   if isinstance(e, dict)] if isinstance(data.get("experts"), list) else []
        criteria = [_str(c.get("id")) for c in data.get("criteria") or [] if isinstance(c, dict)] \
            if isinstance(data.get("criteria"), list) else []
        table = tables[label] = PanelTable(_str(data.get("panel")), label, experts, criteria)
        return table
    found = tables.get(label)
    if found is None:
        return None
    table = found
    number = data.get("round")
    if kind == "panel.verdict" and isinstance(number, int):
        r = table.round(number)
        expert = _str(data.get("expert"))
        scores = data.get("scores")
        r.scores[expert] = {k: _num(v) for k, v in scores.items()} if isinstance(scores, dict) else {}
        r.rationales[expert] = _str(data.get("rationale"))
    elif kind == "panel.round" and isinstance(number, int):
        r = table.round(number)
        means = data.get("scores")
        r.means = {k: _num(v) for k, v in means.items()} if isinstance(means, dict) else {}
        r.aggregate, r.spread = _num(data.get("aggregate")), _num(data.get("spread"))
        r.status = "converged" if data.get("status") == "converged" else "summarised"
    elif kind == "panel.completed":
        table.status = _str(data.get("status")) or "completed"
    return table


def panel_line(kind: str, data: dict[str, Any]) -> str | None:
    """One line for a round's summary or the panel's end, for views that show a panel as it
    goes without its grid (the live widget shows it as a log line: views/run_stream.py)."""
    name = _str(data.get("panel"))
    if kind == "panel.round":
        return (f"panel {name} · round {_cell(_num(data.get('round')))} · aggregate {_cell(_num(data.get('aggregate')))}"
                f" · spread {_cell(_num(data.get('spread')))} · {_str(data.get('status'))}")
    if kind == "panel.completed":
        return (f"panel {name}: {_str(data.get('status'))} after {_cell(_num(data.get('rounds')))} round(s)"
                f" · aggregate {_cell(_num(data.get('aggregate')))}")
    return None


# A panel's call labels (flowbox/panels.py): `LABEL/rN/EXPERT` an expert's round, `LABEL/synthesis`
# the judge's; LABEL is the call's own `label:` or the compiler's `name@line:col`.
_PANEL_CALL = re.compile(r"(?P<label>.+?)(?:@\d+:\d+)?/(?:r(?P<round>\d+)/[^/]+|synthesis)")


def panel_call_words(label: Any, item: int | None = None) -> str | None:
    """A panel call's label in words — `round 1 · item 2 · panel review` for
    `review@2:11/r1/historian` as item 2 of a parallelMap, `synthesis · panel review` for
    the judge's — or None when `label` is not a panel call's. The raw label stays what
    journals and cassettes key on; views show it as a card's title or in its details."""
    found = _PANEL_CALL.fullmatch(label) if isinstance(label, str) else None
    if found is None:
        return None
    step = f"round {found['round']}" if found["round"] is not None else "synthesis"
    where = f"item {item}" if item is not None else ""
    return " · ".join(p for p in (step, where, f"panel {found['label']}") if p)


def _cell(value: Any) -> str:
    return "–" if value is None else str(value)


def panel_text(table: PanelTable) -> list[str]:
    """The panel as text lines: one header, then per round a line per expert."""
    lines = [f"panel {table.panel}: {table.status}"]
    for r in table.rounds:
        summary = f" · aggregate {_cell(r.aggregate)} · spread {_cell(r.spread)}" if r.means else " (incomplete)"
        lines.append(f"  round {r.number}{summary}")
        for agent, _domain in table.experts:
            if agent in r.scores:
                row = ", ".join(f"{c} {_cell(r.scores[agent].get(c))}" for c in table.criteria)
                lines.append(f"    {agent}: {row}")
    return lines


def panel_html(table: PanelTable) -> str:
    """Per round, a grid: a header row (`expert`, the criteria, `rationale`), a row per
    expert (its domain beside it, its rationale after the scores), a column per criterion,
    and a last row of the means; the round's aggregate and spread in its heading."""
    out = [f'<div>⚖ panel <strong>{_e(table.panel)}</strong> <span style="{MUTED}">{_e(table.status)}</span></div>']
    head = "".join(f'<span style="{SCORE};{STRONG}">{_e(c)}</span>' for c in table.criteria)
    for r in table.rounds:
        if r.means:
            caption = f"round {r.number} · aggregate {_e(_cell(r.aggregate))} · spread {_e(_cell(r.spread))}"
            if r.status == "converged":
                caption += " · converged"
        else:
            caption = f"round {r.number} · incomplete"
        rows = [f'<div style="{MUTED}">{caption}</div>',
                f'<div style="{ROW}"><span style="{NAME};{STRONG}">expert</span>{head}'
                f' <span style="{MUTED};{STRONG}">rationale</span></div>']
        for agent, domain in table.experts:
            if agent not in r.scores:
                continue
            cells = "".join(f'<span style="{SCORE}">{_e(_cell(r.scores[agent].get(c)))}</span>' for c in table.criteria)
            rows.append(f'<div style="{ROW}"><span style="{NAME}">{_e(agent)} <span style="{MUTED}">{_e(domain)}</span>'
                        f'</span>{cells} <span style="{MUTED}">{_e(shorten(r.rationales.get(agent, ""), 80))}</span></div>')
        if r.means:
            cells = "".join(f'<span style="{SCORE};{STRONG}">{_e(_cell(r.means.get(c)))}</span>' for c in table.criteria)
            rows.append(f'<div style="{ROW}"><span style="{NAME};{STRONG}">mean</span>{cells}</div>')
        out.append(f'<div style="{ROUND}">{"".join(rows)}</div>')
    return "".join(out)

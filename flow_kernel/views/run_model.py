"""The run view's model: what a run looks like, built from its events alone.

`RunModel.apply(event)` folds one event in; the same events give the same model, so a
run view rebuilt from a journal shows what the live one showed. `text()` is the
deterministic summary (no timestamps, durations or random ids: nbval compares it);
`views/run_html.py` is its static HTML.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from flow_kernel.runtime.events import (
    OPENS,
    Event,
    EventTree,
    Point,
    Scope,
    canonical,
    degraded_text,
    is_default_label,
    scope_label,
)
from flow_kernel.short_text import shorten
from flow_kernel.views.panel_view import PanelTable, panel_call_words, panel_text
from flow_kernel.views.panel_view import fold as fold_panel


@dataclass(eq=False)
class Node(Scope):
    """A scope as the run view shows it: the tree's scope, plus the live state of an agent
    call and its place in a parallelMap."""

    progress: dict[str, Any] | None = None
    # An agent call as the model writes it (live `agent.delta` events, runtime/providers/streaming.py):
    # the answer's text so far, the partial structured value, the tool calls being written.
    partial_text: str = ""
    partial_value: Any = None
    partial_tools: list[dict[str, Any]] = field(default_factory=list)
    partial_at: tuple[Any, Any] = (None, None)  # (attempt, round) the partial belongs to
    waiting: dict[str, Any] | None = None  # held by the provider's limits: {provider, reason, wait_ms}
    item: tuple[str, int] | None = None  # an agent call in a parallelMap: (its group, the item's index from 0)

    def __post_init__(self) -> None:
        if self.kind == "agent":
            self.item = item_of(self.order)

    @property
    def attempts(self) -> list[dict[str, Any]]:
        value = self.data.get("attempts")  # events are data: anything not an object is dropped
        return [a for a in value if isinstance(a, dict)] if isinstance(value, list | tuple) else []


@dataclass
class Approval:
    """An approval or question and, once answered, its answer (the prompt's state)."""

    key: str
    kind: str  # approve | ask | tool
    question: str
    details: Any = None
    choice: list[str] | None = None
    answer: Any = None
    by: str | None = None
    error: str | None = None

    @property
    def pending(self) -> bool:
        return self.by is None and self.error is None


@dataclass
class Group:
    """The calls of one `parallelMap`, shown as one row: counts, then a few of its items."""

    key: str
    calls: list[Node] = field(default_factory=list)

    def count(self, state: str) -> int:
        return sum(1 for c in self.calls if c.state == state)

    @property
    def retried(self) -> int:
        return sum(1 for c in self.calls if any(a.get("kind") != "attempt" for a in c.attempts))

    @property
    def agents(self) -> list[str]:
        return sorted({c.name for c in self.calls})

    def shown(self) -> list[Node]:
        """The items a summary lists: all of a small map; of a large one, its failures."""
        if len(self.calls) <= GROUP_LISTED:
            return self.calls
        return [c for c in self.calls if c.state != "completed"][:GROUP_LISTED]


GROUP_LISTED = 10  # a parallelMap of more calls lists only its failed ones (that many at most)
CARDS = 60  # agent calls a summary lists at most; past that, how many more there were


def grouped(children: list[Scope | Point]) -> list[Scope | Point | Group]:
    """A scope's children with the calls of each parallelMap gathered into one `Group` (at
    the place of its first call)."""
    out: list[Scope | Point | Group] = []
    groups: dict[str, Group] = {}
    for child in children:
        if isinstance(child, Node) and child.kind == "agent" and child.item is not None:
            group = groups.get(child.item[0])
            if group is None:
                group = groups[child.item[0]] = Group(child.item[0])
                out.append(group)
            group.calls.append(child)
        else:
            out.append(child)
    return out


def call_label(node: Node) -> str:
    """What tells one call from another: its label, else the start of its prompt; and its
    item number in a parallelMap (`#3`). A panel's call in words: `· round 1 · item 2 ·
    panel review` (after the agent, who is the expert)."""
    label = node.data.get("label")
    words = panel_call_words(label, node.item[1] + 1 if node.item is not None else None)
    if words is not None:
        return f"· {words}"
    text = f"[{label}]" if isinstance(label, str) and label and not is_default_label(label) \
        else f'"{shorten(" ".join(str(node.data.get("prompt") or "").split()), 40)}"' if node.data.get("prompt") else ""
    index = f"#{node.item[1] + 1}" if node.item is not None else ""
    return " ".join(p for p in (index, text) if p)


class RunModel:
    """A run as the view shows it, folded from its events over the one event tree
    (runtime/events/tree.py)."""

    def __init__(self, run_id: str | None = None, title: str | None = None) -> None:
        self.run_id = run_id
        self.title = title
        self.status = "running"  # running | completed | failed
        self.tree: EventTree[Node] = EventTree(Node)
        self.limits: dict[str, Any] = {}
        self.agent_runs = 0  # attempts charged so far (repairs and retries included)
        self.steps: int | None = None
        self.result: Any = None
        self.has_result = False
        self.error: dict[str, Any] | None = None
        self.approvals: list[Approval] = []
        self._approval_at: dict[int, int] = {}  # id of an approval.requested point -> its index in approvals
        self.breakers: dict[str, str] = {}  # provider -> its circuit breaker's state, as last reported
        self.cost: float | None = None  # what the run's priced calls cost (agent.completed/failed `cost`)
        self.artifacts: list[dict[str, Any]] = []
        self.panels: dict[str, PanelTable] = {}  # panel calls by label (views/panel_view.py)
        self.started: str | None = None
        self.ended: str | None = None
        self.events = 0

    @property
    def nodes(self) -> dict[str, Node]:
        return self.tree.scopes

    @property
    def primary(self) -> dict[str, Any] | None:
        """The run's primary artifact (`publish primary`), shown first; None: it published none."""
        return next((a for a in self.artifacts if a.get("primary") is True), None)

    @property
    def roots(self) -> list[Node]:
        return self.tree.roots

    @classmethod
    def from_events(cls, events: Iterable[Event], title: str | None = None) -> RunModel:
        events = list(events)
        model = cls(events[0].get("run") if events else None, title)
        for event in canonical(events):
            model.apply(event)
        return model

    # -- folding events in ---------------------------------------------------------------------
    def apply(self, event: Event) -> None:
        self.events += 1
        if self.run_id is None:
            self.run_id = event.get("run")
        placed = self.tree.add(event)
        if placed is None:
            return
        data: dict[str, Any] = event.get("data") if isinstance(event.get("data"), dict) else {}  # type: ignore[assignment]
        if isinstance(placed.node, Point):
            span = event.get("span")
            self._point(placed.node, span.get("id") if isinstance(span, dict) else None)
        else:
            self._scope(placed.node, placed.new, data, str(event.get("type")).rsplit(".", 1)[-1])

    def _scope(self, node: Node, new: bool, data: dict[str, Any], phase: str) -> None:
        top = node.kind == "workflow" and node.parent is None
        if new and top:
            limits = data.get("limits")
            self.limits = dict(limits) if isinstance(limits, dict) else {}
            self.started = node.started
        if phase == OPENS:
            return
        if node.kind == "agent":
            self.agent_runs += len(node.attempts)
            cost = data.get("cost")  # priced calls only (lang/prices.py)
            if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0:
                self.cost = (self.cost or 0.0) + cost
        if top:
            self.ended = node.ended
            self.status = node.state
            if node.state == "failed" and self.error is None:
                self.error = {"code": data.get("code"), "message": data.get("message"), "span": data.get("span")}

    def _point(self, point: Point, scope_id: Any) -> None:
        kind, data, container = point.kind, point.data, point.scope
        if kind.startswith("provider.") or kind == "agent.delta":
            self._provider(kind, data, self.tree.scope(scope_id))
            return
        if kind == "progress" and isinstance(container, Node):
            container.progress = dict(data)
            return
        if kind.startswith("panel."):  # a panel's rounds fold into one table, shown where it was called
            fold_panel(self.panels, kind, data)
            return
        if kind.startswith("approval."):
            self._approval(kind, data, scope_id)
            self._approval_at[id(point)] = len(self.approvals) - 1
        if kind == "artifact.published":
            self.artifacts.append(dict(data))

    def _provider(self, kind: str, data: dict[str, Any], node: Node | None) -> None:
        """Live state of a call (streamed text, waits for the provider's limits) and of the
        providers (their breakers): shown while the run goes, never in `text()` — these
        kinds are not in the canonical sequence."""
        if kind == "provider.breaker":
            self.breakers[str(data.get("provider"))] = str(data.get("state"))
        if node is None or node.kind != "agent":
            return
        if kind == "provider.waiting":
            node.waiting = dict(data)
        elif kind == "provider.resumed":
            node.waiting = None
        elif kind == "agent.delta":
            node.waiting = None
            at = (data.get("attempt"), data.get("round"))
            if at != node.partial_at:  # a new attempt or tool round writes from the start
                node.partial_at, node.partial_text, node.partial_value, node.partial_tools = at, "", None, []
            text = data.get("text")
            node.partial_text += text if isinstance(text, str) else ""
            if "value" in data:
                node.partial_value = data.get("value")
            tools = data.get("tools")
            if isinstance(tools, list):
                node.partial_tools = [t for t in tools if isinstance(t, dict)]

    def waiting_calls(self) -> list[Node]:
        """Agent calls held right now by a provider's rate limit, bulkhead or Retry-After."""
        return [n for n in self.nodes.values() if n.kind == "agent" and n.state == "running" and n.waiting is not None]

    def _approval(self, kind: str, data: dict[str, Any], scope_id: Any) -> None:
        if kind == "approval.requested":
            key = f"{scope_id}:{len(self.approvals)}"
            choice = data.get("choice")
            self.approvals.append(Approval(key, str(data.get("kind")), str(data.get("question")), data.get("details"),
                                           choice if isinstance(choice, list) else None))
            return
        pending = next((a for a in self.approvals if a.pending and a.question == data.get("question")), None)
        if pending is not None:
            pending.answer = data.get("answer")
            pending.by = data.get("by")
            pending.error = data.get("error")

    def finish(self, result: Any = None, error: dict[str, Any] | None = None, steps: int | None = None,
               waiting: bool = False) -> None:
        """What the host knows at the end and events do not carry: the result, the error
        (with its Flow span), the steps taken, whether the run stopped `waiting` for an answer
        (`defer`: its workflow never ended, it is not completed). A failed run leaves nothing
        running: the calls its failure cut off are cancelled."""
        self.steps = steps
        if error is not None:
            self.status = "failed"
            self.error = error
            if error.get("code") == "cancelled":  # an interrupt: what ran is cancelled, not failed
                self.interrupt()
            else:
                self._stop_running()
        else:
            if self.status == "running":
                self.status = "waiting" if waiting else "completed"
            self.result = result
            self.has_result = result is not None

    def interrupt(self) -> None:
        """The run was cancelled: what was still running is cancelled (not left running),
        an unanswered prompt is closed."""
        self.status = "interrupted"
        self._stop_running()

    def _stop_running(self) -> None:
        """What was still running is cancelled; an unanswered prompt is closed."""
        for node in self.nodes.values():
            if node.state == "running":
                node.state = "cancelled"
        for approval in self.approvals:
            if approval.pending:
                approval.error = "cancelled"

    # -- reading it --------------------------------------------------------------------------------
    def approval_of(self, item: Point) -> Approval | None:
        """The approval an `approval.requested` point asked, with its answer once given."""
        index = self._approval_at.get(id(item))
        return self.approvals[index] if index is not None else None

    def panel_of(self, item: Point) -> PanelTable | None:
        """The table of the panel a `panel.started` point began (its latest state)."""
        label = item.data.get("label")
        return self.panels.get(label if isinstance(label, str) else "")

    def pending_approvals(self) -> list[Approval]:
        return [a for a in self.approvals if a.pending]

    def budgets(self) -> list[tuple[str, int, int | None]]:
        rows: list[tuple[str, int, int | None]] = [("agent runs", self.agent_runs, _int(self.limits.get("agent_runs")))]
        if self.steps is not None:
            rows.append(("steps", self.steps, _int(self.limits.get("steps"))))
        if self.cost is not None:  # in the price table's currency; shown only when a call was priced
            limit = self.limits.get("cost")
            rows.append(("cost", round(self.cost, 4),  # type: ignore[arg-type]
                         limit if isinstance(limit, int | float) and not isinstance(limit, bool) else None))
        return rows

    def error_in_tree(self) -> bool:
        """Whether a line of the tree already says the run's error (a failed call's card, a
        failed `require`, a failed scope): then the summary says it nowhere else."""
        message = (self.error or {}).get("message")
        if not message:
            return False
        return any(says_same(node, message) for node in self.nodes.values()) or any(
            says_same(point, message) for node in self.nodes.values() for point in node.children)

    def text(self, result: bool = True) -> str:
        """The deterministic summary: the tree with states, approvals with who decided, the
        budgets, and (with `result`) the result — a cell's summary leaves it to the cell's
        `Out`, so it shows once. A failure is said once, where it happened (`says_failure`);
        its code, message and source line in full are the cell's error output."""
        lines = [f"Flow run: {self.status}" + (f" — {self.title}" if self.title else "")]
        if self.primary is not None:
            lines.append(f"primary: {shorten(self.primary.get('name'), 80)}")
        budget = [CARDS, 0]
        for root in self.roots:
            self._text_node(root, 0, lines, budget)
        if budget[1]:
            lines.append(f"… {budget[1]} more agent call{'s' if budget[1] != 1 else ''} not listed")
        lines.append(", ".join(f"{name} {used}" + (f"/{limit}" if limit is not None else "")
                               for name, used, limit in self.budgets()))
        if self.error is not None and not self.error_in_tree():
            lines.append(f"error[{self.error.get('code')}]: {_first_line(self.error.get('message'))}")
        elif self.has_result and result:
            lines.append(f"result: {shorten(self.result, 200)}")
        return "\n".join(lines)

    def _text_node(self, node: Node, depth: int, lines: list[str], budget: list[int] | None = None) -> None:
        budget = budget if budget is not None else [CARDS, 0]  # agent calls still to list, calls left out
        pad = "  " * depth
        mark = _MARKS.get(node.state, "…")
        if node.kind == "agent":
            if budget[0] <= 0:
                budget[1] += 1
                return
            budget[0] -= 1
            attempts = node.attempts
            extra = f"  {len(attempts)} attempt{'s' if len(attempts) != 1 else ''}" if attempts else ""
            repairs = sum(1 for a in attempts if a.get("kind") == "repair")
            if repairs:
                extra += f" ({repairs} repair{'s' if repairs != 1 else ''})"
            label = call_label(node)
            head = f"{pad}{mark} agent {node.name}{' ' + label if label else ''}{extra}"
            if node.state == "failed":
                head += f": {node.data.get('code')} {_first_line(node.data.get('message'))}"
            elif "output" in node.data:
                head += f" → {shorten(node.data.get('output'), 80)}"
            lines.append(head)
            # What the agent did on the way: tool approvals, then its tool calls in order.
            for child in node.children:
                line = self._text_item(child) if isinstance(child, Point) else None
                if line:
                    lines.append(f"{pad}    {line}")
            calls = node.data.get("tool_calls")
            for call in calls if isinstance(calls, list) else []:
                if not isinstance(call, dict):
                    continue
                lines.append(f"{pad}    tool {call.get('tool')}({shorten(call.get('arguments'), 60)})"
                             f" → {shorten(call.get('result'), 80)}")
            return
        head = f"{pad}{mark} {scope_label(node.kind, node.name)}"
        if node.state == "failed" and node.data.get("code"):
            head += f": {node.data.get('code')}"
            if says_failure(node):
                head += f" {_first_line(node.data.get('message'))}"
        lines.append(head)
        for part in grouped(node.children):
            if isinstance(part, Group):
                self._text_group(part, depth + 1, lines, budget)
            elif isinstance(part, Node):
                self._text_node(part, depth + 1, lines, budget)
            elif isinstance(part, Point):
                line = self._text_item(part)
                if line:
                    lines.append(f"{pad}  {line}")
        if node.progress is not None:  # the latest progress of the scope, after what it reports on
            done, total = node.progress.get("done"), node.progress.get("total")
            lines.append(f"{pad}  progress {done if done is not None else ''}"
                         f"{'/' + str(total) if total is not None else ''} {node.progress.get('message') or ''}".rstrip())

    def _text_group(self, group: Group, depth: int, lines: list[str], budget: list[int]) -> None:
        pad = "  " * depth
        lines.append(f"{pad}{_MARKS.get(group_state(group), '…')} parallelMap {', '.join(group.agents)}: {group_counts(group)}")
        shown = group.shown()
        for call in shown:
            self._text_node(call, depth + 1, lines, budget)
        hidden = len(group.calls) - len(shown)
        if hidden > 0:
            lines.append(f"{pad}  … {hidden} more call{'s' if hidden != 1 else ''} not listed")

    def _text_item(self, item: Point) -> str | None:
        d = item.data
        if item.kind == "log":
            return f"log: {d.get('text')}"
        if item.kind == "verify.evaluated":
            return f"{'✓' if d.get('passed') else '✗'} verify {d.get('message')}"
        if item.kind == "require.failed":
            return f"✗ require {d.get('message')}"
        if item.kind == "artifact.published":
            return f"published {d.get('name')}" + (" (primary)" if d.get("primary") is True else "")
        if item.kind == "model.degraded":
            return degraded_text(d)
        if item.kind == "panel.started":
            table = self.panel_of(item)
            return "\n  ".join(panel_text(table)) if table is not None else None
        if item.kind == "approval.requested":
            approval = self.approval_of(item)
            verb = "ask" if d.get("kind") == "ask" else "approve"
            text = f'{verb} "{d.get("question")}"'
            if approval is None or approval.pending:
                return text + " … waiting"
            if approval.error:
                return text + f" → {approval.error}"
            answer = "yes" if approval.answer is True else "no" if approval.answer is False else approval.answer
            return text + f" → {answer} ({approval.by})"
        return None


def says_failure(node: Scope) -> bool:
    """Whether a failed scope's line says its message: only when nothing inside it that
    failed says the same (a failure shows once, where it happened: the failed call's card,
    the `require`, else the innermost scope); the enclosing scopes show the code alone."""
    message = node.data.get("message")
    if node.state != "failed" or not message:
        return False
    return not any(says_same(child, message) for child in node.children)


def says_same(part: Scope | Point, message: Any) -> bool:
    """A failed call or scope, or a failed `require`, whose message is `message`."""
    if isinstance(part, Scope):
        return part.state == "failed" and part.data.get("message") == message
    return part.kind == "require.failed" and part.data.get("message") == message


def declared_agents(decls: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each agent's role and instructions as declared (constant strings), from a checked
    program's declarations: the live cards show them, and the run's events do not carry them."""
    from flow_kernel.lang import ast

    agents: dict[str, dict[str, Any]] = {}
    for name, entry in decls.items():
        node = getattr(entry, "node", None)
        if isinstance(node, ast.AgentDecl):
            agents[name] = {f.name.name: f.value.constant for f in node.fields
                            if f.name.name in ("role", "instructions") and isinstance(f.value, ast.StrLit)
                            and f.value.constant is not None}
    return agents


def item_of(order: Any) -> tuple[str, int] | None:
    """A `parallelMap` item's (group, index) from an event's `order` (runtime/events/vocabulary.py):
    its innermost `[fork, key]` when the key is an int (a `parallel` branch or a task is
    keyed by its name). The group is the path to the fork, so two maps are two groups.
    The key and its steps are lists as JSON gives them or tuples as a run keeps them."""
    if not isinstance(order, list | tuple):
        return None
    for k in range(len(order) - 1, -1, -1):
        step = order[k]
        if isinstance(step, list | tuple) and len(step) == 2:
            fork, key = step
            if isinstance(key, int) and not isinstance(key, bool) and isinstance(fork, int | str):
                path = ".".join(f"{s[0]}:{s[1]}" for s in order[:k] if isinstance(s, list | tuple) and len(s) == 2)
                return f"{path}/{fork}", key
            return None
    return None


_MARKS = {"completed": "✓", "failed": "✗", "interrupted": "⊘", "cancelled": "⊘"}


def group_state(group: Group) -> str:
    states = {c.state for c in group.calls}
    for state in ("running", "failed", "cancelled"):
        if state in states:
            return state
    return "completed"


def group_counts(group: Group) -> str:
    """`5 calls: 4 done, 1 failed, 2 retried` (what a summary says of a parallelMap)."""
    n = len(group.calls)
    parts = [f"{group.count('completed')} done"]
    for state in ("failed", "running", "cancelled"):
        if group.count(state):
            parts.append(f"{group.count(state)} {state}")
    if group.retried:
        parts.append(f"{group.retried} retried")
    return f"{n} call{'s' if n != 1 else ''}: " + ", ".join(parts)


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _first_line(text: Any) -> str:
    return str(text or "").split("\n", 1)[0]

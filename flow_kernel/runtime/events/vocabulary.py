"""Run events: the vocabulary (runtime.md §7), the tree the events form, and their order.

This module is the one place that says what an event is; the run view's model
(`views/run_model.py`), the failure report, the terminal view (`terminal.py`) and the
OpenTelemetry exporter (`otel.py`) read the kinds from here instead of each keeping a list.

**An event** (`Event`) is one JSON object: `{"type", "run", "seq", "ts", "span": {"id",
"parent"}, "stage", "data", "order"}`; `type` is one of `KINDS`, `data` is described by the
kind's `TypedDict` (`Kind.data`).

**The tree.** Four kinds of scope nest, outermost first (`SCOPES`): workflow → pipeline →
stage → agent. `<scope>.started` opens a scope and `<scope>.completed` or `<scope>.failed`
closes it; both carry the scope's id as `span.id` and the enclosing scope's id as
`span.parent` (null for the run's top workflow: the `<cell>` of a module run, or the
workflow a run was started with). Pipelines and stages nest in each other inside a
workflow, a nested workflow call opens a workflow inside them, and an agent call (`c<n>`)
is always a leaf. The other kinds are points (`POINTS`): they happen inside the scope
whose id is their `span.id` (a tool approval names its agent call, with the call's scope
as `span.parent`).

Events are data from the sandbox, which a bypassed sandbox can forge: the `TypedDict`s say
what the trusted emitters send, and every reader still checks each value's type. The
kinds marked `host_only` come only from the host (an operator's answer, a provider's
reply): the host never takes them from the sandbox.

**The order.** Events are delivered as they happen, numbered by `seq` in arrival order: a
live view and the journal need them at once. Arrival order between concurrent branches
depends on timing, so each event also carries `order`, a key from where it happened in
the run's tree of branches (see `Branch` in the sandbox bootstrap): `[[fork, key], …,
[index]]`. Sorting by it gives the canonical sequence — sibling `parallel` branches by
key, `parallelMap` items by index, `async` tasks by launch — which is the same on every
run of the same program with the same input and answers. `canonical` gives that
sequence, `comparable` also drops what legitimately differs between runs (timestamps,
durations).

**The kept form.** A run keeps every event until it ends, so what its events hold stays
in the cyclic collector's sight that long, unless CPython can untrack it: a tuple of
atomic values is untracked by the first collection it survives, a list never is (nor a
dict that holds a dict). So the host keeps an order key as tuples (`kept_order`,
`sub_order`; an `agent.started`'s `tools` too): equal as JSON, and the readers here and
in the views take either form. `canonical` and `comparable` give copies in the JSON form
(lists), so a run's events and the same events read back from its journal compare equal.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any, Literal, Required, TypedDict

from flow_kernel.json_text import encoder

# One event as the sinks receive it (the module docstring lists its fields). Plain JSON on
# purpose: journals, the kernel's `%events` and OpenTelemetry take it as it is.
Event = dict[str, Any]

# -- the tree -------------------------------------------------------------------------------
SCOPES = ("workflow", "pipeline", "stage", "agent")  # outermost first
OPENS = "started"
CLOSES = ("completed", "failed")
PHASES = (OPENS, *CLOSES)


# -- the data of each kind ------------------------------------------------------------------
class WorkflowStarted(TypedDict, total=False):
    name: Required[str]            # the workflow, or `<cell>` for a module's top level
    frame: Required[str]           # the frame id (= span.id); the host budgets per frame
    parent: Required[str | None]   # the enclosing frame's id
    limits: Required[dict[str, int]]  # as the sandbox announces them (the host budgets from the source)


class ScopeStarted(TypedDict):     # pipeline.started, stage.started
    name: str


class ScopeCompleted(TypedDict):   # workflow / pipeline / stage .completed
    name: str


class ScopeFailed(TypedDict, total=False):  # workflow / pipeline / stage .failed
    name: Required[str]
    code: Required[str]            # a runtime error code (errors.py)
    message: Required[str]
    span: dict[str, Any] | None    # the Flow source span, when the host records the failure


class AgentStarted(TypedDict, total=False):
    agent: Required[str]
    label: Required[str | None]    # the call's label (`<agent>@line:col` when the compiler gave it)
    prompt: Required[str]
    provider: str                  # left out when the call failed before it was prepared
    model: str
    tools: list[str]
    of: int                        # a `parallelMap` item's call: the map's size (the run view's progress bar)


class AgentCompleted(TypedDict, total=False):
    agent: Required[str]
    label: Required[str | None]
    output: Required[Any]          # the reply, valid against the agent's contract
    attempts: list[dict[str, Any]]  # each call to the provider: attempt, repair, retry…
    usage: dict[str, int]
    tool_calls: list[dict[str, Any]]
    latency_ms: int
    cost: float                    # priced by the model's price (lang/prices.py), remote providers only


class AgentFailed(TypedDict, total=False):  # and the error's own details (Kind.open_data)
    agent: Required[str | None]
    team: str | None               # a team whose member could not be resolved
    label: Required[str | None]
    code: Required[str]
    message: Required[str]
    attempts: list[dict[str, Any]]
    usage: dict[str, int]
    tool_calls: list[dict[str, Any]]
    latency_ms: int
    cost: float


class VerifyEvaluated(TypedDict):
    passed: bool
    message: str
    condition: str                 # the condition's source text


class RequireFailed(TypedDict):
    message: str
    condition: str


class Progress(TypedDict, total=False):  # `emit progress {done, total, message}`
    done: float
    total: float
    message: str


class ApprovalRequested(TypedDict, total=False):
    kind: Required[Literal["approve", "ask", "tool"]]
    question: Required[str]
    details: Any                   # approve: the program's details; tool: {tool, arguments}
    choice: list[str] | None       # ask: the allowed answers
    agent: str                     # tool: the agent that wants to call…
    tool: str                      # …this tool
    timeout_ms: int                # approve/ask `timeout T else V`: T…
    default: Any                   # …and V, the answer when nobody answers in time


class ApprovalResolved(TypedDict, total=False):
    kind: Required[Literal["approve", "ask", "tool"]]
    question: Required[str]
    answer: Any                    # yes/no (bool) or the text answered
    by: str                        # who decided: the operator's policy, a person, "replayed", "timeout"
    error: str                     # the error code when no answer came
    agent: str
    tool: str
    replayed: bool


class PanelStarted(TypedDict):     # a panel call begins (sandbox flowbox/panels.py)
    panel: str
    label: str                     # the call's label; each expert call's is `<label>/r<round>/<agent>`
    experts: list[dict[str, str]]  # [{agent, domain}] in the order they are asked
    criteria: list[dict[str, Any]]  # [{id, weight, low, high}] of the rubric
    rounds: int                    # at most this many rounds
    spread: float                  # converged when every criterion's spread is within this


class PanelVerdict(TypedDict):     # one expert's verdict in one round
    panel: str
    label: str
    round: int
    expert: str                    # the agent
    domain: str
    scores: dict[str, int]         # criterion id -> score
    rationale: str


class PanelRound(TypedDict):       # a round's summary, computed in the sandbox
    panel: str
    label: str
    round: int
    status: Literal["running", "converged"]
    scores: dict[str, float]       # criterion id -> the experts' mean
    aggregate: float               # the weighted aggregate of the means, each on 0..1 by its scale
    spread: float                  # the largest highest-minus-lowest score of any criterion


class PanelCompleted(TypedDict):   # how the panel ended (the record's status)
    panel: str
    label: str
    status: Literal["converged", "not-converged", "budget-exhausted", "failed"]
    rounds: int                    # rounds begun (the last may be incomplete)
    aggregate: float | None        # of the last complete round
    spread: float | None


class AgentDelta(TypedDict, total=False):  # live only (Kind.live): streaming, runtime/providers/streaming.py
    agent: Required[str]
    label: Required[str | None]
    attempt: int                   # the attempt (or repair, retry) being written
    round: int                     # the provider request within it (a tool loop makes several)
    text: Required[str]            # text appended since the call's last delta…
    length: int                    # …and the answer's length so far
    value: Any                     # structured output: the partial value parsed so far
    tools: list[dict[str, Any]]    # tool calls being written: [{tool, arguments (partial)}]


class ProviderWaiting(TypedDict, total=False):  # a call held by the provider's limits (runtime/providers/resilience.py)
    provider: Required[str]
    reason: Required[str]          # rpm | tpm | bulkhead | retry-after
    wait_ms: int                   # how long it expects to wait (unknown for the bulkhead)


class ProviderResumed(TypedDict, total=False):
    provider: Required[str]
    reason: Required[str]
    waited_ms: int


class ProviderBreaker(TypedDict, total=False):  # the provider's circuit breaker changed state
    provider: Required[str]
    state: Required[Literal["open", "half-open", "closed"]]
    failures: int                  # consecutive failures that opened it
    pause_ms: int                  # open: how long until a probe may go through


class ModelDegraded(TypedDict):    # `model: "for:<purpose> else default"` used the session's model (lang/purposes.py)
    agent: str
    label: str | None
    purpose: str                   # the purpose no model is configured for
    model: str                     # the session's model the call used instead ("provider/model", "mock")


class Text(TypedDict):             # log, print
    text: str


class ArtifactPublished(TypedDict, total=False):
    name: Required[str]            # a relative artifact path
    text: str                      # a string artifact…
    json: Any                      # …or any other value
    primary: bool                  # `publish primary`: the run's one primary artifact


# -- the kinds --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    """One event kind: the scope it opens or closes (None for a point), its data, and
    whether only the host emits it."""

    name: str                      # the event's `type`, e.g. "agent.completed"
    data: type                     # its data's TypedDict
    scope: str | None = None
    phase: str | None = None       # started | completed | failed, for a scope's kinds
    host_only: bool = False
    open_data: bool = False        # data may carry more keys (an error's details)
    # Timing, not the run's logic (waits for a provider's limits, its breaker): kept in the
    # events and the journal, left out of the canonical sequence (`canonical`).
    timing: bool = False
    # Live only (streamed text): handed to the sinks as it happens, never kept in the run's
    # events or journal, and not part of the canonical sequence either.
    live: bool = False

    @property
    def opens(self) -> bool:
        return self.phase == OPENS

    @property
    def closes(self) -> bool:
        return self.phase in CLOSES


def _scope_kinds(scope: str, started: type, failed: type, completed: type, **more: bool) -> list[Kind]:
    return [Kind(f"{scope}.started", started, scope, "started", **more),
            Kind(f"{scope}.completed", completed, scope, "completed", **more),
            Kind(f"{scope}.failed", failed, scope, "failed", **more)]


_ALL = [
    *_scope_kinds("workflow", WorkflowStarted, ScopeFailed, ScopeCompleted),
    *_scope_kinds("pipeline", ScopeStarted, ScopeFailed, ScopeCompleted),
    *_scope_kinds("stage", ScopeStarted, ScopeFailed, ScopeCompleted),
    Kind("agent.started", AgentStarted, "agent", "started", host_only=True),
    Kind("agent.completed", AgentCompleted, "agent", "completed", host_only=True),
    Kind("agent.failed", AgentFailed, "agent", "failed", host_only=True, open_data=True),
    Kind("model.degraded", ModelDegraded, host_only=True),
    Kind("verify.evaluated", VerifyEvaluated),
    Kind("require.failed", RequireFailed),
    Kind("progress", Progress),
    Kind("approval.requested", ApprovalRequested, host_only=True),
    Kind("approval.resolved", ApprovalResolved, host_only=True),
    Kind("log", Text),
    Kind("print", Text),
    Kind("artifact.published", ArtifactPublished),
    Kind("panel.started", PanelStarted),
    Kind("panel.verdict", PanelVerdict),
    Kind("panel.round", PanelRound),
    Kind("panel.completed", PanelCompleted),
    Kind("agent.delta", AgentDelta, host_only=True, live=True, timing=True),
    Kind("provider.waiting", ProviderWaiting, host_only=True, timing=True),
    Kind("provider.resumed", ProviderResumed, host_only=True, timing=True),
    Kind("provider.breaker", ProviderBreaker, host_only=True, timing=True),
]
KINDS: dict[str, Kind] = {kind.name: kind for kind in _ALL}
POINTS = tuple(kind.name for kind in _ALL if kind.scope is None)
# The families only the host emits, as prefixes: a bypassed sandbox's `agent.anything` is
# refused as well as the kinds that exist.
HOST_ONLY_PREFIXES = tuple(sorted({kind.name.split(".")[0] + "." for kind in _ALL if kind.host_only}))


def kind_of(event_type: Any) -> Kind | None:
    """The kind of an event's `type`; None for an unknown one (or a forged non-string)."""
    return KINDS.get(event_type) if isinstance(event_type, str) else None


def scope_of(event_type: Any) -> tuple[str, str] | None:
    """`(scope, phase)` for a kind that opens or closes a scope, e.g. `("stage", "failed")`;
    None for a point or an unknown type."""
    kind = kind_of(event_type)
    return (kind.scope, kind.phase) if kind is not None and kind.scope is not None and kind.phase else None


def scope_name(scope: str, data: dict[str, Any]) -> Any:
    """A scope's name as its events carry it: the agent of an agent call, else `name`."""
    return data.get("agent") if scope == "agent" else data.get("name")


_DEFAULT_LABEL = re.compile(r"[A-Za-z_][\w.]*@\d+:\d+")


def is_default_label(label: Any) -> bool:
    """A label the compiler gave (`<agent or team.member>@line:col`), not worth showing."""
    return isinstance(label, str) and _DEFAULT_LABEL.fullmatch(label) is not None


# -- the data's text ----------------------------------------------------------------------------
# What the run's output ceiling counts of each event: the length of its data's text,
# `json.dumps(data, ensure_ascii=False, default=str)` (runtime/host.py `emit_kept`).
_text_checked = encoder(ensure_ascii=False, default=str)
_text_unchecked = encoder(ensure_ascii=False, default=str, check_circular=False)


def data_text(data: Any) -> str:
    """`json.dumps(data, ensure_ascii=False, default=str)`: the same text, or the same error.
    First without the check for circular references (a table insert and delete for every
    container, ~10–20 % of a small event's encoding): a value holding itself then recurses
    until RecursionError, and the checked encoder gives `json.dumps`'s own answer (its
    ValueError for a cycle, the same RecursionError for a value nested that deep)."""
    try:
        return _text_unchecked(data)
    except RecursionError:
        return _text_checked(data)


def text_size(value: Any) -> int:
    """`len(data_text(value))`: a string's, None's, a bool's and an int's without the encoder
    (json's own escaping of the string; `int.__repr__`, as json writes an int). A value's
    text within an object or array is its text alone (no indent), so a caller that built
    an event's data around a few values may add their sizes to its template's."""
    kind = type(value)
    if kind is str:
        return len(encode_basestring(value))
    if value is None or value is True:
        return 4
    if value is False:
        return 5
    if kind is int:
        return len(int.__repr__(value))
    return len(data_text(value))


# -- the order ---------------------------------------------------------------------------------
# Events the host adds after the sandbox has gone (a dead sandbox, an invalid result) sort last.
LAST: tuple[Any, ...] = ((1 << 62,),)
TIMING_KEYS = ("latency_ms", "elapsed_ms", "duration_ms")


def kept_order(order: Any) -> Any:
    """An order key as a run keeps it: a list (as JSON gives it) becomes a tuple, and each
    of its steps that is a list a tuple too; anything else is kept as it came. Equal as
    JSON; tuples of atomic values drop out of the cyclic collector's sight after their
    first collection, lists stay in it as long as the run keeps its events."""
    if not isinstance(order, list):
        return order
    steps = []  # a loop: in CPython 3.11 a comprehension costs a function call more
    for step in order:
        steps.append(tuple(step) if isinstance(step, list) else step)
    return tuple(steps)


def sub_order(payload: dict[str, Any]) -> tuple[Any, ...]:
    """The order key of the next host event for one sandbox request (an agent call, an
    approval): under the request's own key, in the order the host emits them (a kept key,
    as `kept_order` makes them; the request's key is converted once, under `_order`)."""
    count = payload.get("_events", 0)
    count = payload["_events"] = count + 1 if type(count) is int else int(count) + 1
    base = payload.get("_order")
    if type(base) is not tuple:  # the request's own key, not yet converted (JSON gives no tuple)
        given = payload.get("order")
        base = payload["_order"] = kept_order(given) if isinstance(given, list) else LAST
    return base + (_STEPS[count] if count < _STEP_COUNT else (count,),)


# The last step of a request's first events, made once and shared (a tuple never changes).
_STEPS = tuple((n,) for n in range(16))
_STEP_COUNT = len(_STEPS)


def _key(event: Event) -> list[Any]:
    order = event.get("order")
    return _comparable(order) if isinstance(order, list | tuple) else _comparable([*LAST, (event.get("seq", 0),)])


def _comparable(order: list[Any] | tuple[Any, ...]) -> list[list[tuple[int, Any]]]:
    """An order key that always compares: numbers before strings before anything else
    (as text). Keys from the sandbox are lists of lists of numbers and branch names (tuples
    of tuples once kept), whose order this keeps; a forged key of mixed types sorts
    somewhere instead of raising `TypeError` and taking the run view and `%events` down
    with it."""
    def part(item: Any) -> tuple[int, Any]:
        if isinstance(item, int | float) and not isinstance(item, bool):
            return (0, item)
        return (1, item) if isinstance(item, str) else (2, repr(item))

    return [[part(x) for x in step] if isinstance(step, list | tuple) else [part(step)] for step in order]


def json_copy(value: Any) -> Any:
    """A copy of an event's value in its JSON form: dicts and lists copied, tuples (the
    sequences the host keeps, `kept_order`) made lists as `json` writes them, any other
    value deep-copied."""
    if isinstance(value, dict):
        return {key: json_copy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_copy(item) for item in value]
    return value if value is None or isinstance(value, str | int | float) else copy.deepcopy(value)


def canonical(events: list[Event]) -> list[Event]:
    """The events in canonical order, renumbered 1…n (copies in their JSON form, `json_copy`:
    a run's events and the same events read back from its journal give equal sequences;
    the input is untouched). Timing and live kinds (`Kind.timing`: provider waits,
    breakers, streamed deltas) are left out: they depend on when things happened, not on
    the program and its answers."""
    ordered = [json_copy(e) for e in sorted(events, key=_key) if not _timing(e)]
    for seq, event in enumerate(ordered, 1):
        event["seq"] = seq
    return ordered


def _timing(event: Event) -> bool:
    kind = kind_of(event.get("type"))
    return kind is not None and kind.timing


_LIVE = frozenset(kind.name for kind in _ALL if kind.live)


def is_live(event: Event) -> bool:
    """An event for the live sinks only (`Kind.live`): not kept, not journaled."""
    kind = event.get("type")
    return isinstance(kind, str) and kind in _LIVE


def comparable(events: list[Event]) -> list[Event]:
    """`canonical` without timestamps and durations: equal for two runs of the same program,
    input and answers."""
    out = canonical(events)
    for event in out:
        event.pop("ts", None)
        data = event.get("data")
        if isinstance(data, dict):
            for key in TIMING_KEYS:
                data.pop(key, None)
    return out

"""The run view's wire to the browser, declared once: the records the host sends (one per
run event worth a row, `views/run_stream.py` makes them) and the messages that carry them.

Each record is a `TypedDict` with readable field names; the wire writes every field under a
short key (`Key`) and the record's kind as a one-letter tag under `e` (`Tag`), because a run
of 10,000 calls sends 20,000 records and readable keys would cost a third more bytes
(docs/performance.md). `encode` turns a record into its wire form; the browser's mirror,
`widgets/src/wire.js`, decodes it back into the readable names by the same table, which
`tests/widgets/test_wire.py` holds equal to `wire_table()`. A field the record leaves out is
left out on the wire too; a field it sets to None is sent as null.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    Required,
    TypedDict,
    get_args,
    get_origin,
    get_type_hints,
)


@dataclass(frozen=True)
class Key:
    """A field's key on the wire."""

    short: str


@dataclass(frozen=True)
class Tag:
    """A record's kind on the wire (the value under `e`)."""

    short: str


RECORD_KEY = "e"  # the wire key of every record's kind


# -- the records (the host's side of a run event) --------------------------------------------
class ScopeStarted(TypedDict, total=False):
    record: Required[Annotated[Literal["scope_started"], Tag("s")]]
    id: Required[Annotated[str, Key("i")]]
    parent: Required[Annotated[str | None, Key("p")]]
    scope: Required[Annotated[str, Key("k")]]          # workflow | pipeline | stage
    name: Required[Annotated[str, Key("n")]]
    time: Required[Annotated[int | None, Key("t")]]    # ms since the run's first event
    limits: Annotated[dict[str, int], Key("lim")]      # the top workflow's limits


class ScopeEnded(TypedDict, total=False):
    record: Required[Annotated[Literal["scope_ended"], Tag("x")]]
    id: Required[Annotated[str, Key("i")]]
    state: Required[Annotated[str, Key("s")]]          # completed | failed
    time: Required[Annotated[int | None, Key("t")]]
    code: Annotated[str, Key("c")]                     # a failure's error code…
    message: Annotated[str, Key("m")]                  # …and message


class CallStarted(TypedDict, total=False):
    record: Required[Annotated[Literal["call_started"], Tag("a")]]
    id: Required[Annotated[str, Key("i")]]
    parent: Required[Annotated[str | None, Key("p")]]
    agent: Required[Annotated[str, Key("a")]]
    label: Required[Annotated[str, Key("l")]]          # the call's label, else its prompt's start
    time: Required[Annotated[int | None, Key("t")]]
    group: Annotated[str, Key("g")]                    # the parallelMap it is an item of…
    index: Annotated[int, Key("x")]                    # …its index there, from 0…
    of: Annotated[int, Key("of")]                      # …and the map's size


class CallEnded(TypedDict, total=False):
    record: Required[Annotated[Literal["call_ended"], Tag("b")]]
    id: Required[Annotated[str, Key("i")]]
    state: Required[Annotated[str, Key("s")]]          # completed | failed
    latency: Required[Annotated[int | None, Key("ms")]]
    attempts: Required[Annotated[int, Key("n")]]
    retries: Required[Annotated[int, Key("r")]]        # repairs and retries
    time: Required[Annotated[int | None, Key("t")]]
    output: Annotated[str, Key("o")]                   # the output's start (completed)
    code: Annotated[str, Key("c")]                     # failed
    message: Annotated[str, Key("m")]


class Progress(TypedDict):
    record: Annotated[Literal["progress"], Tag("p")]
    id: Annotated[str, Key("i")]
    done: Annotated[int | float | None, Key("d")]
    total: Annotated[int | float | None, Key("n")]
    message: Annotated[str, Key("m")]


class _InScope(TypedDict):
    """What every record of a point event carries: its scope and its time."""

    id: Annotated[str, Key("i")]
    time: Annotated[int | None, Key("t")]


class ApprovalAsked(_InScope):
    record: Annotated[Literal["approval_asked"], Tag("r")]
    kind: Annotated[str, Key("k")]                     # approve | ask | tool
    question: Annotated[str, Key("q")]


class ApprovalAnswered(TypedDict):
    record: Annotated[Literal["approval_answered"], Tag("d")]
    question: Annotated[str, Key("q")]
    answer: Annotated[Any, Key("a")]                   # yes/no, the text answered, or null
    by: Annotated[str, Key("by")]
    code: Annotated[str, Key("c")]                     # the error when no answer came
    time: Annotated[int | None, Key("t")]


class _Message(_InScope):
    message: Annotated[str, Key("m")]


class Log(_Message):
    record: Annotated[Literal["log"], Tag("l")]


class Verify(_Message):
    record: Annotated[Literal["verify"], Tag("v")]
    ok: Annotated[bool, Key("ok")]


class RequireFailed(_Message):
    record: Annotated[Literal["require_failed"], Tag("q")]


class Artifact(_InScope, total=False):
    record: Required[Annotated[Literal["artifact"], Tag("f")]]
    name: Required[Annotated[str, Key("n")]]
    primary: Annotated[bool, Key("pm")]               # only on the run's primary artifact (`publish primary`)


class ModelDegraded(_InScope):                         # on the call (`id`): `for:<purpose> else default` fell back
    record: Annotated[Literal["model_degraded"], Tag("g")]
    purpose: Annotated[str, Key("pu")]                 # the purpose no model is configured for…
    model: Annotated[str, Key("md")]                   # …and the session's model the call used instead


# The live state of a call (timing and live kinds: shown while the run goes, never in the
# static summary). A piece of streamed text is model output: the browser shows it as text.
class CallText(_InScope):
    record: Annotated[Literal["call_text"], Tag("w")]
    attempt: Annotated[int | None, Key("n")]           # the attempt and the tool round written…
    round: Annotated[int | None, Key("r")]             # …(a new one writes from the start)
    text: Annotated[str, Key("w")]                     # appended since the call's last piece (its end, clipped)
    length: Annotated[int | None, Key("len")]          # the answer's length after it


class CallWaiting(_InScope):
    record: Annotated[Literal["call_waiting"], Tag("h")]
    provider: Annotated[str, Key("pv")]
    reason: Annotated[str, Key("k")]                   # rpm | tpm | bulkhead | retry-after
    wait: Annotated[int | None, Key("ms")]             # the wait it expects (null: until a slot frees)


class CallResumed(_InScope):
    record: Annotated[Literal["call_resumed"], Tag("u")]
    waited: Annotated[int | None, Key("ms")]


class Breaker(_InScope):
    record: Annotated[Literal["breaker"], Tag("k")]
    provider: Annotated[str, Key("pv")]
    state: Annotated[str, Key("s")]                    # open | half-open | closed
    pause: Annotated[int | None, Key("ms")]            # open: until a probe may go through


Record = (ScopeStarted | ScopeEnded | CallStarted | CallEnded | Progress | ApprovalAsked | ApprovalAnswered
          | Log | Verify | RequireFailed | Artifact | ModelDegraded | CallText | CallWaiting | CallResumed | Breaker)
RECORD_TYPES: tuple[type, ...] = (ScopeStarted, ScopeEnded, CallStarted, CallEnded, Progress, ApprovalAsked,
                                  ApprovalAnswered, Log, Verify, RequireFailed, Artifact, ModelDegraded, CallText,
                                  CallWaiting, CallResumed, Breaker)


# -- the messages (their keys are the wire's as they are: a few a second) --------------------
# Host → browser: records `from` (the run's index of the first) on, in order; a replay for a
# view that said `hello` also says the run's time `now` (ms since its first event), which its
# newest record may be far behind. (`from` is a keyword, hence the functional form.)
Batch = TypedDict("Batch", {"t": Literal["batch"], "from": int, "ev": list[dict[str, Any]], "now": NotRequired[int]})


class End(TypedDict):
    """Host → browser: the run ended with status `s` after `ms` milliseconds."""

    t: Literal["end"]
    s: str
    ms: int | None


class Detail(TypedDict):
    """Host → browser: the full card `d` of agent call `i`."""

    t: Literal["detail"]
    i: str
    d: dict[str, Any]


class Hello(TypedDict):
    """Browser → host: a view opened, holding the first `have` records."""

    t: Literal["hello"]
    have: int


class DetailRequest(TypedDict):
    """Browser → host: the card of agent call `i` was opened."""

    t: Literal["detail"]
    i: str


TO_BROWSER: tuple[type, ...] = (Batch, End, Detail)
TO_HOST: tuple[type, ...] = (Hello, DetailRequest)


# -- the table both sides read ----------------------------------------------------------------
@dataclass(frozen=True)
class RecordSpec:
    """One record's wire form: its readable name, its tag, each field's short key."""

    name: str
    tag: str
    keys: dict[str, str]            # readable field -> short key


def _spec(record_type: type) -> RecordSpec:
    hints = get_type_hints(record_type, include_extras=True)
    name, tag, keys = "", "", {}
    for field_name, hint in hints.items():
        while get_origin(hint) is Required:
            hint = get_args(hint)[0]
        literal, *marks = get_args(hint)
        for mark in marks:
            if isinstance(mark, Tag):
                name, tag = get_args(literal)[0], mark.short
            elif isinstance(mark, Key):
                keys[field_name] = mark.short
    if not tag:
        raise TypeError(f"{record_type.__name__} has no `record` field with a Tag")
    return RecordSpec(name, tag, keys)


SPECS: dict[str, RecordSpec] = {spec.name: spec for spec in map(_spec, RECORD_TYPES)}


def encode(record: Record) -> dict[str, Any]:
    """The record as the wire carries it: its tag under `e`, each field under its key."""
    spec = SPECS[record["record"]]
    wire: dict[str, Any] = {RECORD_KEY: spec.tag}
    for name, value in record.items():
        if name != "record":
            wire[spec.keys[name]] = value
    return wire


def wire_table() -> dict[str, Any]:
    """The declaration as plain JSON, as `widgets/src/wire.js` writes it: records by tag
    (`{record, fields: {short key: readable name}}`) and each message's keys."""
    records = {spec.tag: {"record": spec.name, "fields": {short: name for name, short in spec.keys.items()}}
               for spec in SPECS.values()}
    messages = {_snake(m.__name__): sorted(m.__annotations__) for m in (*TO_BROWSER, *TO_HOST)}
    return {"records": records, "messages": messages}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()

"""What the sandbox asks the host for during one run: agent calls, operator prompts,
processes, the clock, and where its events go.

Agent calls go through the pipeline in `agents.py`; this module answers the rest and
numbers the events.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from flow_kernel.errors import (
    CapabilityViolationError,
    FlowError,
    OutputValidationError,
    ProcessError,
    WorkflowInputValidationError,
)
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.lang.env import DEFAULT_LIMITS
from flow_kernel.runtime.agents import AgentPipeline, HostCalls, SandboxCall
from flow_kernel.runtime.budgets import FrameBudget, Frames, Gate
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable.cancel import CancelWatch
from flow_kernel.runtime.durable.checkpoint import RunCheckpoint, position
from flow_kernel.runtime.durable.deadlines import PromptDeadline, answer_by
from flow_kernel.runtime.durable.journal import digest
from flow_kernel.runtime.events.vocabulary import (
    HOST_ONLY_PREFIXES,
    LAST,
    Event,
    is_live,
    kept_order,
    sub_order,
)
from flow_kernel.runtime.events.vocabulary import data_text as _data_text  # the ceiling's text
from flow_kernel.runtime.policy import processes
from flow_kernel.runtime.validation import require_valid, schema_validator

_UTC = datetime.UTC
_last_ts: tuple[int, str] = (-1, "")  # the millisecond of the last event's timestamp, and its text


def _timestamp() -> str:
    """Now as an event's `ts` (ISO 8601, UTC, milliseconds). A burst of events shares a
    millisecond: its text is made once (datetime's `now` and `isoformat` cost more than the
    rest of numbering an event)."""
    global _last_ts
    ms = time.time_ns() // 1_000_000
    if ms != _last_ts[0]:
        _last_ts = (ms, datetime.datetime.fromtimestamp(ms / 1000, _UTC).isoformat(timespec="milliseconds"))
    return _last_ts[1]


@dataclass
class HostServices:
    """The host side of one run: `context` holds its settings (its `run_id` set), `checkpoint`
    the run's journal to answer effects from and write them to (checkpoint.py)."""

    check: CheckResult
    context: RunContext = field(default_factory=RunContext)
    checkpoint: RunCheckpoint | None = None
    sandbox_call: SandboxCall | None = None

    def __post_init__(self) -> None:
        self.run_id = self.context.run_id or ""
        self.events: list[Event] = []
        self.seq = 0
        self.output_bytes = 0  # bytes of event data so far, against `ceilings.output_bytes`
        self._output_ceiling = self.context.ceilings.output_bytes
        self.failure: FlowError | None = None  # set when the host stops the run (see `fail`)
        self.cancel_watch: CancelWatch | None = None  # `flow cancel`'s request, looked for at each effect (run.py)
        self._stop: asyncio.Future[FlowError] | None = None
        self._deadline: float | None = None
        self.run_policy = processes.RunPolicy(self.context.allow_run)
        self.children = processes.Children(min(processes.CHILDREN_AT_ONCE, self.context.ceilings.concurrency))  # killed when the run ends
        self._validators: dict[tuple[str, str], Any] = {}  # (workflow, error code) -> its schema's validator
        self.frames = Frames()
        self.traces: list[dict[str, Any]] = []  # the agent pipeline's traces (it appends to this list)
        self._agents: AgentPipeline | None = None
        self._released = False

    @property
    def agents(self) -> AgentPipeline:
        """The run's agent pipeline, built on first use: a run that calls no agent builds none.
        AttributeError after `release`."""
        if self._agents is None:
            if self._released:
                raise AttributeError("the run's agent pipeline was released")
            self._agents = AgentPipeline(self.check, self.context, self.frames,
                                         HostCalls(self.emit, self.approve_tool, emit_kept=self.emit_kept,
                                                   ask_operator=self.ask, sandbox_call=self._call_sandbox),
                                         self.checkpoint)
            self._agents.deadline = self._deadline
            self._agents.traces = self.traces
        return self._agents

    async def close_agents(self) -> None:
        """After the run: close what its agent pipeline opened (its MCP servers), if it was built."""
        if self._agents is not None:
            await self._agents.aclose()

    async def _call_sandbox(self, op: str, payload: dict[str, Any]) -> Any:
        """Ask the sandbox (set by the executor once the run has one): `expect` clauses."""
        if self.sandbox_call is None:
            return []
        return await self.sandbox_call(op, payload)

    @property
    def deadline(self) -> float | None:
        """time.monotonic() at which the run's duration ends; the agent pipeline checks it too."""
        return self._deadline

    @deadline.setter
    def deadline(self, value: float | None) -> None:
        self._deadline = value
        if self._agents is not None:
            self._agents.deadline = value

    def release(self) -> None:
        """After the run: drop the pipeline, which holds bound methods of this object. Without
        that cycle the run's objects (its events above all) are freed by reference counting
        when the outcome goes, instead of piling up in the oldest generation until a full
        collection (which then scans the whole heap, in the middle of some later run).
        Any `run` child still going (its request outlived the run) is killed with its group."""
        self.children.kill_all()
        self._agents, self._released = None, True

    # -- the host stopping a run -----------------------------------------------------------------
    def fail(self, error: FlowError) -> None:
        """Stop the run from the host side (its output budget is spent): the executor kills
        the sandbox at once and the run fails with `error`."""
        if self.failure is None:
            self.failure = error
            if self.checkpoint is not None:  # what still finishes after the stop is not a completed effect
                self.checkpoint.stopped = True
            if self._stop is not None and not self._stop.done():
                self._stop.set_result(error)

    def stop_signal(self) -> asyncio.Future[FlowError]:
        """A future that the executor races against the run: done when the host stops it."""
        if self._stop is None:
            self._stop = asyncio.get_running_loop().create_future()
            if self.failure is not None:
                self._stop.set_result(self.failure)
        return self._stop

    # -- events ---------------------------------------------------------------------------
    def emit(self, event: dict[str, Any], *, last: bool = False) -> None:
        """Number an event and hand it to the sinks. Past the run's output budget nothing more
        is kept (memory and journal stay bounded) and the run is stopped; `last` is the run's
        own end, which is recorded even then."""
        if self.failure is not None and not last:
            return
        if is_live(event):
            self._emit_live(event)
            return
        self.emit_kept(event["type"], event.get("span") or {"id": None, "parent": None}, event.get("stage"),
                       event.get("data"), event.get("order") or LAST, last=last)

    def emit_kept(self, kind: Any, span: Any, stage: Any, data: Any, order: Any, size: int | None = None,
                  last: bool = False) -> None:
        """`emit` of a kind that is not live, given in parts (the agent pipeline's events are
        built once, here, rather than as a dict that `emit` copies): numbered, kept, handed
        to the sinks; nothing once the host has stopped the run, but the run's own end (`last`).
        `size`: the length of the data's text (`vocabulary.data_text`) when the caller knows
        it (None: measured here); the output ceiling counts it."""
        # Any: an event the sandbox announced comes as it was sent (a forged `type`, `span`
        # or `order` of another type is kept as it came; views and `canonical` cope with it).
        # Its order key, a list from JSON, is kept as tuples (`kept_order`).
        if self.failure is not None and not last:
            return
        if isinstance(order, list):
            order = kept_order(order)
        self.output_bytes += len(_data_text(data)) if size is None else size
        if self.output_bytes > self._output_ceiling and not last:
            self.fail(self.context.ceilings.exceeded("output", self.output_bytes))
            return
        self.seq += 1
        full = {"type": kind, "run": self.run_id, "seq": self.seq, "ts": _timestamp(), "span": span, "stage": stage,
                "data": data or {}, "order": order}
        if kind == "workflow.started":
            data = full["data"]
            limits = self.context.ceilings.clamp(self.compiled_limits(str(data.get("name"))))
            self.frames[str(data.get("frame"))] = FrameBudget(
                data.get("parent"), int(limits.get("agent_runs", 0)), name=str(data.get("name")),
                gate=Gate(max(1, int(limits.get("concurrency", 1)))),
                cost=float(limits["cost"]) if isinstance(limits.get("cost"), int | float) else None)
        self.events.append(full)
        for sink in self.context.sinks:
            with contextlib.suppress(Exception):  # sinks are best-effort (runtime.md §4)
                sink(full)

    def _emit_live(self, event: dict[str, Any]) -> None:
        """A live-only event (streamed text, events/vocabulary.py `Kind.live`): to the sinks that show
        the run as it goes, not kept in the run's events, not journaled, not numbered."""
        from flow_kernel.runtime.durable.journal import Journal

        full = {"type": event["type"], "run": self.run_id, "seq": self.seq,
                "ts": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
                "span": event.get("span") or {"id": None, "parent": None}, "stage": event.get("stage"),
                "data": event.get("data") or {}, "order": LAST}
        for sink in self.context.sinks:
            if not isinstance(sink, Journal):
                with contextlib.suppress(Exception):  # sinks are best-effort (runtime.md §4)
                    sink(full)

    def compiled_limits(self, name: str) -> dict[str, Any]:
        """The limits the checker gave workflow `name` (`<cell>`: the top level). The host
        budgets from these, not from the limits a `workflow.started` event announces: a
        sandbox that lies about its limits gets no more than the source allows, and a frame
        of no known workflow gets no agent runs at all."""
        if name == "<cell>":
            return dict(self.check.toplevel.limits if self.check.toplevel is not None else DEFAULT_LIMITS)
        context = self.check.workflows.get(name)
        return dict(context.limits) if context is not None else {"agent_runs": 0, "concurrency": 1}

    def on_notify(self, op: str, payload: dict[str, Any]) -> None:
        # Only the host says what an operator or a provider answered: a sandbox that announces
        # an `approval.*` or `agent.*` event (a bypassed one: the bootstrap never does) is not heard.
        if op == "event" and not str(payload.get("type")).startswith(HOST_ONLY_PREFIXES):
            self.emit(payload)

    # -- requests from the sandbox -----------------------------------------------------------
    def runs_at_once(self, op: str, payload: Any) -> bool:
        """Whether the bridge may run this request up to its first wait at once, without a
        task of its own (sandbox/process.py `_start`): agent calls the pipeline says are safe."""
        if op != "agent" or not isinstance(payload, dict) or self._released:
            return False
        return (self._agents or self.agents).runs_at_once(payload)

    def handle(self, op: str, payload: Any) -> Awaitable[Any]:
        """Answer one request of the sandbox (awaited). `payload` is whatever the line held:
        anything but an object is a `capability-violation` (never a host TypeError). An agent
        call of a run whose pipeline is built and that no cancellation watches is the
        pipeline's own coroutine (one coroutine frame less per call); the rest, `_handle`."""
        agents = self._agents
        if op == "agent" and agents is not None and self.cancel_watch is None and isinstance(payload, dict):
            return agents.call(payload)
        return self._handle(op, payload)

    async def _handle(self, op: str, payload: Any) -> Any:
        if not isinstance(payload, dict):  # the bootstrap sends objects only: a bypassed sandbox
            raise CapabilityViolationError(f"the host operation {str(op)[:40]!r} takes an object")
        if self.cancel_watch is not None and (request := self.cancel_watch.check()) is not None:
            self.fail(request.error())  # an effect boundary: a cancelled run does nothing more
            raise self.failure or request.error()
        if op == "agent":
            return await self.agents.call(payload)
        if op == "approve":
            return await self.approve(payload)
        if op == "ask":
            return await self.ask(payload)
        if op == "process":
            return await self.process(payload)
        if op == "now":
            return await self._journaled("now", payload, "", _now)
        if op == "uuid":
            return await self._journaled("uuid", payload, "", _uuid)
        if op == "echo":
            return payload
        if op == "validate":
            return self.validate_workflow(payload)
        raise CapabilityViolationError(f"unknown host operation {op!r}")

    def validate_workflow(self, payload: dict[str, Any]) -> None:
        """A nested workflow call's input (before it runs) or output (after) against its schema."""
        name = str(payload.get("workflow"))
        schemas = self.check.schema_for(name)
        if schemas is None:
            raise CapabilityViolationError(f"no workflow `{name}` to validate")
        cls: type[FlowError]
        schema: dict[str, Any]
        if "input" in payload:
            schema = _schema_dict(schemas["input"])
            required = set(schema.get("required", []))
            given = payload.get("input") or {}
            if not isinstance(given, dict):
                raise CapabilityViolationError(f"the input of `{name}` to validate must be an object")
            value: Any = {k: v for k, v in given.items() if v is not None or k in required}  # an optional not given
            what, cls = f"the input of `{name}`", WorkflowInputValidationError
        else:
            schema, value = _schema_dict(schemas["output"]), payload.get("output")
            what, cls = f"the result of `{name}`", OutputValidationError
        validator = self._validators.get((name, cls.code))
        if validator is None:
            validator = self._validators[(name, cls.code)] = schema_validator(schema)
        require_valid(schema, value, cls, what, validator)

    def _event(self, kind: str, payload: dict[str, Any], data: dict[str, Any], span: str | None = None) -> None:
        self.emit({"type": kind, "span": {"id": span or payload.get("span"), "parent": payload.get("span") if span else None},
                   "stage": payload.get("stage"), "data": data, "order": sub_order(payload)})

    # -- operator ------------------------------------------------------------------------------
    async def approve(self, payload: dict[str, Any]) -> bool:
        question = str(payload.get("question"))
        deadline = PromptDeadline.of(payload, "approve")  # `timeout T else V` (durable/deadlines.py)
        timed = deadline.event_data() if deadline is not None else {}
        self._event("approval.requested", payload, {"kind": "approve", "question": question, "details": payload.get("details"), **timed})
        try:
            answer, how = await self._decide("approve", payload, {"question": question, "details": payload.get("details"),
                                                                  **({"deadline": timed} if timed else {})},
                                             lambda: answer_by(deadline, self.context.operator.approve(
                                                 question, payload.get("details"), {"run": self.run_id, **timed})))
        except FlowError as exc:
            self._event("approval.resolved", payload, {"kind": "approve", "question": question, "error": exc.code})
            raise
        self._event("approval.resolved", payload, {"kind": "approve", "question": question, "answer": answer, "by": how})
        return answer is True

    async def approve_tool(self, agent: str, tool: str, arguments: dict[str, Any], payload: dict[str, Any],
                           replayed: tuple[bool, str] | None = None, key: str | None = None) -> tuple[bool, str]:
        """The write policy of an approval-gated tool: the operator decides each call. A replay
        passes the recorded decision (`replayed`), which is shown again, not asked again, and
        marked `by: "replayed"`: whoever the cassette says decided, no one was asked now.
        `key` is the call's place in the run (checkpoint.py): its decision is journaled there."""
        question = f"Allow `{agent}` to call `{tool}`?"
        details = {"tool": tool, "arguments": arguments}
        span = {"id": payload.get("call"), "parent": payload.get("span")}
        base = {"kind": "tool", "question": question, "agent": agent, "tool": tool}
        self.emit({"type": "approval.requested", "span": span, "stage": payload.get("stage"),
                   "data": {**base, "details": details}, "order": sub_order(payload)})
        try:
            answer, how = (bool(replayed[0]), "replayed") if replayed is not None else \
                await self._decide("tool", payload, {"question": question, "details": details},
                                   lambda: self.context.operator.approve(question, details, {"run": self.run_id, "tool": tool}),
                                   key=key)
        except FlowError as exc:
            self.emit({"type": "approval.resolved", "span": span, "stage": payload.get("stage"),
                       "data": {**base, "error": exc.code}, "order": sub_order(payload)})
            raise
        resolved = {**base, "answer": answer, "by": how} | ({"replayed": True} if replayed is not None else {})
        self.emit({"type": "approval.resolved", "span": span, "stage": payload.get("stage"),
                   "data": resolved, "order": sub_order(payload)})
        return answer, how

    async def ask(self, payload: dict[str, Any]) -> str:
        question = str(payload.get("question"))
        choice = payload.get("choice")
        deadline = PromptDeadline.of(payload, "ask", choice if isinstance(choice, list) else None)
        timed = deadline.event_data() if deadline is not None else {}
        self._event("approval.requested", payload, {"kind": "ask", "question": question, "choice": choice, **timed})
        try:
            answer, how = await self._decide(
                "ask", payload, {"question": question, "details": None, "choices": choice, **({"deadline": timed} if timed else {})},
                lambda: answer_by(deadline, self.context.operator.ask(question, choice if isinstance(choice, list) else None,
                                                              {"run": self.run_id, **timed})))
        except FlowError as exc:
            self._event("approval.resolved", payload, {"kind": "ask", "question": question, "error": exc.code})
            raise
        self._event("approval.resolved", payload, {"kind": "ask", "question": question, "answer": answer, "by": how})
        return str(answer)

    # -- processes ------------------------------------------------------------------------------
    async def process(self, payload: dict[str, Any]) -> dict[str, Any]:
        exe = str(payload.get("executable"))
        if exe not in self.run_policy.allowed:
            self.run_policy.check(exe, [])  # raises: not allowed
        path = processes.which(exe)
        if path is None:
            raise ProcessError(f"`run`: executable {exe!r} not found", details={"stdout": "", "stderr": "", "exit_code": None})
        stdin, arguments, timeout_ms = payload.get("stdin"), payload.get("arguments") or [], payload.get("timeout_ms")
        if not isinstance(arguments, list) or not (stdin is None or isinstance(stdin, str)) \
                or not (timeout_ms is None or (isinstance(timeout_ms, int | float) and not isinstance(timeout_ms, bool))):
            raise CapabilityViolationError(f"`run`: a malformed request for {exe!r} (arguments, stdin or timeout)")
        arguments = _argv(exe, arguments)
        self.run_policy.check(exe, arguments)  # pinned arguments
        timeout = float(timeout_ms or 30_000) / 1000
        if self.deadline is not None:  # a child never outlives the run's deadline
            timeout = max(0.001, min(timeout, self.deadline - time.monotonic()))
        request = {"executable": exe, "arguments": arguments, "stdin": stdin}
        return dict(await self._journaled("process", payload, request,  # the checks above hold on a resume too
                                          lambda: self.children.run(path, arguments, stdin, timeout, exe)))

    # -- the checkpoint (checkpoint.py) ------------------------------------------------------------
    async def _journaled(self, op: str, payload: dict[str, Any], request: Any,
                         live: Callable[[], Awaitable[Any]]) -> Any:
        """An effect answered from the run's journal when an earlier execution did it, else done and journaled."""
        if self.checkpoint is None:
            return await live()
        return await self.checkpoint.effect(position(op, payload), digest(request), live)

    async def _decide(self, kind: str, payload: dict[str, Any], request: dict[str, Any],
                      ask: Callable[[], Awaitable[tuple[Any, str]]], key: str | None = None) -> tuple[Any, str]:
        """An operator decision: from the journal, a later answer, `defer` (the run stops), or asked now."""
        if self.checkpoint is None:
            return await ask()
        return await self.checkpoint.decide(kind, key or position(kind, payload), request, self.context.operator.policy, ask)


async def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def _uuid() -> str:
    return str(uuid.uuid4())


def _schema_dict(schema: object) -> dict[str, Any]:
    """A workflow's input or output schema (always an object: `schema_for` builds them)."""
    assert isinstance(schema, dict)
    return schema


def _argv(exe: str, arguments: list[Any]) -> list[str]:
    """The arguments of a `run` request as they reach the child. The sandbox sends each one as text, so anything
    else (a `null` above all, which a command line cannot carry) is a `capability-violation` naming its type."""
    for a in arguments:
        if not isinstance(a, str):
            found = "null" if a is None else type(a).__name__
            raise CapabilityViolationError(f"`run`: the arguments for {exe!r} must be strings, found {found}")
    return arguments

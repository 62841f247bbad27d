"""`AgentPipeline`: one agent call from the sandbox's request to its answer, in the order
of runtime.md §4 (the package docstring lists the steps and the attempt layers)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from flow_kernel.errors import (
    AgentInvocationError,
    CapabilityViolationError,
    FlowError,
    FlowEvaluationError,
    OutputValidationError,
    WorkflowTimeoutError,
)
from flow_kernel.lang import ast
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.lang.prices import FREE, Price, price_of
from flow_kernel.lang.purposes import by_purpose, degrades, purpose_of, unset_message
from flow_kernel.lang.schema import type_schema
from flow_kernel.runtime.agents.attempt import Attempt, AttemptLayer, CallRefused, Invoke, chain
from flow_kernel.runtime.agents.calls import (
    AgentCall,
    AgentSpec,
    CompiledSchemas,
    agent_spec,
    checked_options,
    expect_messages,
    prompt_files_identity,
    sorted_json,
)
from flow_kernel.runtime.agents.cassette import RecordLayer, ReplayLayer
from flow_kernel.runtime.agents.cost import CostLayer
from flow_kernel.runtime.agents.guard import GuardLayer, TimeoutLayer
from flow_kernel.runtime.agents.journal import JournalLayer
from flow_kernel.runtime.agents.request import (
    OperatorAsk,
    RequestLayer,
    ToolApprover,
    ToolUse,
    max_tool_calls,
)
from flow_kernel.runtime.agents.streaming import StreamingLayer
from flow_kernel.runtime.budgets import FrameBudget, Gate, charge_agent_run
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable.checkpoint import RunCheckpoint
from flow_kernel.runtime.events.vocabulary import Event, sub_order, text_size
from flow_kernel.runtime.prompts import TRUST_OPTIONS, system_prompt, user_prompt
from flow_kernel.runtime.providers.base import Provider, is_plain_text
from flow_kernel.runtime.providers.resilience import Resilience
from flow_kernel.runtime.providers.streaming import INTERVAL as DELTA_INTERVAL
from flow_kernel.runtime.providers.table import PROVIDERS, calls_tools, is_local
from flow_kernel.runtime.remote.mcp import McpConnections
from flow_kernel.runtime.tools import narrow
from flow_kernel.runtime.validation import schema_errors, schema_validator

if TYPE_CHECKING:
    import jsonschema

Trace = dict[str, Any]
SandboxCall = Callable[[str, dict[str, Any]], Awaitable[Any]]
# The host's emit of a call's own events by their parts: (kind, span, stage, data, order).
# `size`: the length of the data's text when the pipeline added it up (None: the host measures it).
EmitKept = Callable[[str, dict[str, Any], Any, dict[str, Any], tuple[Any, ...], int | None], None]


@dataclass(frozen=True)
class HostCalls:
    """What the pipeline asks of the run's host: `emit` an event (numbered and kept, or
    live only), `approve_tool` (request.py), and optionally `emit_kept` (a call's own
    events, built once from their parts), `ask_operator` (a question the model's side asks
    mid-call, like the program's own `ask`) and `sandbox_call` (an `expect` check)."""

    emit: Callable[[Event], None]
    approve_tool: ToolApprover
    emit_kept: EmitKept | None = None
    ask_operator: OperatorAsk | None = None
    sandbox_call: SandboxCall | None = None


class RunDeadline:
    """The run's deadline (`at`: time.monotonic(), None without one), held apart from the
    pipeline so that the layers reading it hold no reference back to the pipeline: a run's
    pipeline and host are then freed by reference counting when the run's outcome goes,
    not left in a reference cycle for the collector to scan."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at: float | None = None

    def remaining(self) -> float | None:
        """Seconds left before the deadline; None without one."""
        return None if self.at is None else self.at - time.monotonic()


@dataclass(slots=True)
class AgentPlan:
    """What every call of one agent shares within a run, worked out by its first call that
    gets that far (`AgentPipeline._plan`; a failure is not kept: the next call raises it
    again): its provider, model and price, its attempt chain, its prompt files' part of a
    cassette identity, and the settings its declaration gives each call."""

    spec: AgentSpec
    provider: str
    model: str
    price: Price | None
    invoke: Invoke  # the attempt chain: `invoke_own` for the pipeline's own providers
    own: bool  # one of the providers the pipeline made itself (the local ones)
    priced: bool  # a price, of a provider that is not local: its events and trace show `cost`
    files: str  # its prompt files' part of a cassette identity (`prompt_files_identity`)
    degraded: str | None  # its purpose, when `for:… else default` fell back to the session's model
    repair: Any  # the declaration's `repair` (1 when it has none), as written
    retry: dict[str, Any]  # the declaration's `retry` table ({} when it has none)
    timeout: Any  # the declaration's `timeout` (None when it has none)
    max_tool_calls: int | None  # the declaration's, checked (`max_tool_calls`); None: checked each call
    # The text sizes of its events' data without their per-call values (`_template_sizes`);
    # None for an agent with tools (their narrowing may differ from call to call).
    sizes: tuple[int, int, int] | None


class AgentPipeline:
    # Seconds between two `agent.delta` events of a call; the bench sets it on the class (a
    # ClassVar: compiled, a plain default would be each object's own, blind to that).
    delta_interval: ClassVar[float] = DELTA_INTERVAL

    def __init__(self, check: CheckResult, context: RunContext, frames: dict[str, FrameBudget], host: HostCalls,
                 checkpoint: RunCheckpoint | None = None) -> None:
        """The pipeline of one run of `check`: its settings from `context`, its workflow
        frames' budgets in `frames` (filled as frames start), `checkpoint` the run's journal
        (attempts and tool results answered from it, written to it)."""
        self.check = check
        self.context = context
        self.config = config = context.config
        self.frames = frames
        self.host = host
        self.emit = host.emit
        self._deadline = RunDeadline()  # the guard layer reads it too (host.py sets it)
        self.traces: list[Trace] = []
        self.trace_sinks = context.trace_sinks
        self.agents = {name: agent_spec(entry.node, entry.agent.tools if entry.agent else [], entry.agent)
                       for name, entry in check.decls.items()
                       if entry.kind == "agent" and isinstance(entry.node, ast.AgentDecl)}
        decls = {name: spec.decl for name, spec in self.agents.items()}
        self.providers: dict[str, Provider] = dict(context.providers)
        # The local providers are made when the run starts, from the program (a resumed run's
        # journal moves the scripted one's place before any live attempt); the pipeline's own
        # may start a call in the bridge's reader (`runs_at_once`), an embedder's may not.
        self._own = tuple(name for name, entry in PROVIDERS.items() if entry.local and name not in self.providers)
        for name in self._own:
            self.providers[name] = PROVIDERS[name].make_for(config, decls)
        # calls so far by (agent, label): the cassette key's `occurrence`, counted within this run
        # (one pipeline per run), so a re-run cell replays the same answers (runtime/durable/cassette.py)
        self._occurrences: dict[tuple[str, str], int] = {}
        # An agent's calls repeat the same contract: build its validator and system prompt once.
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        self._plain: dict[str, bool] = {}  # schema key -> whether it is a bare `string` contract (`is_plain_text`)
        self._systems: dict[tuple[str, str, tuple[str, ...]], str] = {}
        self._compiled_schemas: CompiledSchemas | None = None  # made on the first call
        self._plans: dict[str, AgentPlan] = {}  # agent -> what all its calls share (`_plan`)
        # MCP servers lending tools (`tool … from mcp "NAME"`), opened on first use, closed by `aclose`
        self.mcp = McpConnections(config.mcp, config.path.parent if config.path is not None else None)
        # Each remote provider's rate limits, Retry-After, breaker and bulkhead: the session's,
        # shared by its runs; a run of its own otherwise.
        self.resilience = context.resilience or Resilience(lambda name: config.provider(name).options)
        self.layers = self._layers(checkpoint, decls)  # the attempt chain, outermost first
        self.invoke = chain(self.layers)
        # The chain of an attempt of the pipeline's own (local) providers: without the layers
        # that pass such an attempt through untouched (they never stream; they have no guard).
        self.invoke_own = chain([layer for layer in self.layers if not isinstance(layer, StreamingLayer | GuardLayer)])

    def _layers(self, checkpoint: RunCheckpoint | None, decls: dict[str, ast.AgentDecl]) -> list[AttemptLayer]:
        """The attempt chain of this run, outermost first: only the layers that apply."""
        context, host = self.context, self.host
        scope = context.cassette_scope or ""  # the cassette key's program and workflow: cassette.source_scope
        layers: list[AttemptLayer] = [CostLayer(self.frames, self.config)]
        if checkpoint is not None:
            layers.append(JournalLayer(checkpoint, self.providers))
        if context.player is not None:
            layers.append(ReplayLayer(context.player, scope, host.approve_tool))
        elif context.recorder is not None:
            layers.append(RecordLayer(context.recorder, scope))
        tools = ToolUse(self.check, context.tools, self.mcp, host.approve_tool, checkpoint)
        layers += [RequestLayer(self.providers, self.config, decls, tools, host.ask_operator),
                   StreamingLayer(self.emit, self.config, self.delta_interval),
                   GuardLayer(self.resilience, self._deadline.remaining, self.emit),
                   TimeoutLayer()]
        return layers

    async def aclose(self) -> None:
        """After the run: close what the run opened (its MCP servers)."""
        await self.mcp.aclose()

    @property
    def deadline(self) -> float | None:
        """time.monotonic() at which the run's duration ends (host.py sets it); None without one."""
        return self._deadline.at

    @deadline.setter
    def deadline(self, value: float | None) -> None:
        self._deadline.at = value

    # -- the pipeline ------------------------------------------------------------------------
    def runs_at_once(self, payload: dict[str, Any]) -> bool:
        """Whether a call may run its first step in the bridge's reader instead of a task of
        its own (sandbox/process.py `_start`): only a call of an agent already resolved this
        run to one of the providers the pipeline made itself (the local ones), without tools.
        Remote clients (anyio's cancel scopes) and MCP tools tie their state to the current
        task, which would change between the first step and the rest (Python 3.11 has no
        eager tasks)."""
        name = payload.get("agent")
        plan = self._plans.get(name) if isinstance(name, str) else None
        return plan is not None and plan.own and not plan.spec.tools

    async def call(self, payload: dict[str, Any]) -> Any:
        options = checked_options(payload)
        label = options.get("label")
        started = time.monotonic()
        prepared: AgentCall | None = None
        name = str(payload.get("agent") or f"{payload.get('team')}.{payload.get('member')}")  # until resolved
        reported = False  # a resolution failure's event is out already
        sizes: tuple[int, int, int] | None = None  # the plan's, when the events' text sizes add up
        label_size = 0
        try:
            self._check_deadline()
            frame = payload.get("frame")
            charge_agent_run(self.frames, frame, name)  # the first attempt, before the gate (runtime.md §4)
            gate = self.frames[frame].gate if frame in self.frames else None
            # the frame's concurrency slot (`async with` costs two coroutines more; a free one, none)
            if gate is not None and not (isinstance(gate, Gate) and gate.take()):
                await gate.acquire()
            try:
                try:
                    name = self._resolve(payload)
                except FlowError as exc:
                    self._event("agent.failed", payload, {"agent": payload.get("member"), "team": payload.get("team"),
                                                          "label": label, "code": exc.code, "message": exc.message})
                    reported = True
                    raise
                plan = self._plans.get(name) or self._plan(name)
                prepared = self._prepare(plan, payload, options)
                prompt = payload.get("prompt")
                sizes = plan.sizes
                if sizes is not None:
                    label_size = text_size(label)
                self._started(payload, {"agent": name, "label": label, "prompt": prompt,
                                        "provider": prepared.provider, "model": prepared.model,
                                        "tools": tuple([t.name for t in prepared.tools]) if prepared.tools else ()},
                              sizes, label_size + text_size(prompt) if sizes is not None else 0)
                if plan.degraded is not None:
                    self._event("model.degraded", payload, {"agent": name, "label": label, "purpose": plan.degraded,
                                                            "model": _model_name(prepared)})
                output = await self._contract(prepared, plan, options)
            finally:
                if gate is not None:
                    gate.release()
        except FlowError as exc:
            if reported:
                raise
            if prepared is None:
                self._started(payload, {"agent": name, "label": label, "prompt": payload.get("prompt")})
            latency = round((time.monotonic() - started) * 1000)
            self._event("agent.failed", payload, {"agent": name, "label": label, "code": exc.code, "message": exc.message,
                                                  **exc.details, **self._summary(prepared), "latency_ms": latency})
            self._trace(prepared, name, payload, label, exc.code, latency)
            raise
        latency = round((time.monotonic() - started) * 1000)
        summary = self._summary(prepared)
        size = None
        if sizes is not None and len(summary) == 2:  # `attempts` and `usage`, as the template has them
            size = (sizes[2] + label_size + text_size(output) + _attempts_size(summary["attempts"])
                    + _usage_size(summary["usage"]) + text_size(latency))
        self._event("agent.completed", payload, {"agent": name, "label": label, "output": output, **summary,
                                                 "latency_ms": latency}, size)
        self._trace(prepared, name, payload, label, "ok", latency)
        return output

    def _started(self, payload: dict[str, Any], data: dict[str, Any], sizes: tuple[int, int, int] | None = None,
                 known: int = 0) -> None:
        """The call's `agent.started` event: `data`, and for a parallelMap item's call the
        map's size (`of`, for the run view's bar). With the plan's `sizes`, the text size of
        `data` is theirs plus `known`, the text sizes of its label and prompt."""
        size = payload.get("of")
        total = None if sizes is None else sizes[0] + known
        if isinstance(size, int) and not isinstance(size, bool) and 0 < size <= 10**9:
            data["of"] = size  # each caller's `data` is its own, made for this event
            if sizes is not None and total is not None:
                total += sizes[1] + text_size(size)
        self._event("agent.started", payload, data, total)

    def _event(self, kind: str, payload: dict[str, Any], data: dict[str, Any], size: int | None = None) -> None:
        span = {"id": payload.get("call"), "parent": payload.get("span")}
        emit_kept = self.host.emit_kept
        if emit_kept is not None:
            emit_kept(kind, span, payload.get("stage"), data, sub_order(payload), size)
            return
        self.emit({"type": kind, "span": span, "stage": payload.get("stage"), "data": data, "order": sub_order(payload)})

    @staticmethod
    def _summary(call: AgentCall | None) -> dict[str, Any]:
        if call is None:
            return {}
        summary: dict[str, Any] = {"attempts": call.log, "usage": dict(call.usage)}
        if call.tool_calls:
            summary["tool_calls"] = call.tool_calls
        if call.priced:
            summary["cost"] = round(call.cost, 6)
        return summary

    def _resolve(self, payload: dict[str, Any]) -> str:
        """Target resolution: an agent by name, or a team's main agent or member. Only a
        declared agent resolves: the generated code names no other, so any other name came
        from a bypassed sandbox: a `capability-violation`, never a host KeyError."""
        agent = payload.get("agent")
        if type(agent) is str and agent in self.agents:  # a declared agent by name: what `_target` gives it
            return agent
        name = self._target(payload)
        if name not in self.agents:
            raise CapabilityViolationError(f"no agent `{name}` is declared in this program", details={"agent": name})
        return name

    def _target(self, payload: dict[str, Any]) -> str:
        if payload.get("agent"):
            return str(payload["agent"])
        team_name, member = str(payload.get("team")), str(payload.get("member"))
        team = self.check.decls.get(team_name)
        info = team.team if team is not None else None
        if info is None:
            raise CapabilityViolationError(f"no team `{team_name}`")
        if member == "main" and info.main:
            return info.main
        if member in info.members or member == info.main:
            return member
        raise CapabilityViolationError(f"`{member}` is not a member of team `{team_name}`",
                                       details={"team": team_name, "member": member})

    def _plan(self, name: str) -> AgentPlan:
        """What every call of agent `name` shares in this run, worked out on its first call
        (a failure is not kept: it raises again on the next call)."""
        plan = self._plans.get(name)
        if plan is not None:
            return plan
        spec = self.agents[name]
        provider, model, degraded = self._model(spec)
        price = FREE if is_local(provider) else price_of(f"{provider}/{model}", self.config.prices)
        own = provider in self._own
        fields = spec.fields
        raw_retry = fields.get("retry")
        try:
            agent_max_tool_calls: int | None = max_tool_calls({}, fields)
        except FlowEvaluationError:  # raised by each call, when it gets there (`_prepare`)
            agent_max_tool_calls = None
        plan = self._plans[name] = AgentPlan(
            spec, provider, model, price, self.invoke_own if own else self.invoke, own,
            price is not None and not is_local(provider), prompt_files_identity(spec.prompt_files), degraded,
            fields.get("repair", 1), raw_retry if isinstance(raw_retry, dict) else {}, fields.get("timeout"),
            agent_max_tool_calls, None if spec.tools else _template_sizes(name, provider, model))
        return plan

    def _prepare(self, plan: AgentPlan, payload: dict[str, Any], options: dict[str, Any]) -> AgentCall:
        """Provider, tools narrowing and the write policy, the output contract, the prompts."""
        spec = plan.spec
        name, provider = spec.name, plan.provider
        schema, schema_key = self._output_schema(name, options.get("schema"))
        if isinstance(options.get("choice"), list):
            schema, schema_key = {"type": "string", "enum": options["choice"]}, None
        if spec.tools:  # an agent without tools has none to narrow (`narrow` gives none, misses none)
            requested = options.get("tools")
            tools, missing = narrow(self.check, spec.tools, requested if isinstance(requested, list) else None,
                                    self.context.tools, self.mcp)
            if missing and calls_tools(provider):  # a provider that never calls tools needs none
                raise CapabilityViolationError(
                    f"`{name}` may use {', '.join(f'`{m}`' for m in missing)}, but no implementation is registered on "
                    "this host (register it with Session.tool or @flow_tool; a tool `from mcp \"NAME\"` needs "
                    "[mcp.NAME] in the configuration that applies)", details={"tools": missing})
        else:
            tools = []
        label = str(options.get("label"))
        key = (name, label)
        occurrence = self._occurrences[key] = self._occurrences.get(key, 0) + 1
        if schema_key is None:
            schema_key = sorted_json(schema)
        # the trust levels the call's data comes in (`facts:`, `documents:`, `context:`: prompts.py)
        levels = tuple([option for option in TRUST_OPTIONS if options.get(option) is not None]) \
            if "facts" in options or "documents" in options or "context" in options else ()
        system_key = (name, schema_key, levels)
        system = self._systems.get(system_key)
        if system is None:
            system = self._systems[system_key] = system_prompt(spec.fields, schema, levels=levels)
        prompt = user_prompt(str(payload.get("prompt")), options.get("context"), facts=options.get("facts"),
                             documents=options.get("documents")) if levels else str(payload.get("prompt"))
        call = AgentCall(spec, payload, label, occurrence, schema, provider, plan.model, system, prompt, tools,
                         prompt + plan.files)
        call.schema_key = schema_key
        call.price = plan.price
        call.priced = plan.priced
        mtc = plan.max_tool_calls
        call.max_tool_calls = mtc if mtc is not None and options.get("max_tool_calls") is None \
            else max_tool_calls(options, spec.fields)
        return call

    def _output_schema(self, name: str, sent: Any) -> tuple[dict[str, Any], str | None]:
        """The output contract of a call: a schema the host compiled from the checked program,
        never one from the request. The request's `schema` only picks among the compiled ones
        (a call site's `output:` may differ from the agent's); anything else, from a bypassed
        sandbox (a schema with `$ref: "file:///…"`), means the agent's declared output.
        With it, its sorted JSON text when known (a compiled schema's is its key), else None."""
        if self._compiled_schemas is None:
            self._compiled_schemas = CompiledSchemas(self.check)
        found = self._compiled_schemas.find(name, sent)
        if found is not None:
            return found
        declared = self.check.decls[name].agent
        return (type_schema(declared.output) if declared is not None else {}), None

    def _model(self, spec: AgentSpec) -> tuple[str, str, str | None]:
        """The agent's provider and model name, and its purpose when `for:… else default`
        fell back to the session's model (else None)."""
        unread = next((f for f in spec.prompt_files if f.text is None), None)
        if unread is not None:  # a declaration from an earlier cell whose file went away since
            raise AgentInvocationError(f"`{spec.name}`: {unread.problem or f'prompt file {unread.path!r} was not read'}",
                                       details={"agent": spec.name, "path": unread.path})
        model = spec.model
        purpose = purpose_of(model)
        fell_back: str | None = None
        if purpose is not None:  # model by purpose: [models], else `… else default` the session's (lang/purposes.py)
            resolved, degraded = by_purpose(model, self.config.models, self.config.default_model)
            if resolved is None:
                also = ("; it would fall back to the session's model, but none is set either: set `default_model` "
                        "too, or choose a provider with %provider") if degrades(model) else ""
                raise AgentInvocationError(f"`{spec.name}` uses model \"{model}\", and {unset_message(purpose)}{also}",
                                           details={"agent": spec.name, "key": f"models.{purpose}"})
            if degraded:
                fell_back = purpose
            model = resolved
        if model == "default":
            if self.config.default_model is None:
                raise AgentInvocationError(
                    f"`{spec.name}` uses model \"default\", and no default is configured: set `default_model` in "
                    "flow.toml (or [tool.flow] in pyproject.toml), or choose a provider with %provider",
                    details={"agent": spec.name})
            model = self.config.default_model
        if is_local(model):  # a local provider's model is its name
            return model, model, fell_back
        provider, _, name = model.partition("/")
        if provider not in PROVIDERS and provider not in self.providers:
            raise AgentInvocationError(f"`{spec.name}`: unknown provider {provider!r} in model {spec.model!r} "
                                       f"(known: {', '.join(PROVIDERS)})")
        return provider, name, fell_back

    def _check_deadline(self) -> None:
        """A call that arrives once the run's deadline has passed does not start."""
        deadline = self._deadline.at
        if deadline is not None and time.monotonic() >= deadline:
            raise WorkflowTimeoutError("the run's duration ended before this agent call could start")

    def _validator(self, call: AgentCall) -> jsonschema.protocols.Validator:
        """The call's schema validator, built once per schema when first needed (a plain-text
        call never needs one: no jsonschema import for it)."""
        validator = self._validators.get(call.schema_key)
        if validator is None:
            validator = self._validators[call.schema_key] = schema_validator(call.schema)
        return validator

    async def _contract(self, call: AgentCall, plan: AgentPlan, options: dict[str, Any]) -> Any:
        """The attempt loop: each attempt through the layers (`self.invoke`), then validated
        (schema, then `expect`), repaired, retried. Each attempt after the first is charged
        to `agent_runs` before it starts; a layer's refusal ends the call as it is."""
        spec = call.spec
        choice = options.get("choice")
        repair = int(options.get("repair", plan.repair))
        retry = plan.retry
        attempts_total = int(retry.get("attempts", 1))
        timeout_ms = options.get("timeout", plan.timeout)
        plain = self._plain.get(call.schema_key)
        if plain is None:
            plain = self._plain[call.schema_key] = is_plain_text(call.schema)
        invoke = plan.invoke
        log = call.log
        last_error: FlowError | None = None
        for attempt in range(1, attempts_total + 1):
            repairs_left = repair
            fresh = True  # a retry starts over: a new attempt, not a repair of the last output
            while True:
                number = len(log) + 1
                if number > 1:  # the call's first attempt was charged before the gate (`call`)
                    charge_agent_run(self.frames, call.payload.get("frame"), spec.name)
                is_repair = not fresh and bool(log) and bool(log[-1].get("invalid"))
                fresh = False
                kind = "repair" if is_repair else "attempt"
                repair_of = {"previousOutput": log[-1]["output"], "errors": log[-1]["errors"]} if is_repair else None
                try:
                    output = (await invoke(Attempt(call, number, repair_of, timeout_ms))).output
                except CallRefused as refused:
                    raise refused.error from None
                except FlowError as exc:
                    log.append({"kind": kind, "attempt": attempt, "error": exc.code, "message": exc.message})
                    last_error = exc
                    break
                # A bare `string` contract (`is_plain_text`: nothing but `type`, `description`,
                # `$schema`) has no error for a string; jsonschema's walk is left for the rest.
                errors = [] if plain and type(output) is str else schema_errors(call.schema, output, self._validator(call))
                sandbox_call = self.host.sandbox_call
                if not errors and call.payload.get("expect") and sandbox_call is not None:
                    errors = expect_messages(await sandbox_call(
                        "expect", {"run": call.payload.get("run"), "call": call.payload.get("call"), "output": output}))
                if not errors:
                    log.append({"kind": kind, "attempt": attempt, "ok": True})
                    return output
                # kind says what this try was (an attempt or a repair); invalid, why it did not count
                log.append({"kind": kind, "attempt": attempt, "invalid": True, "errors": errors, "output": output})
                if repairs_left > 0:
                    repairs_left -= 1
                    continue
                if isinstance(choice, list) and "fallback" in options:
                    return options["fallback"]
                last_error = OutputValidationError(f"`{spec.name}` returned invalid output: {'; '.join(errors)}",
                                                   details={"errors": errors, "output": output})
                break
            assert last_error is not None
            if last_error.code not in set(retry.get("on", [])) or attempt == attempts_total:
                raise last_error
            backoff = float(retry.get("backoff", 0)) / 1000
            if backoff:
                await asyncio.sleep(backoff)
        raise last_error or AgentInvocationError(f"`{spec.name}` made no attempt")

    # -- traces ------------------------------------------------------------------------------
    def _trace(self, call: AgentCall | None, name: str, payload: dict[str, Any], label: Any, outcome: str,
               latency_ms: int) -> None:
        trace: Trace
        if call is None:
            trace = {"call": payload.get("call"), "agent": name, "label": label, "outcome": outcome,
                     "latency_ms": latency_ms}
        else:
            trace = {"call": payload.get("call"), "agent": name, "label": label, "outcome": outcome,
                     "latency_ms": latency_ms, "provider": call.provider, "model": call.model,
                     "usage": dict(call.usage), "attempts": len(call.log), "tool_calls": len(call.tool_calls)}
            if call.priced:
                trace["cost"] = round(call.cost, 6)
            if call.partial is not None:
                trace["partial"] = call.partial
            if self.context.debug:
                trace.update(prompt={"system": call.system, "user": call.prompt}, raw=list(call.raw))
        self.traces.append(trace)
        for sink in self.trace_sinks:
            with contextlib.suppress(Exception):  # trace sinks are best-effort (runtime.md §4)
                sink(trace)


# A call's attempts log when its first attempt passed (`_contract` writes each entry with an
# int from its loop and a literal True: equal to this, it is written as this), and its size.
_PASSED_AT_ONCE: list[dict[str, Any]] = [{"kind": "attempt", "attempt": 1, "ok": True}]
_PASSED_AT_ONCE_SIZE = text_size(_PASSED_AT_ONCE)
_USAGE_KEYS = ("input_tokens", "output_tokens")
_NO_USAGE_SIZE = text_size(dict.fromkeys(_USAGE_KEYS, 0)) - 2 * len("0")


def _attempts_size(log: list[dict[str, Any]]) -> int:
    """`text_size` of a call's attempts log (`_contract`'s entries), the usual one known."""
    return _PASSED_AT_ONCE_SIZE if log == _PASSED_AT_ONCE else text_size(log)


def _usage_size(usage: dict[str, Any]) -> int:
    """`text_size` of a call's usage: input and output tokens as ints from their own text."""
    if len(usage) == 2:
        given, taken = usage.get("input_tokens"), usage.get("output_tokens")
        if type(given) is int and type(taken) is int and next(iter(usage)) == "input_tokens":
            return _NO_USAGE_SIZE + len(int.__repr__(given)) + len(int.__repr__(taken))
    return text_size(usage)


def _template_sizes(agent: str, provider: str, model: str) -> tuple[int, int, int]:
    """The text sizes (`text_size`) of an agent's call events' data with their per-call
    values left out, to which a call adds theirs: `agent.started` (an agent without tools)
    without its label and prompt; what its `of` adds, without the number; `agent.completed`
    (attempts and usage only) without its label, output, attempts, usage and latency. Each
    left-out value is written as the shortest of its kind ("", [], {}, 0), then taken off."""
    started: dict[str, Any] = {"agent": agent, "label": "", "prompt": "", "provider": provider, "model": model,
                               "tools": ()}
    base = text_size(started) - 2 * len('""')
    started["of"] = 0
    of = text_size(started) - base - 2 * len('""') - len("0")
    completed = {"agent": agent, "label": "", "output": "", "attempts": [], "usage": {}, "latency_ms": 0}
    return base, of, text_size(completed) - 2 * len('""') - len("[]") - len("{}") - len("0")


def _model_name(call: AgentCall) -> str:
    """The model a call used, as a model string names it (`openai/gpt-4o-mini`, `mock`)."""
    return call.model if is_local(call.provider) else f"{call.provider}/{call.model}"

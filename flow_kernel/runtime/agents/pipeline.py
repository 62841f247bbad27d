"""The host-side agent pipeline (runtime.md §4), in its order:

cancellation/deadline (a call that arrives past the run's deadline is `workflow-timeout`;
the sandbox stops waiting at the deadline and the host drops the call's task when the run
ends) → `agent_runs` budget (the first attempt is charged here, before any wait: a call
over budget never takes a concurrency slot) → concurrency gate → target resolution → tools
narrowing → write policy → output contract → attempt loop (each later attempt, repair and
retry charged before it starts; its worst case reserved on the `cost` limits, budgets.py;
timed invocation, validation, `expect`, repair, retry) → events and a trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flow_kernel.errors import (
    AgentInvocationError,
    CapabilityViolationError,
    FlowError,
    LimitExceededError,
    OutputValidationError,
    WorkflowTimeoutError,
)
from flow_kernel.lang import ast
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.lang.env import AgentInfo
from flow_kernel.lang.literals import NOT_LITERAL, literal_value
from flow_kernel.lang.prices import DEFAULT_MAX_OUTPUT_TOKENS, Price, price_of
from flow_kernel.lang.prompt_files import PromptFile
from flow_kernel.lang.purposes import purpose_of, unset_message
from flow_kernel.lang.schema import type_schema
from flow_kernel.runtime.budgets import CostReservations, FrameBudget, Reservation
from flow_kernel.runtime.config import FlowConfig
from flow_kernel.runtime.durable.cassette import CassettePlayer, CassetteRecorder
from flow_kernel.runtime.durable.checkpoint import RunCheckpoint, position
from flow_kernel.runtime.durable.journal import digest
from flow_kernel.runtime.events.vocabulary import Event, sub_order
from flow_kernel.runtime.prompts import TRUST_OPTIONS, system_prompt, user_prompt
from flow_kernel.runtime.providers.base import (
    Provider,
    ProviderReply,
    ProviderRequest,
    ToolSpec,
    is_plain_text,
)
from flow_kernel.runtime.providers.local import MockProvider, ScriptedProvider, parse_script
from flow_kernel.runtime.providers.resilience import (
    Notify,
    ProviderGuard,
    Resilience,
    Ticket,
    estimate_tokens,
)
from flow_kernel.runtime.providers.streaming import INTERVAL as DELTA_INTERVAL
from flow_kernel.runtime.providers.streaming import Delta, DeltaMerger, DeltaSink
from flow_kernel.runtime.providers.table import LOCAL_PROVIDERS, PROVIDERS
from flow_kernel.runtime.remote.mcp import McpConnections
from flow_kernel.runtime.tools import ToolRegistry, call_tool, narrow
from flow_kernel.runtime.validation import schema_errors, schema_validator

if TYPE_CHECKING:
    import jsonschema

Trace = dict[str, Any]
TraceSink = Callable[[Trace], None]
SandboxCall = Callable[[str, dict[str, Any]], Awaitable[Any]]
# Asks the operator about one call of an approval-gated tool: (agent, tool, arguments, the
# agent call's payload for the event's span) -> (allowed, who decided how).
# A replay passes the recorded decision, which is shown again (events), not asked again.
# And, by keyword, `key`: the tool call's place in the run, where its decision is journaled
# (HostServices.approve_tool).
ToolApprover = Callable[..., Awaitable[tuple[bool, str]]]
_OWN_PROVIDERS = (ScriptedProvider, MockProvider)  # `AgentPipeline.runs_at_once`
# `json.dumps(value, sort_keys=True)` (a schema's lookup key), without a new encoder per call.
_sorted_json = json.JSONEncoder(sort_keys=True).encode


@dataclass
class AgentSpec:
    name: str
    model: str
    fields: dict[str, Any]
    tools: list[str]
    decl: ast.AgentDecl
    prompt_files: list[PromptFile] = field(default_factory=list)  # read at check time (lang/check_prompts.py)


@dataclass
class _Call:
    """One agent call as the attempt loop sees it."""

    spec: AgentSpec
    payload: dict[str, Any]
    label: str
    occurrence: int
    schema: dict[str, Any]
    provider: str
    model: str
    system: str
    prompt: str
    tools: list[ToolSpec]
    identity: str = ""  # what the cassette hashes: the prompt, plus the digests of the agent's prompt files
    log: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    raw: list[str | None] = field(default_factory=list)
    schema_key: str = ""
    merger: DeltaMerger | None = None  # its streamed text, merged into `agent.delta` events (streaming.py)
    partial: str | None = None  # what a failed attempt's stream had written, for the trace
    price: Price | None = None  # the model's price (lang/prices.py); None: unknown
    cost: float = 0.0  # what its replies cost so far
    sent: bool = False  # whether the current attempt's request went to a provider
    # The output tokens its cost reservations assume (`_reserve_cost`); its requests carry
    # them as their cap. None: no `cost` limit encloses the call.
    output_cap: int | None = None


class AgentPipeline:
    delta_interval = DELTA_INTERVAL  # seconds between two `agent.delta` events of a call (the bench sets 0)

    def __init__(self, check: CheckResult, emit: Callable[[Event], None], frames: dict[str, FrameBudget], *,
                 config: FlowConfig, tools: ToolRegistry, approve_tool: ToolApprover,
                 recorder: CassetteRecorder | None = None, player: CassettePlayer | None = None,
                 trace_sinks: list[TraceSink] | None = None, debug: bool = False,
                 providers: dict[str, Provider] | None = None,
                 scope: str = "", checkpoint: RunCheckpoint | None = None,
                 resilience: Resilience | None = None) -> None:
        self.check = check
        self.checkpoint = checkpoint  # the run's journal: attempts and tool results answered from it, written to it
        self.emit = emit
        self.frames = frames
        self.config = config
        self.registry = tools
        self.approve_tool = approve_tool
        self.recorder = recorder
        self.player = player
        self.trace_sinks = list(trace_sinks or [])
        self.debug = debug
        self.sandbox_call: SandboxCall | None = None
        # The host's `emit_kept` (host.py): the call's own events by their parts, built once.
        self.emit_kept: Callable[[str, dict[str, Any], Any, dict[str, Any], list[Any]], None] | None = None
        # The host's `ask` (HostServices.ask): a question from the model's side mid-call (an A2A
        # agent's input-required) goes to the operator like the program's own `ask`.
        self.ask_operator: Callable[[dict[str, Any]], Awaitable[str]] | None = None
        self.deadline: float | None = None  # time.monotonic() at which the run's duration ends (host.py)
        self.providers: dict[str, Provider] = dict(providers or {})
        self.traces: list[Trace] = []
        self.agents = {name: _agent_spec(entry.node, entry.agent.tools if entry.agent else [], entry.agent)
                       for name, entry in check.decls.items()
                       if entry.kind == "agent" and isinstance(entry.node, ast.AgentDecl)}
        self.providers.setdefault("scripted", ScriptedProvider({n: parse_script(s.decl) for n, s in self.agents.items()}))
        self.providers.setdefault("mock", MockProvider())
        # calls so far by (agent, label): the cassette key's `occurrence`, counted within this run
        # (one pipeline per run), so a re-run cell replays the same answers (runtime/durable/cassette.py)
        self._occurrences: dict[tuple[str, str], int] = {}
        self.scope = scope  # the cassette key's program and workflow: cassette.source_scope
        # Each remote provider's rate limits, Retry-After, breaker and bulkhead (resilience.py):
        # the session's, shared by its runs; a run of its own otherwise.
        self.resilience = resilience or Resilience(lambda name: self.config.provider(name).options)
        self._run_token = object()  # this run, for the recorder: its first answer replaces the scope's old ones
        self.reservations = CostReservations()  # the attempts' worst cases on `cost` limits (budgets.py)
        # An agent's calls repeat the same contract: build its validator and system prompt once.
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        self._systems: dict[tuple[str, str, tuple[str, ...]], str] = {}
        self._compiled_schemas: dict[str, dict[str, Any]] | None = None  # made on the first call
        self._models: dict[str, tuple[str, str, Price | None]] = {}  # agent -> provider, model, price (`_prepare`)
        self._stream_options: dict[str, bool] = {}  # provider -> its `stream` option (`_streams`)
        # MCP servers lending tools (`tool … from mcp "NAME"`), opened on first use, closed by `aclose`
        self.mcp = McpConnections(config.mcp, config.path.parent if config.path is not None else None)

    async def aclose(self) -> None:
        """After the run: close what the run opened (its MCP servers)."""
        await self.mcp.aclose()

    # -- the pipeline ------------------------------------------------------------------------
    def runs_at_once(self, payload: dict[str, Any]) -> bool:
        """Whether a call may run its first step in the bridge's reader instead of a task of
        its own (sandbox/process.py `_start`): only a call of an agent already resolved this
        run to one of the host's own providers (scripted, mock), without tools. Remote
        clients (anyio's cancel scopes) and MCP tools tie their state to the current task,
        which would change between the first step and the rest (Python 3.11 has no eager
        tasks)."""
        name = payload.get("agent")
        if not isinstance(name, str) or name not in self._models:
            return False
        return type(self.providers.get(self._models[name][0])) in _OWN_PROVIDERS and not self.agents[name].tools

    async def call(self, payload: dict[str, Any]) -> Any:
        options = _checked_options(payload)
        label = options.get("label")
        started = time.monotonic()
        prepared: _Call | None = None
        name = str(payload.get("agent") or f"{payload.get('team')}.{payload.get('member')}")  # until resolved
        reported = False  # a resolution failure's event is out already
        try:
            self._check_deadline()
            frame = payload.get("frame")
            self._charge(frame, name)  # the first attempt, before the gate (runtime.md §4)
            gate = self.frames[frame].gate if frame in self.frames else None
            async with gate if gate is not None else contextlib.nullcontext():
                try:
                    name = self._resolve(payload)
                except FlowError as exc:
                    self._event("agent.failed", payload, {"agent": payload.get("member"), "team": payload.get("team"),
                                                          "label": label, "code": exc.code, "message": exc.message})
                    reported = True
                    raise
                prepared = self._prepare(name, payload, options)
                self._event("agent.started", payload, {"agent": name, "label": label, "prompt": payload.get("prompt"),
                                                       "provider": prepared.provider, "model": prepared.model,
                                                       "tools": [t.name for t in prepared.tools]})
                output = await self._contract(prepared, options)
        except FlowError as exc:
            if reported:
                raise
            if prepared is None:
                self._event("agent.started", payload, {"agent": name, "label": label, "prompt": payload.get("prompt")})
            latency = round((time.monotonic() - started) * 1000)
            self._event("agent.failed", payload, {"agent": name, "label": label, "code": exc.code, "message": exc.message,
                                                  **exc.details, **self._summary(prepared), "latency_ms": latency})
            self._trace(prepared, name, payload, exc.code, latency)
            raise
        latency = round((time.monotonic() - started) * 1000)
        self._event("agent.completed", payload, {"agent": name, "label": label, "output": output,
                                                 **self._summary(prepared), "latency_ms": latency})
        self._trace(prepared, name, payload, "ok", latency)
        return output

    def _event(self, kind: str, payload: dict[str, Any], data: dict[str, Any]) -> None:
        size = payload.get("of")  # a parallelMap item's call: the map's size, for the run view's bar
        if kind == "agent.started" and isinstance(size, int) and not isinstance(size, bool) and 0 < size <= 10**9:
            data = {**data, "of": size}
        span = {"id": payload.get("call"), "parent": payload.get("span")}
        if self.emit_kept is not None:
            self.emit_kept(kind, span, payload.get("stage"), data, sub_order(payload))
            return
        self.emit({"type": kind, "span": span, "stage": payload.get("stage"), "data": data, "order": sub_order(payload)})

    @staticmethod
    def _summary(call: _Call | None) -> dict[str, Any]:
        if call is None:
            return {}
        summary: dict[str, Any] = {"attempts": call.log, "usage": dict(call.usage)}
        if call.tool_calls:
            summary["tool_calls"] = call.tool_calls
        if call.price is not None and call.provider not in LOCAL_PROVIDERS:
            summary["cost"] = round(call.cost, 6)
        return summary

    def _resolve(self, payload: dict[str, Any]) -> str:
        """Target resolution: an agent by name, or a team's main agent or member. Only a
        declared agent resolves: the generated code names no other, so any other name came
        from a bypassed sandbox (a host KeyError before)."""
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

    def _prepare(self, name: str, payload: dict[str, Any], options: dict[str, Any]) -> _Call:
        """Provider, tools narrowing and the write policy, the output contract, the prompts."""
        spec = self.agents[name]
        resolved = self._models.get(name)
        if resolved is None:  # the same for every call of the run (a failure is not kept: it raises each time)
            provider, model = self._model(spec)
            price = price_of(provider if provider in LOCAL_PROVIDERS else f"{provider}/{model}", self.config.prices)
            resolved = self._models[name] = (provider, model, price)
        provider, model, price = resolved
        schema, schema_key = self._output_schema(name, options.get("schema"))
        if isinstance(options.get("choice"), list):
            schema, schema_key = {"type": "string", "enum": options["choice"]}, None
        requested = options.get("tools")
        tools, missing = narrow(self.check, spec.tools, requested if isinstance(requested, list) else None, self.registry,
                                self.mcp)
        if missing and provider != "scripted":  # scripted replies never call tools
            raise CapabilityViolationError(
                f"`{name}` may use {', '.join(f'`{m}`' for m in missing)}, but no implementation is registered on this "
                "host (register it with Session.tool or @flow_tool; a tool `from mcp \"NAME\"` needs [mcp.NAME] in "
                "the configuration that applies)", details={"tools": missing})
        label = str(options.get("label"))
        occurrence = self._occurrences[(name, label)] = self._occurrences.get((name, label), 0) + 1
        context = options.get("context")
        if schema_key is None:
            schema_key = _sorted_json(schema)
        # the trust levels the call's data comes in (`facts:`, `documents:`, `context:`: prompts.py)
        levels = tuple(option for option in TRUST_OPTIONS if options.get(option) is not None)
        system_key = (name, schema_key, levels)
        system = self._systems.get(system_key)
        if system is None:
            system = self._systems[system_key] = system_prompt(spec.fields, schema, levels=levels)
        prompt = user_prompt(str(payload.get("prompt")), context, facts=options.get("facts"),
                             documents=options.get("documents"))
        call = _Call(spec, payload, label, occurrence, schema, provider, model, system, prompt, tools,
                     prompt + prompt_files_identity(spec.prompt_files))
        call.schema_key = schema_key
        call.price = price
        return call

    def _output_schema(self, name: str, sent: Any) -> tuple[dict[str, Any], str | None]:
        """The output contract of a call: a schema the host compiled from the checked program,
        never one from the request. The request's `schema` only picks among the compiled ones
        (a call site's `output:` may differ from the agent's); anything else, from a bypassed
        sandbox (a schema with `$ref: "file:///…"`), means the agent's declared output (issue 15).
        With it, its sorted JSON text when known (a compiled schema's is its key), else None."""
        if self._compiled_schemas is None:
            self._compiled_schemas = _compiled_output_schemas(self.check)
        key = _sorted_json(sent) if isinstance(sent, dict) else None
        found = self._compiled_schemas.get(key) if key is not None else None
        if found is not None:
            return found, key
        declared = self.check.decls[name].agent
        return (type_schema(declared.output) if declared is not None else {}), None

    def _model(self, spec: AgentSpec) -> tuple[str, str]:
        unread = next((f for f in spec.prompt_files if f.text is None), None)
        if unread is not None:  # a declaration from an earlier cell whose file went away since
            raise AgentInvocationError(f"`{spec.name}`: {unread.problem or f'prompt file {unread.path!r} was not read'}",
                                       details={"agent": spec.name, "path": unread.path})
        model = spec.model
        purpose = purpose_of(model)
        if purpose is not None:  # model by purpose: the configuration's [models] table (fails closed)
            if purpose not in self.config.models:
                raise AgentInvocationError(f"`{spec.name}` uses model \"{model}\", and {unset_message(purpose)}",
                                           details={"agent": spec.name, "key": f"models.{purpose}"})
            model = self.config.models[purpose]
        if model == "default":
            if self.config.default_model is None:
                raise AgentInvocationError(
                    f"`{spec.name}` uses model \"default\", and no default is configured: set `default_model` in "
                    "flow.toml (or [tool.flow] in pyproject.toml), or choose a provider with %provider",
                    details={"agent": spec.name})
            model = self.config.default_model
        if model in ("scripted", "mock"):
            return model, model
        provider, _, name = model.partition("/")
        if provider not in PROVIDERS and provider not in self.providers:
            raise AgentInvocationError(f"`{spec.name}`: unknown provider {provider!r} in model {spec.model!r} "
                                       f"(known: {', '.join((*LOCAL_PROVIDERS, *PROVIDERS))})")
        return provider, name

    def _check_deadline(self) -> None:
        """A call that arrives once the run's deadline has passed does not start."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise WorkflowTimeoutError("the run's duration ended before this agent call could start")

    def _charge(self, frame: str | None, agent: str) -> None:
        if frame not in self.frames:
            # Every call the bootstrap makes names a frame its `workflow.started` announced;
            # an unknown one would charge no budget at all (found by the escape tests).
            raise CapabilityViolationError(f"`{agent}` was called from an unknown workflow frame {frame!r}",
                                           details={"frame": frame})
        chain: list[FrameBudget] = []
        while frame is not None and frame in self.frames:
            chain.append(self.frames[frame])
            frame = self.frames[frame].parent
        for budget in chain:
            if budget.used + 1 > budget.agent_runs:
                raise LimitExceededError(f"the `agent_runs` limit of {budget.agent_runs} of `{budget.name}` is exceeded "
                                         f"(calling `{agent}`)", details={"limit": "agent_runs", "value": budget.agent_runs,
                                                                          "workflow": budget.name})
        for budget in chain:
            budget.used += 1

    def _validator(self, call: _Call) -> jsonschema.protocols.Validator:
        """The call's schema validator, built once per schema when first needed (a plain-text
        call never needs one: no jsonschema import for it)."""
        validator = self._validators.get(call.schema_key)
        if validator is None:
            validator = self._validators[call.schema_key] = schema_validator(call.schema)
        return validator

    async def _contract(self, call: _Call, options: dict[str, Any]) -> Any:
        """The attempt loop: invoke, validate (schema, then `expect`), repair, retry."""
        spec = call.spec
        choice = options.get("choice")
        repair = int(options.get("repair", spec.fields.get("repair", 1)))
        raw_retry = spec.fields.get("retry")
        retry: dict[str, Any] = raw_retry if isinstance(raw_retry, dict) else {}
        attempts_total = int(retry.get("attempts", 1))
        retry_on = set(retry.get("on", []))
        backoff = float(retry.get("backoff", 0)) / 1000
        timeout_ms = options.get("timeout", spec.fields.get("timeout"))
        plain = is_plain_text(call.schema)
        log = call.log
        last_error: FlowError | None = None
        charged = True  # the call's first attempt was charged before the gate (`call`)
        for attempt in range(1, attempts_total + 1):
            repairs_left = repair
            fresh = True  # a retry starts over: a new attempt, not a repair of the last output
            while True:
                if not charged:
                    self._charge(call.payload.get("frame"), spec.name)
                charged = False
                is_repair = not fresh and bool(log) and bool(log[-1].get("invalid"))
                fresh = False
                kind = "repair" if is_repair else "attempt"
                repair_of = {"previousOutput": log[-1]["output"], "errors": log[-1]["errors"]} if is_repair else None
                reservation = await self._reserve_cost(call, repair_of)
                try:
                    attempted = self._attempt(call, timeout_ms, len(log) + 1, repair_of)
                    output = await (attempted if reservation is None else self._settled(call, reservation, attempted))
                except FlowError as exc:
                    log.append({"kind": kind, "attempt": attempt, "error": exc.code, "message": exc.message})
                    last_error = exc
                    break
                # A bare `string` contract (`is_plain_text`: nothing but `type`, `description`,
                # `$schema`) has no error for a string; jsonschema's walk is left for the rest.
                errors = [] if plain and type(output) is str else schema_errors(call.schema, output, self._validator(call))
                if not errors and call.payload.get("expect") and self.sandbox_call is not None:
                    errors = _expect_messages(await self.sandbox_call(
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
            if last_error.code not in retry_on or attempt == attempts_total:
                raise last_error
            if backoff:
                await asyncio.sleep(backoff)
        raise last_error or AgentInvocationError(f"`{spec.name}` made no attempt")

    async def _attempt(self, call: _Call, timeout_ms: Any, attempt: int, repair_of: dict[str, Any] | None) -> Any:
        """One provider attempt, answered from the cassette when replaying, written to it when recording."""
        key = (self.scope, call.spec.name, call.label, call.occurrence, attempt)
        journaled = self._journaled_attempt(call, attempt, repair_of)
        if journaled is not None:
            return journaled
        if self.player is not None:
            replayed = self.player.answer(key, call.identity)
            self._account(call, replayed)
            for record in replayed.tool_calls:  # what the tools did when it was recorded, shown again
                if not isinstance(record, dict):
                    continue
                approval = record.get("approval")
                if isinstance(approval, dict):  # who the cassette says decided is not taken: no one was asked
                    allowed, how = await self.approve_tool(call.spec.name, str(record.get("tool")),
                                                           dict(record.get("arguments") or {}), call.payload,
                                                           (approval.get("answer") is True, "replayed"))
                    record = {**record, "approval": {"answer": allowed, "by": how}}
                call.tool_calls.append(record)
            return replayed.output
        before = len(call.tool_calls)
        try:
            reply = await self._invoke(call, timeout_ms, repair_of)
        except FlowError as exc:
            if self.checkpoint is not None and exc.code == "agent-invocation":  # the provider's answer: not asked again
                self.checkpoint.done(position("agent", call.payload, attempt), _attempt_request(call, repair_of), error=exc)
            if self.recorder is not None:
                self.recorder.write(key, call.identity, error=exc, run=self._run_token)
            raise
        if self.recorder is not None:  # the tool calls as the host saw them, approvals included
            self.recorder.write(key, call.identity, reply.output, usage=reply.usage, tool_calls=call.tool_calls[before:],
                                run=self._run_token)
        if self.checkpoint is not None:  # on the disk before the sandbox hears the answer
            self.checkpoint.done(position("agent", call.payload, attempt), _attempt_request(call, repair_of),
                                 {"output": reply.output, "usage": reply.usage, "tool_calls": call.tool_calls[before:]})
        return reply.output

    def _journaled_attempt(self, call: _Call, attempt: int, repair_of: dict[str, Any] | None) -> Any:
        """The attempt's reply from the run's journal (an earlier execution made it), or None.
        Its tool calls are shown as they were made, not made again."""
        if self.checkpoint is None:
            return None
        record = self.checkpoint.replayed(position("agent", call.payload, attempt), _attempt_request(call, repair_of))
        if record is None:
            return None
        provider = self.providers.get(call.provider)
        if isinstance(provider, ScriptedProvider):  # the script's cursor moves as the live attempt moved it
            provider.passed(call.spec.name, str(call.payload.get("prompt")))
        if "error" in record:
            raise FlowError.from_dto(dict(record["error"]))
        result = record.get("result")
        reply: dict[str, Any] = result if isinstance(result, dict) else {}
        usage, tool_calls = reply.get("usage"), reply.get("tool_calls")
        self._account(call, ProviderReply(reply.get("output"), dict(usage) if isinstance(usage, dict) else {}))
        call.tool_calls.extend(t for t in (tool_calls if isinstance(tool_calls, list) else []) if isinstance(t, dict))
        return reply.get("output")

    def _account(self, call: _Call, reply: ProviderReply) -> None:
        for k, v in reply.usage.items():
            call.usage[k] = call.usage.get(k, 0) + int(v)
        call.raw.append(reply.raw)
        if call.price is not None:  # what this reply cost (its frames' budgets: when the attempt settles)
            call.cost += call.price.cost(int(reply.usage.get("input_tokens", 0)),
                                         int(reply.usage.get("output_tokens", 0)))

    def _chain(self, frame: Any) -> list[FrameBudget]:
        """The frame a call was made in and every frame enclosing it."""
        chain: list[FrameBudget] = []
        while isinstance(frame, str) and frame in self.frames:
            chain.append(self.frames[frame])
            frame = self.frames[frame].parent
        return chain

    async def _reserve_cost(self, call: _Call, repair_of: dict[str, Any] | None) -> Reservation | None:
        """`limits { cost: … }`, before each attempt: its worst case (its prompt, and
        `max_tokens` of output) is reserved on every enclosing limit, beside what ended and
        what is in flight, waiting for attempts in flight when it does not fit yet
        (budgets.py); `limit-exceeded` when it cannot fit. The request then carries that
        output as its cap (`call.output_cap`), so its reply cannot cost more output. Without
        a price for the model no limit can be checked, so the call does not go (the price
        table: lang/prices.py, `[prices]` in flow.toml). None: no enclosing frame has a cost
        limit."""
        limited = [b for b in self._chain(call.payload.get("frame")) if b.cost is not None]
        if not limited:
            return None
        if call.price is None:
            raise LimitExceededError(
                f"`{call.spec.name}` uses {call.provider}/{call.model}, which has no price, so the `cost` limit of "
                f"`{limited[0].name}` cannot be checked: add it under [prices] in flow.toml",
                details={"limit": "cost", "value": limited[0].cost, "workflow": limited[0].name})
        output = call.output_cap = self.config.provider(call.provider).max_tokens or DEFAULT_MAX_OUTPUT_TOKENS
        sent = call.system + call.prompt + (json.dumps(repair_of, ensure_ascii=False, default=str) if repair_of else "")
        worst = call.price.cost(estimate_tokens(sent), output)
        agent = call.spec.name

        def refuse(budget: FrameBudget, worst: float) -> LimitExceededError:
            return LimitExceededError(
                f"the `cost` limit of {budget.cost:g} of `{budget.name}` would be exceeded by the next attempt of "
                f"`{agent}`: {budget.spent:.4f} spent, and it may cost up to {worst:.4f}",
                details={"limit": "cost", "value": budget.cost, "workflow": budget.name,
                         "spent": round(budget.spent, 6), "worst_case": round(worst, 6)})

        return await self.reservations.reserve(limited, worst, refuse)

    async def _settled(self, call: _Call, reservation: Reservation, attempt: Awaitable[Any]) -> Any:
        """The attempt, its cost reservation settled when it ends: at what its reply cost;
        without a reply, at nothing when nothing was sent or the provider answered with an
        error status (not billed), else at its worst case (budgets.py)."""
        before = call.cost
        call.sent = False
        try:
            output = await attempt
        except BaseException as exc:
            answered = isinstance(exc, FlowError) and isinstance(exc.details, dict) and "status" in exc.details
            unbilled = call.cost > before or not call.sent or answered
            self.reservations.settle(reservation, call.cost - before if unbilled else reservation.worst)
            raise
        self.reservations.settle(reservation, call.cost - before)
        return output

    async def _invoke(self, call: _Call, timeout_ms: Any, repair_of: dict[str, Any] | None) -> ProviderReply:
        provider = self.providers.get(call.provider)
        if provider is None:
            provider = self.providers[call.provider] = PROVIDERS[call.provider].make_for(self.config)
        temperature = call.spec.fields.get("temperature")
        agent = call.spec.name

        request = ProviderRequest(agent, call.model, call.system, call.prompt, call.schema, repair_of,
                                  float(temperature) if isinstance(temperature, int | float) else None,
                                  tuple(call.tools), self._tool_user(call) if call.tools else None,
                                  call_prompt=str(call.payload.get("prompt")),
                                  on_delta=self._delta_sink(call) if self._streams(call.provider) else None,
                                  max_output_tokens=call.output_cap)
        request.ask_operator = self._asker(call)
        try:
            if call.provider in PROVIDERS or (isinstance(timeout_ms, int) and timeout_ms > 0):
                reply = await self._guarded(call, lambda: self._timed(self._send(call, provider, request), timeout_ms,
                                                                      agent), request)
            else:  # what `_guarded` and `_timed` come to for a local provider without a timeout
                call.sent = True
                reply = await provider.attempt(request)
        except FlowError:
            if call.merger is not None and call.merger.text:  # a stream cut (or timed out) mid-way: what it wrote goes in the trace
                call.partial = call.merger.text
            raise
        finally:
            if call.merger is not None:
                call.merger.flush()
        self._account(call, reply)
        return reply

    @staticmethod
    def _send(call: _Call, provider: Provider, request: ProviderRequest) -> Awaitable[ProviderReply]:
        """The provider's attempt, the call marked as sent (what it may have cost: `_settled`)."""
        call.sent = True
        return provider.attempt(request)

    def _streams(self, provider: str) -> bool:
        """Whether the provider's replies are asked for as a stream (its `stream` option, the
        same for the whole run: the configuration does not change while it runs)."""
        streams = self._stream_options.get(provider)
        if streams is None:
            streams = self._stream_options[provider] = bool(self.config.provider(provider).options.get("stream", True))
        return streams

    def _tool_user(self, call: _Call) -> Callable[[str, dict[str, Any]], Awaitable[Any]]:
        """How the provider calls one of the call's tools during this attempt (a call with
        tools only): approval, the journal, the record in the call's `tool_calls`."""
        agent = call.spec.name
        decisions: list[dict[str, Any]] = []
        attempt_number, used = len(call.log) + 1, [0]  # this attempt, and its tool calls so far (journal keys)

        async def use_tool(tool: str, arguments: dict[str, Any]) -> Any:
            decisions.clear()
            used[0] += 1
            where = position("tool", call.payload, attempt_number, used[0])

            async def approve(tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
                answer, how = await self.approve_tool(agent, tool, arguments, call.payload, None, key=where + ":approval")
                decisions.append({"answer": answer, "by": how})
                return answer, how

            async def live() -> Any:
                return await call_tool(self.check, self.registry, call.tools, tool, arguments, approve, self.mcp)

            result = await (self.checkpoint.effect(where, digest([tool, arguments]), live) if self.checkpoint is not None
                            else live())
            record: dict[str, Any] = {"tool": tool, "arguments": arguments, "result": result}
            if decisions:
                record["approval"] = decisions[0]
            call.tool_calls.append(record)
            return result

        return use_tool

    @staticmethod
    async def _timed(attempt: Awaitable[ProviderReply], timeout_ms: Any, agent: str) -> ProviderReply:
        """An attempt within the agent's own `timeout` (`agent-invocation` when it runs out)."""
        if isinstance(timeout_ms, int) and timeout_ms > 0:
            try:
                return await asyncio.wait_for(attempt, timeout_ms / 1000)
            except TimeoutError:
                raise AgentInvocationError(f"`{agent}` timed out after {timeout_ms} ms") from None
        return await attempt

    async def _guarded(self, call: _Call, send: Callable[[], Awaitable[ProviderReply]],
                       request: ProviderRequest | None = None) -> ProviderReply:
        """An attempt through its provider's guard when the provider is a remote one
        (resilience.py): the breaker, Retry-After, the rate limits and the bulkhead before,
        the outcome after. A `429` is sent again after its Retry-After, up to
        `rate_limit_retries` times, while no tool ran in the attempt and the wait ends
        before the run's deadline; those re-sends are the same attempt (not charged again)."""
        if call.provider not in PROVIDERS:  # the local providers need no guard
            return await send()
        guard = self.resilience.guard(call.provider)
        notify = self._notifier(call)
        estimate = estimate_tokens(call.system, call.prompt)
        tools_before = len(call.tool_calls)
        tried = 0
        while True:
            ticket = await guard.enter(estimate, self._remaining(), notify)
            if request is not None:  # a tool loop's later rounds wait for the rate limits too
                request.before_request = functools.partial(self._pace, guard, ticket, estimate, notify)
            try:
                reply = await send()
            except FlowError as exc:
                guard.failure(ticket, exc, notify)
                details = exc.details if isinstance(exc.details, dict) else {}
                if details.get("status") != 429 or tried >= guard.limits.rate_limit_retries \
                        or len(call.tool_calls) > tools_before:
                    raise
                given = details.get("retry_after")
                wait = float(given) if isinstance(given, int | float) else min(30.0, 2.0 ** tried)
                remaining = self._remaining()
                if remaining is not None and wait > remaining:
                    raise AgentInvocationError(
                        f"{exc.message}; its Retry-After ({wait:.1f} s) ends after the run's deadline "
                        f"({max(0.0, remaining):.1f} s left)", details={**details, "rate_limited": "retry-after"}) from None
                guard.hold_off(wait)
                tried += 1
                continue
            except BaseException:  # cancelled (the run ended): leave without a verdict on the provider
                guard.release(ticket)
                raise
            guard.success(ticket, reply.usage, notify)
            return reply

    async def _pace(self, guard: ProviderGuard, ticket: Ticket, estimate: float, notify: Notify) -> None:
        await guard.pace(ticket, estimate, self._remaining(), notify)  # the time left when the round starts

    def _remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def _notifier(self, call: _Call) -> Callable[[str, dict[str, Any]], None]:
        """The call's provider events (waits, breaker changes): timing kinds, out of the
        canonical sequence, so they take no order key from the call (events.py)."""
        payload = call.payload

        def notify(kind: str, data: dict[str, Any]) -> None:
            self.emit({"type": kind, "span": {"id": payload.get("call"), "parent": payload.get("span")},
                       "stage": payload.get("stage"), "data": data})

        return notify

    def _delta_sink(self, call: _Call) -> DeltaSink:
        """Where a new attempt's streamed pieces go: the call's delta merger, started on this
        attempt. Its `agent.delta` events are live only (events.py) and carry no order key, so
        they never move the call's others. A call whose provider never streams (the scripted
        and mock ones, a provider with `stream = false`) never makes one: it is made on the
        first piece."""
        attempt = len(call.log) + 1
        if call.merger is not None:
            call.merger.start_attempt(attempt)
            return call.merger

        def first(delta: Delta) -> None:
            if call.merger is None:
                call.merger = self._merger(call)
                call.merger.start_attempt(attempt)
            call.merger(delta)

        return first

    def _merger(self, call: _Call) -> DeltaMerger:
        payload, base = call.payload, {"agent": call.spec.name, "label": call.label}

        def emit(data: dict[str, Any]) -> None:
            self.emit({"type": "agent.delta", "span": {"id": payload.get("call"), "parent": payload.get("span")},
                       "stage": payload.get("stage"), "data": {**base, **data}})

        return DeltaMerger(emit, structured=not is_plain_text(call.schema), interval=self.delta_interval)

    def _asker(self, call: _Call) -> Callable[[str, list[str] | None], Awaitable[str]] | None:
        """The operator, for a question the provider's side asks during this call."""
        ask = self.ask_operator
        if ask is None:
            return None

        async def asking(question: str, choice: list[str] | None) -> str:
            return await ask({**call.payload, "question": f"`{call.spec.name}` asks: {question}", "choice": choice})

        return asking

    # -- traces ------------------------------------------------------------------------------
    def _trace(self, call: _Call | None, name: str, payload: dict[str, Any], outcome: str, latency_ms: int) -> None:
        trace: Trace = {"call": payload.get("call"), "agent": name, "label": (payload.get("options") or {}).get("label"),
                        "outcome": outcome, "latency_ms": latency_ms}
        if call is not None:
            trace.update(provider=call.provider, model=call.model, usage=dict(call.usage), attempts=len(call.log),
                         tool_calls=len(call.tool_calls))
            if call.price is not None and call.provider not in LOCAL_PROVIDERS:
                trace["cost"] = round(call.cost, 6)
            if call.partial is not None:
                trace["partial"] = call.partial
            if self.debug:
                trace.update(prompt={"system": call.system, "user": call.prompt}, raw=list(call.raw))
        self.traces.append(trace)
        for sink in self.trace_sinks:
            with contextlib.suppress(Exception):  # trace sinks are best-effort (runtime.md §4)
                sink(trace)


def _attempt_request(call: _Call, repair_of: dict[str, Any] | None) -> str:
    """What identifies a provider attempt's request in the journal."""
    return digest([call.spec.name, call.provider, call.model, call.identity, repair_of])


def _compiled_output_schemas(check: CheckResult) -> dict[str, dict[str, Any]]:
    """Every output schema the program's agent calls may use, as the code generator wrote
    them (`type_schema` of each call site's output type, and of each agent's declared output),
    by their JSON text."""
    types = list(check.call_outputs.values())
    types += [entry.agent.output for entry in check.decls.values() if entry.agent is not None]
    schemas = (type_schema(t) for t in types)
    return {_sorted_json(schema): schema for schema in schemas}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# What the generated code puts in an agent call's options (codegen `agent_call`), by type.
_OPTION_TYPES: dict[str, Callable[[Any], bool]] = {
    "label": lambda v: v is None or isinstance(v, str),
    "schema": lambda v: isinstance(v, dict),
    "tools": lambda v: isinstance(v, list) and all(isinstance(t, str) for t in v),
    "repair": _number,
    "timeout": lambda v: v is None or _number(v),
    "choice": lambda v: v is None or isinstance(v, list),
}


def _checked_options(payload: dict[str, Any]) -> dict[str, Any]:
    """An agent request's options, shaped as the generated code shapes them. Any other shape
    came from a bypassed sandbox: a `capability-violation`, never a host TypeError (`isolate`)."""
    if not isinstance(payload.get("frame"), str | None):  # a dict key below: a list was a host TypeError
        raise CapabilityViolationError("an agent request's frame must be a string")
    options = payload.get("options") or {}
    if not isinstance(options, dict):
        raise CapabilityViolationError("an agent request's options must be an object")
    for key, valid in _OPTION_TYPES.items():
        if key in options and not valid(options[key]):
            raise CapabilityViolationError(f"an agent request's option `{key}` has the wrong type",
                                           details={"option": key})
    return options


def _expect_messages(reply: Any) -> list[str]:
    """The sandbox's answer to an `expect` check: the failed clauses' messages."""
    if not isinstance(reply, list) or not all(isinstance(m, str) for m in reply):
        raise CapabilityViolationError("the sandbox answered an `expect` check with something other than messages")
    return reply


def _agent_spec(node: ast.Decl, tools: list[str], info: AgentInfo | None = None) -> AgentSpec:
    assert isinstance(node, ast.AgentDecl)
    fields: dict[str, Any] = {}
    for f in node.fields:
        value = literal_value(f.value) if isinstance(f.value, ast.Expr) else NOT_LITERAL
        if value is not NOT_LITERAL:
            fields[f.name.name] = value
    if info is not None:
        fields.update(info.texts)  # the texts of `file("…")` fields, as the checker read them
    return AgentSpec(node.name.name, str(fields.get("model", "default")), fields, list(tools), node,
                     list(info.prompt_files) if info is not None else [])


def prompt_files_identity(files: list[PromptFile]) -> str:
    """The part of a call's cassette identity that stands for its prompt files: one line per
    file with the digest of its text, so an edited file is a replay miss whose diff names it.
    Empty when the agent has none (cassettes recorded before prompt files still match)."""
    return "".join(f"\n[prompt file {f.path} ({f.used_for}): sha256 {f.digest}]" for f in files)

"""What the sandbox asks the host for during one run: agent calls, operator prompts,
processes, the clock, and where its events go.

The agent path here is the minimal one of the sandbox issue (scripted and mock
providers, output contract with repair and retry, `agent_runs` budgets); the full
pipeline of runtime.md §4 builds on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import os
import shutil
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from flow_kernel.errors import (
    AgentInvocationError,
    CapabilityViolationError,
    FlowError,
    LimitExceededError,
    OutputValidationError,
    ProcessError,
)
from flow_kernel.lang import ast
from flow_kernel.lang.check import CheckResult
from flow_kernel.lang.literals import NOT_LITERAL, literal_value
from flow_kernel.runtime.cassette import CassettePlayer, CassetteRecorder
from flow_kernel.runtime.operator import Operator
from flow_kernel.runtime.provider_openai import OpenAIProvider
from flow_kernel.runtime.providers import MockProvider, ScriptedProvider, parse_script
from flow_kernel.runtime.validation import schema_errors

Event = dict[str, Any]
EventSink = Callable[[Event], None]
SandboxCall = Callable[[str, dict[str, Any]], Awaitable[Any]]


@dataclass
class _FrameBudget:
    parent: str | None
    agent_runs: int
    used: int = 0
    name: str = ""
    gate: asyncio.Semaphore | None = None


@dataclass
class AgentSpec:
    name: str
    model: str
    fields: dict[str, Any]
    decl: ast.AgentDecl


@dataclass
class HostServices:
    check: CheckResult
    run_id: str
    operator: Operator = field(default_factory=lambda: Operator("none"))
    allow_run: frozenset[str] = frozenset()
    sinks: list[EventSink] = field(default_factory=list)
    sandbox_call: SandboxCall | None = None
    recorder: CassetteRecorder | None = None
    openai: OpenAIProvider | None = None
    player: CassettePlayer | None = None

    def __post_init__(self) -> None:
        self.events: list[Event] = []
        self.seq = 0
        self.frames: dict[str, _FrameBudget] = {}
        self.scripted = ScriptedProvider()
        self.mock = MockProvider()
        self.agents = {name: self._agent_spec(entry.node) for name, entry in self.check.decls.items()
                       if entry.kind == "agent" and isinstance(entry.node, ast.AgentDecl)}
        self._scripts = {name: parse_script(spec.decl) for name, spec in self.agents.items()}
        self._occurrences: dict[tuple[str, str], int] = {}

    # -- events ---------------------------------------------------------------------------
    def emit(self, event: dict[str, Any]) -> None:
        self.seq += 1
        full = {"type": event["type"], "run": self.run_id, "seq": self.seq,
                "ts": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
                "span": event.get("span") or {"id": None, "parent": None}, "stage": event.get("stage"),
                "data": event.get("data") or {}}
        if full["type"] == "workflow.started":
            data = full["data"]
            limits = data.get("limits") or {}
            self.frames[str(data.get("frame"))] = _FrameBudget(
                data.get("parent"), int(limits.get("agent_runs", 100)), name=str(data.get("name")),
                gate=asyncio.Semaphore(int(limits.get("concurrency", 4))))
        self.events.append(full)
        for sink in self.sinks:
            with contextlib.suppress(Exception):  # sinks are best-effort (runtime.md §4)
                sink(full)

    def on_notify(self, op: str, payload: dict[str, Any]) -> None:
        if op == "event":
            self.emit(payload)

    # -- requests from the sandbox -----------------------------------------------------------
    async def handle(self, op: str, payload: dict[str, Any]) -> Any:
        if op == "agent":
            return await self.agent(payload)
        if op == "approve":
            return await self.approve(payload)
        if op == "ask":
            return await self.ask(payload)
        if op == "process":
            return await self.process(payload)
        if op == "now":
            return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        if op == "uuid":
            return str(uuid.uuid4())
        if op == "echo":
            return payload
        raise CapabilityViolationError(f"unknown host operation {op!r}")

    def _event(self, kind: str, payload: dict[str, Any], data: dict[str, Any], span: str | None = None) -> None:
        self.emit({"type": kind, "span": {"id": span or payload.get("span"), "parent": payload.get("span") if span else None},
                   "stage": payload.get("stage"), "data": data})

    # -- operator ------------------------------------------------------------------------------
    async def approve(self, payload: dict[str, Any]) -> bool:
        question = str(payload.get("question"))
        self._event("approval.requested", payload, {"kind": "approve", "question": question, "details": payload.get("details")})
        try:
            answer, how = await self.operator.approve(question, payload.get("details"))
        except FlowError as exc:
            self._event("approval.resolved", payload, {"kind": "approve", "question": question, "error": exc.code})
            raise
        self._event("approval.resolved", payload, {"kind": "approve", "question": question, "answer": answer, "by": how})
        return answer

    async def ask(self, payload: dict[str, Any]) -> str:
        question = str(payload.get("question"))
        choice = payload.get("choice")
        self._event("approval.requested", payload, {"kind": "ask", "question": question, "choice": choice})
        try:
            answer, how = await self.operator.ask(question, choice if isinstance(choice, list) else None)
        except FlowError as exc:
            self._event("approval.resolved", payload, {"kind": "ask", "question": question, "error": exc.code})
            raise
        self._event("approval.resolved", payload, {"kind": "ask", "question": question, "answer": answer, "by": how})
        return answer

    # -- processes ------------------------------------------------------------------------------
    async def process(self, payload: dict[str, Any]) -> dict[str, Any]:
        exe = str(payload.get("executable"))
        if exe not in self.allow_run:
            raise CapabilityViolationError(f"`run`: executable {exe!r} is not allowed (allow it with --allow-run {exe})",
                                           details={"executable": exe})
        path = shutil.which(exe)
        if path is None:
            raise ProcessError(f"`run`: executable {exe!r} not found", details={"stdout": "", "stderr": "", "exit_code": None})
        stdin = payload.get("stdin")
        timeout = float(payload.get("timeout_ms") or 30_000) / 1000
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")}
        proc = await asyncio.create_subprocess_exec(
            path, *[str(a) for a in payload.get("arguments") or []], env=env,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if isinstance(stdin, str) else None), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise ProcessError(f"`run`: {exe} timed out after {timeout:g}s",
                               details={"stdout": "", "stderr": "", "exit_code": None}) from None
        result = {"stdout": out.decode(errors="replace"), "stderr": err.decode(errors="replace"),
                  "exit_code": proc.returncode}
        if proc.returncode != 0:
            raise ProcessError(f"`run`: {exe} exited with code {proc.returncode}", details=result)
        return result

    # -- agents ----------------------------------------------------------------------------------
    @staticmethod
    def _agent_spec(node: ast.Decl) -> AgentSpec:
        assert isinstance(node, ast.AgentDecl)
        fields: dict[str, Any] = {}
        for f in node.fields:
            value = literal_value(f.value) if isinstance(f.value, ast.Expr) else NOT_LITERAL
            if value is not NOT_LITERAL:
                fields[f.name.name] = value
        model = str(fields.get("model", "default"))
        return AgentSpec(node.name.name, model, fields, node)

    def _resolve(self, payload: dict[str, Any]) -> str:
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

    def _charge(self, frame: str | None, agent: str) -> None:
        chain: list[_FrameBudget] = []
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

    async def agent(self, payload: dict[str, Any]) -> Any:
        call = str(payload.get("call"))
        try:
            name = self._resolve(payload)
        except FlowError as exc:
            self._event("agent.failed", payload, {"agent": None, "code": exc.code, "message": exc.message}, call)
            raise
        options: dict[str, Any] = payload.get("options") or {}
        self._event("agent.started", payload, {"agent": name, "label": options.get("label"),
                                               "prompt": payload.get("prompt")}, call)
        started = time.monotonic()
        frame = payload.get("frame")
        gate = self.frames[frame].gate if frame in self.frames else None
        try:
            if gate is not None:
                async with gate:
                    output, attempts = await self._contract(name, payload, options)
            else:
                output, attempts = await self._contract(name, payload, options)
        except FlowError as exc:
            self._event("agent.failed", payload, {"agent": name, "label": options.get("label"), "code": exc.code,
                                                  "message": exc.message, **exc.details}, call)
            raise
        self._event("agent.completed", payload, {"agent": name, "label": options.get("label"), "output": output,
                                                 "attempts": attempts,
                                                 "latency_ms": round((time.monotonic() - started) * 1000)}, call)
        return output

    async def _contract(self, name: str, payload: dict[str, Any], options: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
        """The attempt loop: invoke, validate (schema, then `expect`), repair, retry."""
        spec = self.agents[name]
        schema = options.get("schema") or {}
        choice = options.get("choice")
        if isinstance(choice, list):
            schema = {"type": "string", "enum": choice}
        repair = int(options.get("repair", spec.fields.get("repair", 1)))
        raw_retry = spec.fields.get("retry")
        retry: dict[str, Any] = raw_retry if isinstance(raw_retry, dict) else {}
        attempts_total = int(retry.get("attempts", 1))
        retry_on = set(retry.get("on", []))
        backoff = float(retry.get("backoff", 0)) / 1000
        timeout_ms = options.get("timeout", spec.fields.get("timeout"))
        validator = jsonschema.Draft202012Validator(schema)
        prompt = str(payload.get("prompt"))
        label = str(options.get("label"))
        occurrence = self._occurrences[(name, label)] = self._occurrences.get((name, label), 0) + 1
        log: list[dict[str, Any]] = []
        last_error: FlowError | None = None
        for attempt in range(1, attempts_total + 1):
            repairs_left = repair
            while True:
                self._charge(payload.get("frame"), name)
                kind = "attempt" if not log or log[-1]["kind"] != "invalid" else "repair"
                try:
                    repair_of = ({"previousOutput": log[-1]["output"], "errors": log[-1]["errors"]}
                                 if log and log[-1]["kind"] == "invalid" else None)
                    output = await self._attempt(spec, schema, prompt, timeout_ms,
                                                 (name, label, occurrence, len(log) + 1), repair_of)
                except FlowError as exc:
                    log.append({"kind": kind, "attempt": attempt, "error": exc.code, "message": exc.message})
                    last_error = exc
                    break
                errors = schema_errors(schema, output, validator)
                if not errors and payload.get("expect") and self.sandbox_call is not None:
                    errors = list(await self.sandbox_call("expect", {"run": payload.get("run"), "call": payload.get("call"),
                                                                     "output": output}))
                if not errors:
                    log.append({"kind": kind, "attempt": attempt, "ok": True})
                    return output, log
                log.append({"kind": "invalid", "attempt": attempt, "errors": errors, "output": output})
                if repairs_left > 0:
                    repairs_left -= 1
                    continue
                if isinstance(choice, list) and "fallback" in options:
                    return options["fallback"], log
                last_error = OutputValidationError(f"`{name}` returned invalid output: {'; '.join(errors)}",
                                                   details={"errors": errors, "output": output})
                break
            assert last_error is not None
            if last_error.code not in retry_on or attempt == attempts_total:
                raise last_error
            if backoff:
                await asyncio.sleep(backoff)
        raise last_error or AgentInvocationError(f"`{name}` made no attempt")

    async def _attempt(self, spec: AgentSpec, schema: dict[str, Any], prompt: str, timeout_ms: Any,
                       key: tuple[str, str, int, int], repair_of: dict[str, Any] | None = None) -> Any:
        """One provider attempt, answered from the cassette when replaying, written to it when recording."""
        if self.player is not None:
            return self.player.answer(key)
        try:
            output = await self._invoke(spec, schema, prompt, timeout_ms, repair_of)
        except FlowError as exc:
            if self.recorder is not None:
                self.recorder.write(key, prompt, error=exc)
            raise
        if self.recorder is not None:
            self.recorder.write(key, prompt, output)
        return output

    async def _invoke(self, spec: AgentSpec, schema: dict[str, Any], prompt: str, timeout_ms: Any,
                      repair_of: dict[str, Any] | None) -> Any:
        call: Awaitable[Any]
        if spec.model == "scripted":
            call = self.scripted.attempt(spec.name, self._scripts[spec.name], prompt)
        elif spec.model == "mock":
            call = self.mock.attempt(spec.name, schema, prompt)
        elif spec.model.startswith("openai/"):
            if self.openai is None:
                self.openai = OpenAIProvider()
            temperature = spec.fields.get("temperature")
            call = self.openai.attempt(spec.model.split("/", 1)[1], system_prompt(spec.fields, schema), prompt,
                                       schema, repair_of, float(temperature) if temperature is not None else None)
        else:
            raise AgentInvocationError(f"provider for model {spec.model!r} of `{spec.name}` is not configured "
                                       "(this build runs the scripted and mock providers)")
        if isinstance(timeout_ms, int) and timeout_ms > 0:
            try:
                return await asyncio.wait_for(call, timeout_ms / 1000)
            except TimeoutError:
                raise AgentInvocationError(f"`{spec.name}` timed out after {timeout_ms} ms") from None
        return await call


def system_prompt(fields: dict[str, Any], schema: dict[str, Any]) -> str:
    """The agent's structured fields as a system prompt, constraints first (language.md §4.2)."""
    parts: list[str] = []
    for item in fields.get("constraints") or []:
        parts.append(f"Constraint (always holds): {item}")
    if fields.get("role"):
        parts.append(f"You are a {fields['role']}.")
    if fields.get("persona"):
        parts.append(f"Persona: {fields['persona']}")
    if fields.get("instructions"):
        parts.append(str(fields["instructions"]).strip())
    for item in fields.get("hints") or []:
        parts.append(f"Hint: {item}")
    parts.append("Answer with JSON that matches this JSON Schema:\n" + json.dumps(schema, ensure_ascii=False))
    if fields.get("uncertainty"):
        parts.append(f"If uncertain: {fields['uncertainty']}")
    return "\n\n".join(parts)


"""What `flow serve --mcp` and `flow serve --a2a` share (docs/protocols.md): the served file's
workflows, one Session that runs them in the sandbox (each call a run with its journal in
`.flow/runs`), the operator that routes `approve`/`ask` to the caller of the run, and the
HTTP server (the door in front of it is door.py).

`approve`/`ask` inside a served run go to the request that started it (`Channel`): an MCP
client's elicitation, an A2A task's `input-required`. When the caller cannot answer, a
configured operator policy (`--operator`, or `operator` in the applied flow.toml) does;
without one the run fails closed with `operator-unavailable`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from flow_kernel.errors import (
    LimitExceededError,
    OperatorUnavailableError,
    WorkflowInputValidationError,
)
from flow_kernel.frontend.cell import CellRunner
from flow_kernel.frontend.port import HeadlessPort
from flow_kernel.lang import ast
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.runtime.durable.deadlines import duration_text
from flow_kernel.runtime.events.vocabulary import Event
from flow_kernel.runtime.policy.operator import Decided, Operator
from flow_kernel.runtime.run import RunOutcome, new_run_id
from flow_kernel.runtime.session import Session
from flow_kernel.runtime.validation import require_valid
from flow_kernel.serve.door import ASGIApp
from flow_kernel.serve.limits import Bounds


class Channel(Protocol):
    """The caller of one served run: sees its events, answers its questions (or cannot)."""

    def event(self, event: Event) -> None: ...

    async def approve(self, question: str, details: Any) -> bool | None: ...  # None: cannot answer

    async def ask(self, question: str, choice: list[str] | None) -> str | None: ...


class ChannelPort(HeadlessPort):
    """A served run's port to the cell runner (frontend/cell.py): every event goes to the
    caller's channel; the caller's questions go through the operator (`WorkflowHost`)."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    def on_event(self, event: Event) -> None:
        self.channel.event(event)


@dataclass(frozen=True)
class ServedWorkflow:
    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]


def served_workflows(check: CheckResult) -> list[ServedWorkflow]:
    """The file's workflows with their schemas and `##` doc comments, in the file's order."""
    found = []
    for name, entry in check.decls.items():
        if entry.kind != "workflow" or not isinstance(entry.node, ast.WorkflowDecl):
            continue
        schemas = check.schema_for(name) or {}
        doc = (entry.node.doc or "").strip() or f"The Flow workflow `{name}`."
        given, result = schemas.get("input"), schemas.get("output")
        found.append(ServedWorkflow(name, doc, dict(given) if isinstance(given, dict) else {"type": "object"},
                                    dict(result) if isinstance(result, dict) else {}))
    return found


class WorkflowHost:
    """Runs the served file's workflows, each with its caller's channel: several at once, at
    most the session's sandboxes ceiling (FLOW_MAX_SANDBOXES, default 4), more waiting their
    turn. A run waiting on a question holds only its own turn, for at most
    `bounds.question_timeout` (limits.py)."""

    def __init__(self, session: Session, compiled: Any, fallback: Operator | None,
                 bounds: Bounds | None = None) -> None:
        self.session = session
        self.compiled = compiled
        self.workflows = {w.name: w for w in served_workflows(compiled.check)}
        self.fallback = fallback  # the person's configured policy, when the caller cannot answer
        self.bounds = bounds or Bounds()
        self._turns = asyncio.Semaphore(session.ceilings.sandboxes)
        self._waiting = 0  # runs waiting for a turn
        # run id -> the caller of that run: the operator's request names its run (not a context
        # variable: the session's sandbox reader task, which asks the operator, outlives one run)
        self._channels: dict[str, Channel] = {}
        self.runner = CellRunner(session)
        session.operator = Operator("interactive", callback=self._answer)
        session.interactive_callback = self._answer

    async def run(self, name: str, arguments: dict[str, Any], channel: Channel) -> RunOutcome:
        """Run workflow `name` for `channel`'s caller. An input too large or not matching the
        workflow's schema fails `workflow-input-validation` before a journal is opened; a run
        that finds `bounds.max_waiting` runs waiting for a turn already, `limit-exceeded`."""
        run_id = new_run_id()
        refused = self._refused_input(name, arguments) or self._refused_turn()
        if refused is not None:
            return RunOutcome(run_id, error=refused)
        async with self._turn():
            self._channels[run_id] = channel
            try:
                end = await self.runner.run_program(self.compiled, ChannelPort(channel), workflow=name,
                                                    input=arguments, run_id=run_id)
            finally:
                del self._channels[run_id]
        assert end.outcome is not None
        return end.outcome

    @contextlib.asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        """One of the turns, once free (counted among the waiting until then)."""
        self._waiting += 1
        try:
            await self._turns.acquire()
        finally:
            self._waiting -= 1
        try:
            yield
        finally:
            self._turns.release()

    def _refused_turn(self) -> LimitExceededError | None:
        if self._turns.locked() and self._waiting >= self.bounds.max_waiting:
            return LimitExceededError(f"this server has {self._waiting} runs waiting for a turn already: try again "
                                      "later", details={"limit": "waiting runs", "value": self.bounds.max_waiting})
        return None

    def _refused_input(self, name: str, arguments: dict[str, Any]) -> WorkflowInputValidationError | None:
        size = len(json.dumps(arguments, ensure_ascii=False, default=str).encode())
        if size > self.bounds.max_body:
            return WorkflowInputValidationError(f"the input of `{name}` is {size} bytes of JSON, more than this server "
                                                f"takes ({self.bounds.max_body}, flow serve --max-body)")
        schemas = self.compiled.check.schema_for(name) or {}
        try:
            require_valid(schemas.get("input", {}), arguments, WorkflowInputValidationError, f"the input of `{name}`")
        except WorkflowInputValidationError as exc:
            return exc
        return None

    async def _answer(self, request: dict[str, Any]) -> Any:
        """The operator of served runs: the caller of the run that asks, for at most the
        question deadline; then the configured policy; then, past the deadline, the
        question's own default (`timeout T else V`); else fail closed."""
        channel = self._channels.get(str(request.get("run")))
        question = str(request.get("question"))
        choice = request.get("choice") if isinstance(request.get("choice"), list) else None
        overdue = False
        if channel is not None:
            asking = (channel.approve(question, request.get("details")) if request.get("kind") == "approve"
                      else channel.ask(question, choice))
            try:
                answer: Any = await asyncio.wait_for(asking, self.bounds.question_timeout)
            except TimeoutError:
                answer, overdue = None, True
            if answer is not None:
                return answer
        if self.fallback is not None:
            if request.get("kind") == "approve":
                return Decided(*await self.fallback.approve(question, request.get("details"), request))
            return Decided(*await self.fallback.ask(question, choice, request))
        if overdue and "default" in request:
            return Decided(request["default"], "timeout")
        if overdue:
            waited = duration_text(max(1, round(self.bounds.question_timeout * 1000)))
            raise OperatorUnavailableError(f"no answer to {question!r} within {waited} (flow serve --question-timeout), "
                                           "and no operator policy (--operator) or default (`timeout T else V`) to take")
        raise OperatorUnavailableError(f"no operator to answer {question!r}: the client cannot answer and no operator "
                                       "policy is configured for `flow serve` (--operator)")

    def stop_now(self) -> list[str]:
        """Kill every sandbox of the session at once (SIGKILL, no await: the runs in them must
        not go on to journal an end), and say which runs were going."""
        for pid in self.session.sandbox_pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        return list(self._channels)

    async def aclose(self) -> None:
        await self.session.aclose()


# Events worth telling a caller about while a served run goes (MCP progress, A2A status updates).
_PROGRESS = ("stage.started", "agent.started", "agent.completed", "progress", "approval.requested",
             "artifact.published")


def progress_message(event: Event) -> str | None:
    kind = event.get("type")
    data = event.get("data") or {}
    if kind not in _PROGRESS:
        return None
    if kind == "stage.started":
        return f"stage {data.get('name')}"
    if kind == "agent.started":
        return f"agent {data.get('agent')} started"
    if kind == "agent.completed":
        return f"agent {data.get('agent')} answered"
    if kind == "approval.requested":
        return f"asks: {data.get('question')}"
    if kind == "artifact.published":
        return f"published {data.get('name')}"
    return str(data.get("message") or data.get("text") or kind)


def outcome_error(outcome: RunOutcome) -> dict[str, Any]:
    assert outcome.error is not None
    return {"code": outcome.error.code, "message": outcome.error.message}


async def serve_http(app: ASGIApp, host: str, port: int, ready: Callable[[Any], None] | None = None,
                     bounds: Bounds | None = None) -> None:
    """Serve `app` with uvicorn, within `bounds` (limits.py), until stopped; `ready(server)`
    once it listens (the caller may stop it with `server.should_exit = True`). Signals are
    `flow serve`'s (serve.py), not uvicorn's."""
    import uvicorn

    from flow_kernel.serve.limits import body_cap, bounded_protocol

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    bounds = bounds or Bounds()
    server = Server(uvicorn.Config(body_cap(app, bounds), host=host, port=port, log_level="warning", lifespan="on",
                                   http=bounded_protocol(bounds)))

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.05)
        if ready is not None:
            ready(server)

    task = asyncio.create_task(announce())
    try:
        await server.serve()
    finally:
        task.cancel()


def file_folder(path: str) -> Path:
    return Path(path).resolve().parent

"""What `flow serve --mcp` and `flow serve --a2a` share (docs/protocols.md): the served file's
workflows, one Session that runs them in the sandbox (each call a run with its journal in
`.flow/runs`), the operator that routes `approve`/`ask` to the caller of the run, and the
HTTP server (the door in front of it is serve_door.py).

`approve`/`ask` inside a served run go to the request that started it (`Channel`): an MCP
client's elicitation, an A2A task's `input-required`. When the caller cannot answer, a
configured operator policy (`--operator`, or `operator` in the applied flow.toml) does;
without one the run fails closed with `operator-unavailable`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from flow_kernel.cli.serve_door import ASGIApp
from flow_kernel.errors import OperatorUnavailableError
from flow_kernel.lang import ast
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.runtime.events import Event
from flow_kernel.runtime.operator import Operator
from flow_kernel.runtime.run import RunOutcome
from flow_kernel.runtime.session import Session


class Channel(Protocol):
    """The caller of one served run: sees its events, answers its questions (or cannot)."""

    def event(self, event: Event) -> None: ...

    async def approve(self, question: str, details: Any) -> bool | None: ...  # None: cannot answer

    async def ask(self, question: str, choice: list[str] | None) -> str | None: ...


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
    """Runs the served file's workflows, one at a time (one sandbox), each with its caller's channel."""

    def __init__(self, session: Session, compiled: Any, fallback: Operator | None) -> None:
        self.session = session
        self.compiled = compiled
        self.workflows = {w.name: w for w in served_workflows(compiled.check)}
        self.fallback = fallback  # the person's configured policy, when the caller cannot answer
        self._lock = asyncio.Lock()
        self._channel: Channel | None = None
        session.operator = Operator("interactive", callback=self._answer)
        session.interactive_callback = self._answer

    async def run(self, name: str, arguments: dict[str, Any], channel: Channel) -> RunOutcome:
        async with self._lock:
            # Runs take turns, so the run now going is this channel's. (Not a context variable:
            # the session's sandbox reader task, which asks the operator, outlives one run.)
            self._channel = channel
            try:
                return await self.session.run_async(self.compiled, workflow=name, input=arguments,
                                                    sinks=[channel.event])
            finally:
                self._channel = None

    async def _answer(self, request: dict[str, Any]) -> Any:
        """The operator of served runs: the caller first, then the configured policy, else fail closed."""
        channel = self._channel
        question = str(request.get("question"))
        choice = request.get("choice") if isinstance(request.get("choice"), list) else None
        if channel is not None:
            answer: Any = (await channel.approve(question, request.get("details")) if request.get("kind") == "approve"
                           else await channel.ask(question, choice))
            if answer is not None:
                return answer
        if self.fallback is not None:
            if request.get("kind") == "approve":
                return (await self.fallback.approve(question, request.get("details"), request))[0]
            return (await self.fallback.ask(question, choice, request))[0]
        raise OperatorUnavailableError(f"no operator to answer {question!r}: the client cannot answer and no operator "
                                       "policy is configured for `flow serve` (--operator)")

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


async def serve_http(app: ASGIApp, host: str, port: int, ready: Callable[[Any], None] | None = None) -> None:
    """Serve `app` with uvicorn until interrupted; `ready(server)` once it listens (the
    caller may stop it with `server.should_exit = True`)."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on"))

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

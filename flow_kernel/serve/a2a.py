"""`flow serve FILE --a2a HOST:PORT`: the file's workflows as an A2A agent, with the official
`a2a-sdk` server (docs/protocols.md).

The agent card (`/.well-known/agent-card.json`) lists each workflow as a skill. A message
runs one: its data part is `{"workflow": NAME, "input": {…}}`, or the input itself when the
message's metadata names the skill (`{"skill": NAME}`) or the file has one workflow; a text
part is the input of a workflow with a single `string` parameter (a Flow agent with
`model: "a2a/NAME"` and `skill` in its [a2a.NAME] sends its prompt so). The task streams the
run's events as `working` status updates (stages, agent calls, `emit progress`, and a
streaming model's text as it comes, metadata `flow_event: agent.delta`), each
`publish` as an artifact, and ends `completed` with the result as the artifact `result`
(a data part) or `failed` with the error's code; the run's primary artifact (`publish
primary`) is held back and sent last, the task's final artifact (metadata `primary: true`).
An `approve`/`ask` moves the task to `input-required` with the question (metadata: kind,
question, choice); the client's next message on the task answers it (text `yes`/`no`, or data `{"approve": bool}`; text, or data
`{"answer": "…"}`) and the run goes on. `tasks/cancel` stops the run. The JSON-RPC endpoint
speaks A2A 1.0 (`SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`)
and the 0.3 names (`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`).

The door (door.py) stands in front: the agent card is public, everything else needs a
principal's token, and each task is its principal's alone (a2a_tasks.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flow_kernel.runtime.events.vocabulary import Event
from flow_kernel.runtime.remote.a2a import whole_numbers
from flow_kernel.runtime.run import RunOutcome
from flow_kernel.serve.common import (
    ServedWorkflow,
    WorkflowHost,
    outcome_error,
    progress_message,
    serve_http,
)
from flow_kernel.serve.door import Door, authority, guarded_app

if TYPE_CHECKING:
    from flow_kernel.serve.a2a_tasks import KeptLimits

_YES = ("y", "yes", "approve", "approved", "true", "ok")


@dataclass
class _Question:
    kind: str  # "approve" | "ask"
    question: str
    choice: list[str] | None
    answer: asyncio.Future[Any]


@dataclass
class _LiveRun:
    """A task's run, which outlives each `execute` call: a question parks it until the reply."""

    queue: asyncio.Queue[tuple[str, Any]] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    pending: _Question | None = None
    cancelled: bool = False  # by `tasks/cancel`: the cancel answers for the task, not the run's end
    # A question withdrawn (its deadline passed): the task's updates go on without a request.
    go_on: Callable[[], None] | None = None
    going_on: asyncio.Task[None] | None = None


class _A2AChannel:
    def __init__(self, live: _LiveRun) -> None:
        self.live = live

    def event(self, event: Event) -> None:
        self.live.queue.put_nowait(("event", event))

    async def _question(self, kind: str, question: str, choice: list[str] | None) -> Any:
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        asked = _Question(kind, question, choice, answer)
        self.live.queue.put_nowait(("question", asked))
        try:
            return await answer
        finally:  # answered, or withdrawn when its deadline passed (common.WorkflowHost)
            if self.live.pending is asked:
                self.live.pending = None
                if not self.live.cancelled and self.live.go_on is not None:
                    self.live.go_on()

    async def approve(self, question: str, details: Any) -> bool | None:
        return bool(await self._question("approve", question, None))

    async def ask(self, question: str, choice: list[str] | None) -> str | None:
        return str(await self._question("ask", question, choice))


def _choose(host: WorkflowHost, message: Any, metadata: dict[str, Any]) -> tuple[ServedWorkflow, dict[str, Any]]:
    """The workflow a message asks for and its input; ValueError says what is wrong."""
    from a2a.helpers.proto_helpers import get_data_parts, get_text_parts

    data = [whole_numbers(d) for d in get_data_parts(message.parts)]
    texts = get_text_parts(message.parts)
    name = metadata.get("skill") if isinstance(metadata.get("skill"), str) else None
    arguments: Any = None
    if data and isinstance(data[0], dict) and isinstance(data[0].get("workflow"), str):
        name, arguments = data[0]["workflow"], data[0].get("input", {})
    elif data:
        arguments = data[0]
    if name is None and len(host.workflows) == 1:
        name = next(iter(host.workflows))
    if name is None:
        raise ValueError(f"say which workflow: a data part {{\"workflow\": NAME, \"input\": {{…}}}} "
                         f"(skills: {', '.join(host.workflows)})")
    workflow = host.workflows.get(name)
    if workflow is None:
        raise ValueError(f"no skill `{name}` (skills: {', '.join(host.workflows)})")
    if arguments is None and texts:
        params = workflow.input_schema.get("properties") or {}
        if len(params) == 1 and next(iter(params.values())).get("type") == "string":
            arguments = {next(iter(params)): "\n".join(texts)}
    if not isinstance(arguments, dict):
        raise ValueError(f"`{name}` takes a data part with its input object")
    return workflow, arguments


def _metadata(context: Any) -> dict[str, Any]:
    """The message's metadata, then the request's (`skill` may be in either)."""
    found = dict(context.message.metadata) if context.message is not None else {}
    return {**found, **dict(context.metadata or {})}


def _answer(question: _Question, message: Any) -> Any:
    from a2a.helpers.proto_helpers import get_data_parts, get_text_parts

    data = [d for d in get_data_parts(message.parts) if isinstance(d, dict)]
    text = "\n".join(get_text_parts(message.parts)).strip()
    if question.kind == "approve":
        if data and isinstance(data[0].get("approve"), bool):
            return data[0]["approve"]
        return text.lower() in _YES
    if data and isinstance(data[0].get("answer"), str):
        return data[0]["answer"]
    return text


class FlowAgentExecutor:
    """The SDK's `AgentExecutor` for served workflows (made a subclass in `build_app`)."""

    def __init__(self, host: WorkflowHost) -> None:
        self.host = host
        self.live: dict[str, _LiveRun] = {}

    async def execute(self, context: Any, event_queue: Any) -> None:
        from a2a.helpers.proto_helpers import new_text_message
        from a2a.server.tasks import TaskUpdater
        from a2a.types import Task, TaskState, TaskStatus

        task_id, context_id = context.task_id, context.context_id
        updater = TaskUpdater(event_queue, task_id, context_id)
        live = self.live.get(task_id)
        if live is None:
            if context.current_task is None:
                await event_queue.enqueue_event(Task(id=task_id, context_id=context_id, history=[context.message],
                                                     status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)))
            try:
                workflow, arguments = _choose(self.host, context.message, _metadata(context))
            except ValueError as exc:
                await updater.update_status(TaskState.TASK_STATE_REJECTED, new_text_message(str(exc), context_id=context_id,
                                                                                            task_id=task_id))
                return
            live = self.live[task_id] = _LiveRun()
            live.task = asyncio.create_task(self._run(live, workflow.name, arguments))
            await updater.start_work(new_text_message(f"running {workflow.name}", context_id=context_id, task_id=task_id))
        elif live.pending is not None:
            question, live.pending = live.pending, None
            question.answer.set_result(_answer(question, context.message))
            await updater.start_work()
        elif live.going_on is not None and not live.going_on.done():  # no question waits: the message answers nothing
            await live.going_on
            return
        try:
            await self._pump(live, task_id, context_id, updater)
        except BaseException:  # the request went (or the SDK refused an event): the run must not hang on
            await self._stop(task_id)
            raise

    async def _run(self, live: _LiveRun, name: str, arguments: dict[str, Any]) -> None:
        try:
            outcome = await self.host.run(name, arguments, _A2AChannel(live))
        except Exception as exc:  # the host's own failure: the task fails with it, the server goes on
            live.queue.put_nowait(("crash", f"{type(exc).__name__}: {exc}"))
            return
        live.queue.put_nowait(("done", outcome))

    async def _pump(self, live: _LiveRun, task_id: str, context_id: str, updater: Any) -> None:
        """The run's events onto this request's queue, until it ends or asks a question."""
        from a2a.helpers.proto_helpers import new_data_part, new_text_message, new_text_part
        from a2a.types import TaskState

        def text(words: str) -> Any:
            return new_text_message(words, context_id=context_id, task_id=task_id)

        while True:
            kind, item = await live.queue.get()
            if live.cancelled:
                return
            if kind == "event":
                event: Event = item
                if event.get("type") == "artifact.published":
                    data = event.get("data") or {}
                    if data.get("primary") is True:
                        continue  # the task's final artifact, once the run has ended
                    part = new_text_part(str(data["text"])) if "text" in data else new_data_part(data.get("json"))
                    await updater.add_artifact([part], name=str(data.get("name")))
                elif event.get("type") == "agent.delta":  # a streaming model's text as it comes
                    data = event.get("data") or {}
                    await updater.update_status(TaskState.TASK_STATE_WORKING, text(str(data.get("text", ""))),
                                                metadata={"flow_event": "agent.delta", "agent": data.get("agent")})
                elif (words := progress_message(event)) is not None:
                    await updater.update_status(TaskState.TASK_STATE_WORKING, text(words),
                                                metadata={"flow_event": event.get("type")})
            elif kind == "question":
                question: _Question = item
                if question.answer.done():  # withdrawn before it was shown
                    continue
                live.pending = question
                live.go_on = lambda: self._go_on(live, task_id, context_id, updater)
                await updater.update_status(TaskState.TASK_STATE_INPUT_REQUIRED, text(question.question), metadata={
                    "kind": question.kind, "question": question.question, "choice": question.choice})
                return
            elif kind == "crash":
                self.live.pop(task_id, None)
                await updater.failed(text(f"the server failed: {item}"))
                return
            else:
                self.live.pop(task_id, None)
                outcome: RunOutcome = item
                if outcome.error is None:
                    await updater.add_artifact([new_data_part(outcome.result)], name="result",
                                               metadata={"run": outcome.run_id})
                if (primary := outcome.primary) is not None:  # the task's final artifact: the run's document
                    part = new_text_part(primary["text"]) if "text" in primary else new_data_part(primary["json"])
                    await updater.add_artifact([part], name=primary["name"], metadata={"run": outcome.run_id, "primary": True})
                if outcome.error is not None:
                    problem = outcome_error(outcome)
                    await updater.update_status(TaskState.TASK_STATE_FAILED,
                                                text(f"{problem['code']}: {problem['message']}"),
                                                metadata={"error": problem, "run": outcome.run_id})
                    return
                await updater.complete(text(json.dumps(outcome.result, ensure_ascii=False)))
                return

    def _go_on(self, live: _LiveRun, task_id: str, context_id: str, updater: Any) -> None:
        """The question went unanswered past its deadline and the run took its default: the task
        is `working` again and its updates go on with no request open (the task's event queue
        outlives each request)."""
        from a2a.helpers.proto_helpers import new_text_message

        async def pump() -> None:
            with contextlib.suppress(Exception):  # the task's queue closed (the server stops): nothing to tell
                await updater.start_work(new_text_message("no answer in time: the run goes on", context_id=context_id,
                                                          task_id=task_id))
                await self._pump(live, task_id, context_id, updater)

        live.going_on = asyncio.create_task(pump())

    async def _stop(self, task_id: str) -> None:
        live = self.live.pop(task_id, None)
        if live is not None and live.task is not None:
            live.cancelled = True
            if live.going_on is not None:
                live.going_on.cancel()
            if live.pending is not None and not live.pending.answer.done():
                live.pending.answer.cancel()
            live.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await live.task

    async def cancel(self, context: Any, event_queue: Any) -> None:
        from a2a.server.tasks import TaskUpdater

        await self._stop(context.task_id)
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def agent_card(host: WorkflowHost, name: str, url: str, token: bool) -> Any:
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        HTTPAuthSecurityScheme,
        SecurityRequirement,
        SecurityScheme,
        StringList,
    )

    from flow_kernel.version import VERSION

    skills = [AgentSkill(id=w.name, name=w.name, description=w.description, tags=["flow-workflow"],
                         input_modes=["application/json", "text/plain"], output_modes=["application/json"])
              for w in host.workflows.values()]
    card = AgentCard(name=name, description=f"Flow workflows of {name}: {', '.join(host.workflows)}",
                     supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
                     version=VERSION, capabilities=AgentCapabilities(streaming=True),
                     default_input_modes=["application/json", "text/plain"], default_output_modes=["application/json"],
                     skills=skills)
    if token:
        card.security_schemes["bearer"].CopyFrom(SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(
            scheme="bearer", description="a token `flow serve` printed when it started, or its --token-env's")))
        card.security_requirements.append(SecurityRequirement(schemes={"bearer": StringList()}))
    return card


def build_app(host: WorkflowHost, name: str, door: Door, kept: KeptLimits) -> Any:
    """The A2A server's ASGI app behind the door: the public agent card, the JSON-RPC endpoint."""
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
    from starlette.applications import Starlette
    from starlette.routing import Route

    from flow_kernel.serve.a2a_tasks import KeptTasks, checked_list_params

    class Executor(FlowAgentExecutor, AgentExecutor):
        pass

    url = f"http://{authority(door.host, door.port)}/"
    card = agent_card(host, name, url, door.auth)
    store = KeptTasks(kept)
    handler = DefaultRequestHandler(agent_executor=Executor(host), task_store=store, agent_card=card)
    (rpc,) = create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True)
    routes = [*create_agent_card_routes(card), Route("/", checked_list_params(rpc.endpoint), methods=["POST"])]
    return guarded_app(Starlette(routes=routes), door, public=[AGENT_CARD_WELL_KNOWN_PATH], json_only=True)


async def serve_a2a(host: WorkflowHost, name: str, door: Door, kept: KeptLimits, ready: Any = None) -> None:
    await serve_http(build_app(host, name, door, kept), door.host, door.port, ready, host.bounds)

"""An A2A agent written with the official `a2a-sdk` server, the remote model of Flow agents
in tests/protocols/test_a2a_model.py: `python a2a_agent.py PORT` (loopback only).

What it answers depends on the message, so each behaviour a Flow agent meets is shown:
- "Classify …": the first message of a context answers "great" (outside the caller's
  contract); a follow-up in the same context answers "positive" — a repair works only if
  it comes back to the same context;
- "Tone …": `input-required` with the question "Which tone?" and choices; the reply on the
  task completes it with a data part {"tone": reply};
- "Schema …": answers with the output schema the caller sent in the message's metadata;
- "Fail …": the task fails.
If $A2A_AGENT_TOKEN is set, every request needs it as a bearer token.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import uvicorn
from a2a.helpers.proto_helpers import get_message_text, new_data_part, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Task,
    TaskState,
    TaskStatus,
)
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.responses import JSONResponse


class Remote(AgentExecutor):
    def __init__(self) -> None:
        self.seen: dict[str, int] = {}  # messages per context

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        task_id, context_id = context.task_id, context.context_id
        if context.current_task is None:
            await event_queue.enqueue_event(Task(id=task_id, context_id=context_id, history=[context.message],
                                                 status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)))
        updater = TaskUpdater(event_queue, task_id, context_id)
        text = get_message_text(context.message)
        earlier = self.seen.get(context_id, 0)
        self.seen[context_id] = earlier + 1

        def say(words: str) -> Any:
            return new_text_message(words, context_id=context_id, task_id=task_id)

        if context.current_task is not None and context.current_task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.add_artifact([new_data_part({"tone": text})], name="result")
            await updater.complete()
        elif "Tone" in text:
            await updater.update_status(TaskState.TASK_STATE_INPUT_REQUIRED, say("Which tone?"))
        elif "Classify" in text or earlier:
            await updater.complete(say("positive" if earlier else "great"))
        elif "Schema" in text:
            flow = MessageToDict(context.message).get("metadata", {}).get("flow", {})
            await updater.add_artifact([new_data_part({"schema": flow.get("output_schema")})], name="result")
            await updater.complete()
        else:
            await updater.failed(say("cannot do that"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def app(port: int) -> Any:
    card = AgentCard(name="remote", description="A test agent", version="1",
                     supported_interfaces=[AgentInterface(url=f"http://127.0.0.1:{port}/", protocol_binding="JSONRPC",
                                                          protocol_version="1.0")],
                     capabilities=AgentCapabilities(streaming=True), default_input_modes=["text/plain"],
                     default_output_modes=["text/plain", "application/json"],
                     skills=[AgentSkill(id="classify", name="classify", description="Classifies", tags=["test"])])
    handler = DefaultRequestHandler(agent_executor=Remote(), task_store=InMemoryTaskStore(), agent_card=card)
    inner = Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/"))
    token = os.environ.get("A2A_AGENT_TOKEN")
    if not token:
        return inner

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != f"Bearer {token}".encode():
            await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
            return
        await inner(scope, receive, send)

    return guarded


if __name__ == "__main__":
    port = int(sys.argv[1])
    uvicorn.run(app(port), host="127.0.0.1", port=port, log_level="warning")

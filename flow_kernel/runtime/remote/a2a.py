"""A remote A2A agent as the model of a Flow agent: `model: "a2a/NAME"` (docs/protocols.md),
with the official `a2a-sdk` client.

NAME is an agent of the configuration (`[a2a.NAME]`: its base URL, `token_env`, `timeout_ms`;
runtime/remote/config.py), else the agent at `[providers.a2a] base_url`. An attempt sends the
compiled prompt (the call's prompt with its context as untrusted data) as a text part, and
the output contract and the Flow agent's compiled instructions in the message's metadata
(`flow.output_schema`, `flow.instructions`); the reply is the task's `result` artifact's data
part, else its last artifact or final message as text (decoded like any provider's), and the
agent pipeline validates it against the contract like any provider's. A repair is a
follow-up message in the same A2A context (the agent sees its own earlier answer). A task
that turns `input-required` becomes an operator question (`ask`, with the agent's choices
when it gives them), whose answer is the next message on the task. `failed`, `rejected`,
`canceled` and `auth-required` are `agent-invocation` errors.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from flow_kernel.errors import AgentInvocationError
from flow_kernel.runtime.providers.base import (
    Endpoint,
    ProviderReply,
    ProviderRequest,
    decode_output,
    repair_message,
)
from flow_kernel.runtime.providers.table import ProviderSetup
from flow_kernel.runtime.remote.config import A2AAgentSettings

# An agent that keeps asking questions without answering is an invocation failure.
MAX_QUESTIONS = 8


def build(setup: ProviderSetup) -> A2AProvider:
    """`a2a/NAME`: the agent [a2a.NAME] declares, else the one at [providers.a2a] base_url
    (or $A2A_BASE_URL); the bearer token of agents without their own `token_env` from
    [providers.a2a] api_key_env (or $A2A_TOKEN)."""
    endpoint = setup.endpoint
    return A2AProvider(dict(setup.config.a2a), endpoint if endpoint.url else None, setup.key)


class A2AProvider:
    def __init__(self, agents: dict[str, A2AAgentSettings], default: Endpoint | None, default_token: str | None) -> None:
        """`default`: the agent at [providers.a2a] base_url or $A2A_BASE_URL, for names
        that `agents` does not declare (providers/table.py); None: there is none."""
        self.agents = agents
        self.default = default
        self.default_token = default_token
        # (agent, compiled prompt) -> the A2A context of its last attempt: a repair follows up there
        self.contexts: dict[tuple[str, str], str] = {}

    def _agent(self, name: str) -> tuple[Endpoint, str | None, float]:
        """The agent's endpoint, bearer token and timeout in seconds."""
        settings = self.agents.get(name)
        if settings is not None:
            token = os.environ.get(settings.token_env) if settings.token_env else self.default_token
            if settings.token_env and not token:
                raise AgentInvocationError(f"the A2A agent `{name}` needs a token in ${settings.token_env}, which is not set")
            endpoint = Endpoint("a2a", settings.url, settings.origin or f"[a2a.{name}] url", agent=name)
            return endpoint, token, settings.timeout_ms / 1000
        if self.default is not None:
            return replace(self.default, agent=name), self.default_token, 30.0
        known = ", ".join(sorted(self.agents)) or "none"
        raise AgentInvocationError(f"no A2A agent `{name}` in the configuration ([a2a.{name}] with its url; declared: "
                                   f"{known})", details={"agent": name})

    async def attempt(self, request: ProviderRequest) -> ProviderReply:
        import httpx  # installed with the SDK, which the provider table's `require_client` checked
        from a2a.client import A2AClientError, ClientConfig, create_client

        endpoint, token, timeout = self._agent(request.model)
        url = endpoint.url or ""
        key = (request.agent, request.prompt)
        context_id = self.contexts.get(key) if request.repair is not None else None
        text = repair_message(request.repair) if request.repair is not None else request.prompt
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx.AsyncClient(headers=headers, timeout=timeout) as http:
            try:
                client = await create_client(url, ClientConfig(streaming=False, httpx_client=http))
                async with client:
                    task = await self._converse(client, request, text, context_id)
            except A2AClientError as exc:
                cause = exc.__cause__  # the SDK wraps the connection's error
                if isinstance(cause, httpx.TransportError):
                    raise endpoint.unreachable(url, f"{type(cause).__name__}: {cause}") from None
                raise AgentInvocationError(f"the A2A agent `{request.model}` failed: {exc}") from None
            except httpx.TransportError as exc:
                raise endpoint.unreachable(url, f"{type(exc).__name__}: {exc}") from None
            except httpx.HTTPError as exc:
                raise AgentInvocationError(f"the A2A agent `{request.model}` at {url} failed: "
                                           f"{type(exc).__name__}: {exc}") from None
        self.contexts[key] = task.context_id
        raw = _reply_text(task)
        output = _reply_output(task, request.schema)
        return ProviderReply(output, raw=raw)

    async def _converse(self, client: Any, request: ProviderRequest, text: str, context_id: str | None) -> Any:
        """Send, then answer `input-required` through the operator until the task ends."""
        from a2a.helpers.proto_helpers import new_message, new_text_part
        from a2a.types import Role, SendMessageRequest, TaskState

        message = new_message([new_text_part(text)], role=Role.ROLE_USER, context_id=context_id)
        message.metadata.update({"flow": {"agent": request.agent, "output_schema": request.schema,
                                          "instructions": request.system}})
        settings = self.agents.get(request.model)
        if settings is not None and settings.skill:
            message.metadata.update({"skill": settings.skill})
        for _ in range(MAX_QUESTIONS + 1):
            task = None
            async for response in client.send_message(SendMessageRequest(message=message)):
                if response.HasField("task"):
                    task = response.task
                elif response.HasField("message"):  # an agent that answers with a message and no task
                    return _MessageTask(response.message)
            if task is None:
                raise AgentInvocationError(f"the A2A agent `{request.model}` answered with no task")
            state = task.status.state
            if state == TaskState.TASK_STATE_COMPLETED:
                return task
            if state != TaskState.TASK_STATE_INPUT_REQUIRED:
                said = " ".join(p.text for p in task.status.message.parts if p.text) or TaskState.Name(state)
                raise AgentInvocationError(f"the A2A agent `{request.model}` ended the task "
                                           f"{TaskState.Name(state).removeprefix('TASK_STATE_').lower()}: {said}",
                                           details={"state": TaskState.Name(state)})
            if request.ask_operator is None:
                raise AgentInvocationError(f"the A2A agent `{request.model}` asks a question and no operator can answer")
            question = " ".join(p.text for p in task.status.message.parts if p.text) or "The agent needs input."
            metadata = dict(task.status.message.metadata) if task.status.message.metadata else {}
            meta_choice = metadata.get("choice")
            # a protobuf list (ListValue) or a plain one; a string is no list of choices
            choice = ([str(c) for c in meta_choice] if meta_choice is not None and not isinstance(meta_choice, str)
                      and hasattr(meta_choice, "__len__") and len(meta_choice) else None)
            answer = await request.ask_operator(question, choice)
            message = new_message([new_text_part(answer)], role=Role.ROLE_USER, task_id=task.id,
                                  context_id=task.context_id)
        raise AgentInvocationError(f"the A2A agent `{request.model}` asked more than {MAX_QUESTIONS} questions")


class _MessageTask:
    """A direct message reply, read like a completed task with no artifacts."""

    def __init__(self, message: Any) -> None:
        self.context_id = message.context_id
        self.artifacts: list[Any] = []
        self.final_message = message


def _final_message(task: Any) -> Any:
    return task.final_message if isinstance(task, _MessageTask) else task.status.message


def _reply_text(task: Any) -> str:
    parts = [p.text for a in task.artifacts for p in a.parts if p.text]
    parts += [p.text for p in _final_message(task).parts if p.text]
    return "\n".join(parts)


def _reply_output(task: Any, schema: dict[str, Any]) -> Any:
    from a2a.helpers.proto_helpers import get_data_parts

    artifacts = list(task.artifacts)
    chosen = next((a for a in artifacts if a.name == "result"), artifacts[-1] if artifacts else None)
    parts = list(chosen.parts) if chosen is not None else list(_final_message(task).parts)
    data = get_data_parts(parts)
    if data:
        return whole_numbers(data[0])
    text = "\n".join(p.text for p in parts if p.text)
    return decode_output(text, schema)


def whole_numbers(value: Any) -> Any:
    """A2A data parts carry numbers as doubles: 3.0 back to 3 (a Flow `int`)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value

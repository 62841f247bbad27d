"""The tasks `flow serve --a2a` keeps in memory (docs/protocols.md): the `a2a-sdk` in-memory
store, scoped by the caller's principal and bounded, answering `ListTasks` as the A2A spec
says. The run's journal in `.flow/runs` is the record; a task here is what its caller may
still ask about.

- Scoped: each task belongs to the principal whose request created it (the bearer token's
  name, docs/security.md); get, list, cancel, resubscribe and a reply to `input-required`
  by anyone else find no such task, as if it never existed.
- Bounded: a principal keeps at most `cap` finished tasks (the least recently used dropped
  first) and a finished task stays `ttl` seconds; a live task (working, or waiting for an
  answer) is never dropped.
- `ListTasks`: a status filter that names no task state is invalid params (-32602).
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import ListTasksRequest, ListTasksResponse, Task, TaskState
from a2a.utils.errors import InvalidParamsError

FINISHED = frozenset({TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED,
                      TaskState.TASK_STATE_REJECTED})
_STATES = frozenset(TaskState.values())
_STATE_NAMES = frozenset(TaskState.keys())
LIST_METHODS = ("ListTasks",)


@dataclass(frozen=True)
class KeptLimits:
    cap: int  # finished tasks kept per principal
    ttl: float  # seconds a finished task stays


def task_owner(context: ServerCallContext) -> str:
    """The principal a request speaks for: the name the door gave its token ('' without auth)."""
    return context.user.user_name


class _Principal(User):
    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def is_authenticated(self) -> bool:
        return bool(self.name)

    @property
    def user_name(self) -> str:
        return self.name


class KeptTasks(InMemoryTaskStore):
    """The SDK's in-memory store, one space per principal (`task_owner`), bounded by `limits`."""

    def __init__(self, limits: KeptLimits, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(owner_resolver=lambda context: task_owner(context))
        self.limits = limits
        self.clock = clock
        self._used: dict[str, OrderedDict[str, None]] = {}  # per principal, finished tasks, least recent first
        self._finished: OrderedDict[tuple[str, str], float] = OrderedDict()  # (principal, task) -> when it ended

    def _owner(self, context: ServerCallContext) -> str:
        return task_owner(context)

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await super().save(task, context)
        owner = self._owner(context)
        key = (owner, task.id)
        if task.status.state in FINISHED:
            if key not in self._finished:
                self._finished[key] = self.clock()
            self._used.setdefault(owner, OrderedDict())[task.id] = None
            self._used[owner].move_to_end(task.id)
        await self._drop_expired()
        used = self._used.get(owner)
        while used is not None and len(used) > self.limits.cap:
            await self._drop(owner, next(iter(used)))

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        await self._drop_expired()
        task = await super().get(task_id, context)
        used = self._used.get(self._owner(context))
        if task is not None and used is not None and task_id in used:
            used.move_to_end(task_id)
        return task

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        if params.status not in _STATES:
            raise InvalidParamsError(message=f"status {params.status} is not a task state")
        await self._drop_expired()
        return await super().list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        await self._drop(self._owner(context), task_id)

    async def _drop(self, owner: str, task_id: str) -> None:
        await super().delete(task_id, ServerCallContext(user=_Principal(owner)))
        self._finished.pop((owner, task_id), None)
        used = self._used.get(owner)
        if used is not None:
            used.pop(task_id, None)
            if not used:
                del self._used[owner]

    async def _drop_expired(self) -> None:
        """Finished tasks older than the limit, oldest first (the order they ended in)."""
        deadline = self.clock() - self.limits.ttl
        while self._finished:
            (owner, task_id), ended = next(iter(self._finished.items()))
            if ended > deadline:
                return
            await self._drop(owner, task_id)


Endpoint = Callable[[Any], Awaitable[Any]]


def checked_list_params(endpoint: Endpoint) -> Endpoint:
    """The JSON-RPC endpoint, refusing a `ListTasks` whose `status` names no task state. (The SDK
    reads params leniently and an unknown enum name becomes "unspecified", which lists every
    task; this is the one place that still sees the name the client sent.)"""
    from starlette.responses import JSONResponse

    async def checked(request: Any) -> Any:
        try:
            body = await request.json()  # cached on the request: the SDK's endpoint reads the same
        except (ValueError, UnicodeDecodeError):
            return await endpoint(request)
        if isinstance(body, dict) and body.get("method") in LIST_METHODS and isinstance(body.get("params"), dict):
            status = body["params"].get("status")
            if status is not None and not (status in _STATE_NAMES or (isinstance(status, int) and status in _STATES)):
                return JSONResponse({"jsonrpc": "2.0", "id": body.get("id") if _is_id(body.get("id")) else None,
                                     "error": {"code": -32602, "message": f"Invalid params: status "
                                               f"{json.dumps(status)} is not a task state"}})
        return await endpoint(request)

    return checked


def _is_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)

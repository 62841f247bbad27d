"""The host end of a sandbox process shared by several runs of one group (an eval's items):
the process's one handler, notification sink and eager predicate, which hand each request
and event to the run it names (`payload["run"]`), and count the host requests each run has
in flight, so the pool knows when every run in the process is waiting on the host
(docs/sandbox.md "The pool", docs/security.md "A shared sandbox").

A request naming a run that is not in the process is refused `capability-violation`; an
event naming one is dropped: a bypassed sandbox reaches the other runs of its group only
through their own ids, never a run outside it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flow_kernel.errors import CapabilityViolationError
from flow_kernel.sandbox.process import Eager, Handler, Notify


@dataclass(slots=True)
class Tenant:
    """One run in a shared process: its host handler, event sink and eager predicate, the
    host requests it has in flight (`waiting`), and whether another run was ever in the
    process beside it (`company`: a crash of the process may not be its own)."""
    handler: Handler
    on_notify: Notify
    eager: Eager | None
    waiting: int = 0
    company: bool = False


class RunRouter:
    """Routes one shared process's requests and events to its runs (`tenants`, by run id).
    `group`: the runs it may take; `joining`: runs handed the process that are not in it
    yet; `draining`: it takes no new run and is closed when the last one leaves.
    `on_waiting(router)` is called once a loop turn after a run started waiting on the host
    (then the pool looks whether every run still is: a request answered at once does not
    count)."""

    def __init__(self, group: str, process: Any, on_waiting: Callable[[RunRouter], None]) -> None:
        self.group = group
        self.process = process
        self.tenants: dict[str, Tenant] = {}
        self.joining = 0
        self.draining = False
        self._on_waiting = on_waiting
        self._looking = False

    def add(self, run_id: str, handler: Handler, on_notify: Notify, eager: Eager | None) -> None:
        tenant = Tenant(handler, on_notify, eager)
        self.tenants[run_id] = tenant
        if len(self.tenants) > 1:
            for other in self.tenants.values():
                other.company = True

    def remove(self, run_id: str) -> Tenant | None:
        return self.tenants.pop(run_id, None)

    def had_company(self, run_id: str) -> bool:
        tenant = self.tenants.get(run_id)
        return tenant is not None and tenant.company

    def all_waiting(self) -> bool:
        """Whether the process has runs, none on its way in, and every one waits on the host."""
        return bool(self.tenants) and not self.joining and all(t.waiting for t in self.tenants.values())

    def _tenant(self, payload: Any) -> Tenant | None:
        run = payload.get("run") if isinstance(payload, dict) else None
        return self.tenants.get(run) if isinstance(run, str) else None

    # -- the process's handler, notification sink and eager predicate ---------------------------
    async def handle(self, op: str, payload: Any) -> Any:
        tenant = self._tenant(payload)
        if tenant is None:
            raise CapabilityViolationError(f"the host operation {str(op)[:40]!r} names no run of this sandbox")
        tenant.waiting += 1
        if tenant.waiting == 1 and not self._looking:
            self._looking = True
            asyncio.get_running_loop().call_soon(self._look)
        try:
            return await tenant.handler(op, payload)
        finally:
            tenant.waiting -= 1

    def _look(self) -> None:
        self._looking = False
        self._on_waiting(self)

    def notify(self, op: str, payload: dict[str, Any]) -> None:
        tenant = self._tenant(payload)
        if tenant is not None:
            tenant.on_notify(op, payload)

    def eager(self, op: str, payload: Any) -> bool:
        tenant = self._tenant(payload)
        return tenant is not None and tenant.eager is not None and tenant.eager(op, payload)

    def install(self) -> None:
        """Become the process's handler, notification sink and eager predicate."""
        self.process.handler, self.process.on_notify, self.process.eager = self.handle, self.notify, self.eager


__all__ = ["RunRouter", "Tenant"]

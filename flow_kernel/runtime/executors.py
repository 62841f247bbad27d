"""Where a compiled module runs: the sandbox (what users run) or, for benchmarks and
fast semantic tests, this interpreter (`flow_kernel.sandbox.inprocess`). What `flow doctor`
reports about the sandbox is in runtime/doctor.py."""

from __future__ import annotations

from typing import Any

from flow_kernel.runtime.host import HostServices
from flow_kernel.sandbox.pool import SandboxPool
from flow_kernel.sandbox.process import SandboxProcess

DEADLINE_SLACK_MS = 250  # the sandbox's own watchdog fires at the deadline; the host waits a little longer


class SandboxExecutor:
    def __init__(self, pool: SandboxPool | None = None, *, max_processes: int | None = None, warm: int = 1) -> None:
        self.pool = pool or SandboxPool(max_processes=max_processes, warm=warm)
        self._owns_pool = pool is None

    async def run(self, module: str, payload: dict[str, Any], host: HostServices) -> dict[str, Any]:
        def bind(process: SandboxProcess) -> None:
            host.sandbox_call = process.request

        deadline = payload.get("deadline_ms")
        return await self.pool.run(module, payload, handler=host.handle, on_notify=host.on_notify,
                                   deadline_ms=deadline + DEADLINE_SLACK_MS if deadline else None, bind=bind,
                                   abort=host.stop_signal())

    async def close(self) -> None:
        if self._owns_pool:
            await self.pool.close()

"""Where a compiled module runs: the sandbox (what users run) or, for benchmarks and
fast semantic tests, this interpreter (`flow_kernel.sandbox.inprocess`). What `flow doctor`
reports about the sandbox is in runtime/doctor.py."""

from __future__ import annotations

import functools
from typing import Any

from flow_kernel.runtime.host import HostServices
from flow_kernel.sandbox.pool import SandboxPool
from flow_kernel.sandbox.process import SandboxProcess

DEADLINE_SLACK_MS = 250  # the sandbox's own watchdog fires at the deadline; the host waits a little longer


# What a spare of a long-lived pool (a kernel's, a pooled session's) runs before
# its first real run (SandboxPool._warm_up): the paths a cell takes — bindings, a lambda,
# a builtin over a list, interpolation, a record, an `if`, a print, arithmetic.
WARM_UP_SOURCE = """let xs = map(range(3), i => "n${i}")
let o = { a: 1, b: [1, 2] }
if len(xs) > 1 { print(xs[0]) }
o.a + len(o.b)
"""


@functools.cache
def warm_up_payload() -> dict[str, Any]:
    from flow_kernel.lang.compiler import compile_source
    from flow_kernel.runtime.policy.ceilings import Ceilings
    from flow_kernel.source import SourceFile

    compiled = compile_source(SourceFile("<warm-up>", WARM_UP_SOURCE))
    assert compiled.python is not None, "the warm-up cell compiles"
    return {"run": "warm-up", "module": compiled.python, "filename": "<flow>",
            "args": {"workflow": None, "input": {}, "session": {}}, "deadline_ms": 10_000,
            "ceilings": Ceilings().for_limits()}


class SandboxExecutor:
    def __init__(self, pool: SandboxPool | None = None, *, max_processes: int | None = None, warm: int = 1) -> None:
        # Only a pool that keeps a process warm warms it up: a one-run pool (`flow run`) would
        # pay for the warm-up just before the run that would have paid for it anyway.
        self.pool = pool or SandboxPool(max_processes=max_processes, warm=warm,
                                        warm_up=warm_up_payload() if warm else None)
        self._owns_pool = pool is None

    async def run(self, module: str, payload: dict[str, Any], host: HostServices) -> dict[str, Any]:
        def bind(process: SandboxProcess) -> None:
            host.sandbox_call = process.request

        deadline = payload.get("deadline_ms")
        return await self.pool.run(module, payload, handler=host.handle, on_notify=host.on_notify,
                                   eager=host.runs_at_once,
                                   deadline_ms=deadline + DEADLINE_SLACK_MS if deadline else None, bind=bind,
                                   abort=host.stop_signal(), group=host.context.sandbox_group)

    async def close(self) -> None:
        if self._owns_pool:
            await self.pool.close()

"""Run a generated module in this (host) CPython, with no sandbox around it.

For the benchmark that compares the sandbox with host CPython (docs/performance.md,
"The figures"), and for tests that exercise language semantics quickly. It loads
the same `flowbox` sources the sandbox runs. Never use it for untrusted code: it is
not a sandbox.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from flow_kernel.errors import FlowError

BOOTSTRAP_DIR = Path(__file__).parent / "bootstrap"

Handler = Callable[[str, dict[str, Any]], Awaitable[Any]]
Notify = Callable[[str, dict[str, Any]], None]


def load_flowbox() -> tuple[ModuleType, ModuleType]:
    """The bootstrap's `runtime` and `errors` modules, imported from its sources."""
    if str(BOOTSTRAP_DIR) not in sys.path:
        sys.path.insert(0, str(BOOTSTRAP_DIR))
    return importlib.import_module("flowbox.runtime"), importlib.import_module("flowbox.errors")


class _InProcessBridge:
    unflushed = False  # nothing is held back here: flowbox's step path asks (flowbox/bridge.py `flush`)

    def __init__(self, handler: Handler, on_notify: Notify, errors: ModuleType) -> None:
        self.handler = handler
        self.on_notify = on_notify
        self.errors = errors

    def invoke(self, op: str, payload: dict[str, Any]) -> asyncio.Future[Any]:
        """A future, as the sandbox's bridge returns: the workflow's deadline timer
        (flowbox `Frame.watch`) fails it by setting its exception, which a coroutine or a
        task would not allow. The host's work is a task that settles the future; when the
        deadline settles it first, that work is cancelled (the run has moved on)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        work = loop.create_task(self._answer(op, payload))

        def settle(done: asyncio.Task[Any]) -> None:
            if future.done():
                return
            if done.cancelled():
                future.cancel()
            elif (error := done.exception()) is not None:
                future.set_exception(error)
            else:
                future.set_result(done.result())

        work.add_done_callback(settle)
        future.add_done_callback(lambda _settled: work.cancel())  # a no-op once the work is done
        return future

    async def _answer(self, op: str, payload: dict[str, Any]) -> Any:
        try:
            return await self.handler(op, payload)
        except FlowError as exc:  # a host error becomes the sandbox's own error type, as over the bridge
            raise self.errors.FlowError(exc.code, exc.message, exc.details) from None

    def notify(self, op: str, payload: dict[str, Any]) -> None:
        self.on_notify(op, payload)

    def memory(self) -> int:
        return 0

    def arm(self, run: object, ms: int) -> None:
        pass

    def disarm(self, run: object) -> None:
        pass


class InProcessExecutor:
    """Same interface as the sandbox pool's `run`, executed in this interpreter."""

    def __init__(self) -> None:
        _, self.errors = load_flowbox()
        self.runs = importlib.import_module("flowbox.runs")  # the bridge's entry points
        self._code: dict[str, Any] = {}

    async def run(self, module: str, payload: dict[str, Any], host: Any) -> dict[str, Any]:
        """`host` offers `handle(op, payload)`, `on_notify(op, payload)` and takes `sandbox_call`."""
        code = self._code.get(module)
        if code is None:
            code = self._code[module] = compile(module, "<flow>", "exec")
        namespace: dict[str, Any] = {"__builtins__": {}}
        exec(code, namespace)
        bridge = _InProcessBridge(host.handle, host.on_notify, self.errors)
        host.sandbox_call = self._sandbox_call
        try:
            result: dict[str, Any] = await self.runs.execute(namespace["main"], payload, bridge)
        except self.errors.FlowError as exc:
            raise FlowError.from_dto(json.loads(json.dumps(exc.to_dto()))) from None
        return result

    async def _sandbox_call(self, op: str, payload: dict[str, Any]) -> Any:
        if op != "expect":
            raise FlowError(f"unknown sandbox operation {op!r}")
        return await self.runs.expect(payload)

    async def close(self) -> None:
        await asyncio.sleep(0)


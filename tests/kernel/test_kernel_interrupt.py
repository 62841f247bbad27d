"""kernel/kernel.py: an interrupt cancels the running cell where it waits, in the request's
own task, and only while the cell is in the runner; the cancel the runner answered leaves
no request on that task. (Over the real protocol: test_kernel_protocol.py's interrupt of a
slow agent call, test_restart.py's interrupt before a restart.)"""

from __future__ import annotations

import asyncio
from typing import Any

from flow_kernel.frontend.cell import CANCELLED, CellEnd
from flow_kernel.kernel.kernel import FlowKernel


class _Runner:
    """A cell that waits until it is cancelled, and answers the cancel as `CellRunner` does."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()

    async def run_cell(self, code: str, port: Any) -> CellEnd:
        self.entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return CANCELLED
        return CellEnd()


class _Kernel:
    """What `FlowKernel._execute` and `_interrupt_cell` use of a kernel, with its outputs kept."""

    _execute = FlowKernel._execute
    _interrupt_cell = FlowKernel._interrupt_cell
    _error = FlowKernel._error
    _ok = FlowKernel._ok
    display = FlowKernel.display
    allow_stdin = FlowKernel.allow_stdin

    def __init__(self, runner: _Runner) -> None:
        self.runner = runner
        self.setup_error = None
        self.execution_count = 1
        self._cell_parent: dict[str, Any] | None = None
        self._cell_loop: asyncio.AbstractEventLoop | None = None
        self._cell_task: asyncio.Task[Any] | None = None
        self._cell_cancels = 0
        self._history_cell = None
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def widgets_on(self, silent: bool) -> bool:
        return False

    def iopub(self, msg_type: str, content: dict[str, Any], parent: dict[str, Any] | None = None) -> None:
        self.sent.append((msg_type, content))


def test_an_interrupt_cancels_the_cell_in_its_request_task_and_nothing_after_it() -> None:
    async def scenario() -> None:
        runner = _Runner()
        kernel = _Kernel(runner)

        async def request() -> dict[str, Any]:
            reply: dict[str, Any] = await kernel._execute("1 + 1", False)
            task = asyncio.current_task()
            assert task is not None and task.cancelling() == 0  # the two interrupts were answered
            kernel._interrupt_cell()  # the cell has left the runner: nothing to cancel
            await asyncio.sleep(0)  # not cancelled here
            return reply

        handling = asyncio.ensure_future(request())
        await runner.entered.wait()
        kernel._interrupt_cell()
        kernel._interrupt_cell()  # a second interrupt before the first is answered
        reply = await handling
        assert reply["status"] == "error" and reply["ename"] == "cancelled"
        assert [t for t, _ in kernel.sent] == ["error"]
        assert kernel._cell_task is None and kernel._cell_cancels == 0

    asyncio.run(scenario())


def test_an_interrupt_with_no_cell_in_the_runner_cancels_nothing() -> None:
    async def scenario() -> None:
        kernel = _Kernel(_Runner())
        kernel._interrupt_cell()
        await asyncio.sleep(0)
        assert kernel._cell_cancels == 0

    asyncio.run(scenario())

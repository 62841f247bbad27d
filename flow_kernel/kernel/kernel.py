"""`FlowKernel`: Flow cells over the Jupyter protocol (runtime.md §8).

Built on `ipykernel.kernelbase.Kernel` (not the IPython kernel: no Python completion,
debugger or `language_info`). A cell goes through the cell runner (frontend/cell.py:
magics → compile against the session → diagnostics and stop if there are errors → run in
the sandbox); this kernel adapts its I/O (`KernelPort`): `print` streamed live, displays,
the live run view, prompts, and the last expression's value as `execute_result`. Every
failure is an iopub `error`
message (what nbval and frontends look for) and an `execute_reply` with status error;
nothing escapes `do_execute`, so the kernel answers the next request whatever happened.

The whole run is awaited on the kernel's event loop, so comm messages (widget clicks)
are handled while a cell runs, and an `interrupt_request` (interrupt_mode "message")
cancels the running cell's task: the run ends `cancelled` and the kernel lives. A shutdown
or restart stops the runs going on the same way but journals them `interrupted`, so the
next kernel goes on with them (`%resume`), and their views say so before the process exits.

Capabilities come from the person (docs/security.md): when a cell's magics ask for one
that nothing granted, a person at the frontend is asked — "This notebook asks to run the
executable `sh`": Allow once / Allow for this notebook / Deny — before any magic of the
cell applies; headless (no stdin: nbclient, nbval) the cell fails with the refusal, which
says how to grant it (`FLOW_ALLOW`, `flow trust DIR`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import traceback
from pathlib import Path
from typing import Any

import zmq
from ipykernel.kernelbase import Kernel

from flow_kernel.frontend.cell import CellRunner
from flow_kernel.frontend.magics import MAGICS, notebook_trust
from flow_kernel.frontend.outputs import result_bundle, waiting_text
from flow_kernel.frontend.port import Bundle
from flow_kernel.frontend.resume_magic import NOTEBOOK_ANSWER
from flow_kernel.kernel.frames import FrameSender
from flow_kernel.kernel.history import CellHistory, KernelHistory, default_location
from flow_kernel.kernel.status import DispatchParents, StatusGate
from flow_kernel.runtime.config import FlowConfig
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable.journal import (
    interrupt_requested,
    make_spare_journals,
    process_ending,
)
from flow_kernel.runtime.gc_policy import older_objects_frozen
from flow_kernel.runtime.policy.ceilings import Ceilings
from flow_kernel.runtime.policy.operator import Operator
from flow_kernel.runtime.policy.trust import Trust
from flow_kernel.runtime.session import Session
from flow_kernel.version import VERSION
from flow_kernel.views.artifacts import artifact_bundle

__version__ = VERSION

LANGUAGE_INFO: dict[str, object] = {
    "name": "flow",
    "version": "1",
    "mimetype": "text/x-flow",
    "file_extension": ".flow",
    "codemirror_mode": "flow",
    "pygments_lexer": "flow",
}


class FlowKernel(Kernel):
    implementation = "flow_kernel"
    implementation_version = __version__
    language = "flow"
    language_version = "1"
    language_info = LANGUAGE_INFO
    banner = f"Flow Kernel {__version__}: typed workflows for LLM agents, run in a Pyodide sandbox"
    help_links = [  # noqa: RUF012 - a traitlets trait of the base class, not a shared mutable
        {"text": "Flow Kernel documentation", "url": "https://github.com/flow-kernel/flow-kernel/tree/main/docs"}]
    # ipykernel sleeps 0.5 ms after each execute request, once stdout and stderr are flushed,
    # against output of Python code (printed through its threaded streams) reaching the
    # frontend after the reply. A Flow cell's outputs are sent by this kernel on iopub before
    # it answers, and what a host-side Python tool prints is still flushed before the reply
    # (the flush waits for the iopub thread): the sleep was 0.5 ms of every cell's answer.
    _execute_sleep = 0.0

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # The person's settings (FLOW_MAX_*, FLOW_ALLOW, a trusted flow.toml) can be malformed:
        # the kernel still starts, and every cell says what is wrong (nothing runs with a
        # setting the person did not mean).
        self.setup_error: str | None = None
        try:
            self.flow = Session(directory=Path.cwd(), allow=notebook_trust(Path.cwd()))
        except ValueError as exc:  # ConfigError, CeilingError, a malformed FLOW_ALLOW
            self.setup_error = f"{exc}; fix it and restart the kernel"
            self.flow = Session(directory=Path.cwd(), config=FlowConfig(), allow=Trust(Path.cwd(), environ={}),
                                context=RunContext(ceilings=Ceilings()))
        self.flow.interactive_callback = self._ask_frontend  # also for a later `%operator interactive`
        if not self.flow.config.operator:  # a trusted flow.toml's operator stands
            self.flow.set_operator(Operator("interactive", callback=self._ask_frontend))
        self.runner = CellRunner(self.flow)  # the cells' pipeline; this kernel adapts its I/O
        self._cell_task: asyncio.Task[Any] | None = None
        self._cell_parent: dict[str, Any] | None = None
        self._cell_loop: asyncio.AbstractEventLoop | None = None
        self._status_gate = StatusGate()
        self._dispatch_parents = DispatchParents()
        self.history = KernelHistory(default_location(), self.log.warning)
        self._history_cell: CellHistory | None = None  # the running cell's line in the history, when stored
        self._wire_comms()

    def _wire_comms(self) -> None:
        """A plain `Kernel` has no comm manager; ipywidgets needs one (notebook-facts.md)."""
        try:
            import comm
            from ipykernel.comm.comm import BaseComm
            from ipykernel.comm.manager import CommManager
        except ImportError:  # pragma: no cover - ipykernel always ships them
            return
        manager = CommManager(kernel=self)
        comm.create_comm = lambda *args, **kwargs: BaseComm(*args, **kwargs)
        comm.get_comm_manager = lambda *args, **kwargs: manager
        self.comm_manager = manager
        for msg_type in ("comm_open", "comm_msg", "comm_close"):
            self.shell_handlers[msg_type] = getattr(manager, msg_type)
        try:
            import ipywidgets

            ipywidgets.register_comm_target()
        except (ImportError, AttributeError):
            pass

    def start(self) -> None:
        from flow_kernel.sandbox.lifetime import make_undumpable

        make_undumpable()  # `run` children cannot read this process's environ (API keys)
        super().start()
        self.io_loop.add_callback(self._warm_up)

    async def _warm_up(self) -> None:
        """A sandbox starts while the user types the first cell (first-cell latency)."""
        self._cell_loop = asyncio.get_running_loop()
        self.history.open()
        with contextlib.suppress(Exception):  # a failure here shows again, clearly, in the first cell
            await self.flow.warm_up()

    def _publish_status(self, status: str, channel: str, parent: dict[str, Any] | None = None) -> None:
        """Busy from an execute request's first status until its reply, whatever control,
        subshell or comm messages are handled meanwhile (kernel/status.py)."""
        def send(state: str, of: dict[str, Any]) -> None:
            super(FlowKernel, self)._publish_status(state, channel, of)

        if parent is None:
            parent = self._dispatch_parents.parent_of(status, channel, self.get_parent(channel))
        self._status_gate.publish(status, parent, send)

    def post_handler_hook(self) -> None:
        """After a shell request's handler, before the `idle` status and the stream flushes
        that ipykernel does next: a reply the handler queued on the shell stream is sent
        now (ipykernel sends it with its flush after `idle` is published; the two go on
        different channels, whose relative order the protocol leaves open)."""
        super().post_handler_hook()
        if self.shell_stream is not None and self.shell_stream.sending():
            self.shell_stream.flush(zmq.POLLOUT)

    @property
    def kernel_info(self) -> dict[str, Any]:
        info: dict[str, Any] = super().kernel_info
        info["supported_features"] = [f for f in info.get("supported_features", []) if f != "debugger"]
        return info

    # -- execute --------------------------------------------------------------------------
    async def execute_request(self, stream: Any, ident: Any, parent: Any) -> None:
        """ipykernel's execute request, whose reply goes straight onto the shell socket when
        nothing else waits in the shell stream's send queue: the socket is the main
        thread's (kernel/app.py: no shell-channel thread), and the stream would make the
        same send when flushed, after updating its loop registration twice."""
        direct = stream
        if stream is self.shell_stream and stream is not None and not stream.sending() and stream.socket is not None:
            direct = FrameSender(stream.socket)  # its frames handed to pyzmq's compiled send (kernel/frames.py)
        await super().execute_request(direct, ident, parent)

    async def do_execute(self, code: str, silent: bool, store_history: bool = True,
                         user_expressions: dict[str, Any] | None = None, allow_stdin: bool = False,
                         **_: Any) -> dict[str, Any]:
        self._allow_stdin = allow_stdin
        # Events reach the sink from the sandbox's reader task, whose context is the cell
        # that started the process: outputs carry this cell's parent explicitly.
        self._cell_parent = self.get_parent("shell")
        loop = asyncio.get_running_loop()
        # Handed to the history's thread once the reply is sent, the input earlier when
        # the cell runs on (kernel/history.py `CellHistory`).
        cell = self._history_cell = CellHistory(self.history, self.execution_count, code, loop) \
            if store_history and not silent else None
        # The whole cell in the runs' frozen-heap window (runtime/gc_policy.py): what it
        # leaves in reference cycles (its run view's widgets, the run's host objects) is
        # collected as the window closes, scanning only what it made. It closes on the loop's
        # next turn, once the reply is sent (before the next request is read): the reply
        # does not wait for the collection.
        window = contextlib.ExitStack()
        window.enter_context(older_objects_frozen())
        try:
            return await self._execute(code, silent)
        except Exception as exc:  # the kernel's own bug: still an answer, never a hung frontend
            return self._error("InternalError", f"{type(exc).__name__}: {exc}",
                               traceback.format_exc().splitlines(), silent)
        finally:
            loop.call_soon(window.close)
            if cell is not None:  # once the reply is sent, before the next request is read
                loop.call_soon(cell.ended)
            loop.call_soon(make_spare_journals)  # the next run's journal file, made while the client reads

    async def _execute(self, code: str, silent: bool) -> dict[str, Any]:
        if self.setup_error is not None:
            return self._error("ConfigError", self.setup_error, [f"ConfigError: {self.setup_error}"], silent)
        port = KernelPort(self, silent, self._cell_parent)
        self._cell_loop = asyncio.get_running_loop()
        # The cell is one task, so an interrupt cancels it wherever it waits (a prompt, a run).
        task = self._cell_task = asyncio.ensure_future(self.runner.run_cell(code, port))
        try:
            end = await task
        finally:
            self._cell_task = None
        if end.diagnostics:
            from flow_kernel.diagnostics.html import diagnostics_bundle

            self.display(diagnostics_bundle(end.diagnostics), silent)
        if end.error is not None:
            return self._error(end.error.name, end.error.message, end.error.lines, silent)
        if end.waiting:  # `%operator defer`: the run stopped for an answer
            assert end.outcome is not None
            self.display({"text/plain": waiting_text(end.outcome, NOTEBOOK_ANSWER, "TEXT")}, silent)
        elif end.value is not None and not silent:
            data = result_bundle(end.value)
            self.iopub("execute_result", {"execution_count": self.execution_count, "data": data, "metadata": {}})
            if self._history_cell is not None:
                self._history_cell.output = str(data.get("text/plain", ""))
        return self._ok()

    @property
    def allow_stdin(self) -> bool:
        """The running execute request allows input (a person is at the frontend)."""
        return bool(getattr(self, "_allow_stdin", False))

    def widgets_on(self, silent: bool) -> bool:
        if silent or os.environ.get("FLOW_LIVE_VIEW", "on") == "off":  # off: for frontends without widgets
            return False
        try:
            import ipywidgets  # noqa: F401
        except ImportError:
            return False
        return True

    # -- replies and outputs ----------------------------------------------------------------
    def _ok(self) -> dict[str, Any]:
        return {"status": "ok", "execution_count": self.execution_count, "payload": [], "user_expressions": {}}

    def _error(self, ename: str, evalue: str, lines: list[str], silent: bool) -> dict[str, Any]:
        content = {"ename": ename, "evalue": evalue, "traceback": lines}
        if not silent:
            self.iopub("error", content)
        return {"status": "error", "execution_count": self.execution_count, **content}

    def display(self, bundle: dict[str, Any], silent: bool, parent: dict[str, Any] | None = None) -> None:
        if not silent:
            self.iopub("display_data", {"data": bundle, "metadata": {}}, parent)

    def stream(self, name: str, text: str, silent: bool, parent: dict[str, Any] | None = None) -> None:
        if not silent:
            self.iopub("stream", {"name": name, "text": text}, parent)

    def iopub(self, msg_type: str, content: dict[str, Any], parent: dict[str, Any] | None = None) -> None:
        """Send with `parent` (a background run's own cell), else the running cell's."""
        if parent is None:
            parent = self._cell_parent if self._cell_parent is not None else self.get_parent("shell")
        assert self.session is not None
        self.session.send(self.iopub_socket, msg_type, content, parent, ident=self._topic(msg_type))

    # -- interrupts ---------------------------------------------------------------------------
    async def interrupt_request(self, stream: Any, ident: Any, parent: Any) -> None:
        """interrupt_mode "message": cancel the running cell (thread-safe: the control
        channel has its own thread); the run stops as `cancelled` and the kernel lives."""
        task, loop = self._cell_task, self._cell_loop
        interrupt_requested()  # a restart's first step, perhaps: its runs wait for the shutdown
        if task is not None and loop is not None:
            loop.call_soon_threadsafe(task.cancel)
        assert self.session is not None
        self.session.send(stream, "interrupt_reply", {"status": "ok"}, parent, ident=ident)

    async def create_subshell_request(self, socket: Any, ident: Any, parent: Any) -> None:
        """Subshells are not offered (kernel/app.py: a cell's runs belong to the main loop):
        the request is answered with an error rather than left without a reply."""
        assert self.session is not None
        self.session.send(socket, "create_subshell_reply", {
            "status": "error", "ename": "SubshellsUnsupported", "traceback": [],
            "evalue": "the Flow kernel runs cells on its main thread only; it offers no subshells"}, parent, ident)

    # -- operator --------------------------------------------------------------------------------
    async def _ask_frontend(self, request: dict[str, Any]) -> Any:
        """The interactive operator: the run view's prompt when a person can answer (the
        frontend allows input, or the run is in the background, where `%approve` answers);
        stdin when there is no view; else fail closed — nbclient and nbval cannot answer."""
        from flow_kernel.errors import OperatorUnavailableError

        run = str(request.get("run"))
        view = self.runner.view_of(run)
        if view is not None and self.runner.interactive.get(run):
            return await view.ask(request)
        if not self._allow_stdin:
            raise OperatorUnavailableError(
                f"no operator can answer {request['question']!r}: this frontend has no stdin "
                "(use %operator auto-approve | auto-deny | answers:PATH)")
        choice = request.get("choice")
        prompt = request["question"] + (" [y/n] " if request["kind"] == "approve" else
                                        f" ({'/'.join(choice)}) " if choice else " ")
        answer: str = await asyncio.to_thread(self.raw_input, prompt)
        if request["kind"] == "approve":
            return answer.strip().lower() in ("y", "yes")
        return answer.strip()

    async def do_shutdown(self, restart: bool) -> dict[str, Any]:
        """Shutdown or restart: the runs going on stop as interrupted — journaled so, they go
        on with `%resume RUN` in the next kernel, and their views say `interrupted` — then
        the sandbox processes stop. Runs and sandboxes belong to the shell's loop, and
        shutdown comes on the control thread's, so the stopping is handed over to the shell loop."""
        process_ending()  # also when no cell ever ran: nothing of this process ends `failed` now
        if (cell := self._history_cell) is not None:  # a cell still running: its input is kept
            cell.store_input()
        loop = self._cell_loop
        if loop is not None and loop.is_running():
            future = asyncio.run_coroutine_threadsafe(self.runner.shutdown(), loop)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.wrap_future(future), 8)
        self.history.close()
        return {"status": "ok", "restart": restart}

    async def do_history(self, hist_access_type: str, output: bool, raw: bool, session: int | None = None,
                         start: int | None = None, stop: int | None = None, n: int | None = None,
                         pattern: str | None = None, unique: bool = False, **_: Any) -> dict[str, Any]:
        """`history_request` as IPython's kernel answers it (kernel/history.py); an unknown
        access type has an empty history."""
        if hist_access_type == "tail":
            entries = self.history.tail(n if n is not None else 10, output)
        elif hist_access_type == "range":
            entries = self.history.range(session or 0, start or 0, stop, output)
        elif hist_access_type == "search":
            entries = self.history.search(pattern or "*", output, n, unique)
        else:
            entries = []
        return {"status": "ok", "history": entries}

    async def do_complete(self, code: str, cursor_pos: int) -> dict[str, Any]:
        # Off the loop and within a budget (assist_budget.py): a slow check holds back nothing.
        from flow_kernel.kernel.assist_budget import complete_within

        return {"status": "ok", **await complete_within(code, cursor_pos, self.flow.scope, tuple(MAGICS))}

    async def do_inspect(self, code: str, cursor_pos: int, detail_level: int = 0,
                         omit_sections: Any = ()) -> dict[str, Any]:
        from flow_kernel.kernel.assist_budget import inspect_within

        return {"status": "ok", **await inspect_within(code, cursor_pos, self.flow.scope, detail_level)}

    async def do_is_complete(self, code: str) -> dict[str, Any]:
        from flow_kernel.kernel.assist import is_complete

        return is_complete(code)


class KernelPort:
    """One cell's I/O over the Jupyter protocol (frontend/cell.py `CellPort`): outputs on
    iopub under the cell's parent (a background run's outputs too, after the cell returned),
    prompts as widgets or on stdin, the live run view with a display id."""

    def __init__(self, kernel: FlowKernel, silent: bool, parent: dict[str, Any] | None) -> None:
        self.kernel = kernel
        self.silent = silent
        self.parent = parent
        # A person is at the frontend: it allows input (JupyterLab, Notebook, VS Code do;
        # nbclient and nbval do not).
        self.person_present = not silent and bool(kernel.allow_stdin)
        self.widgets = kernel.widgets_on(silent)
        self.summaries = True
        self.view_displays: dict[str, str] = {}  # run id -> the display id of its live view

    def show(self, bundle: Bundle) -> None:
        self.kernel.display(bundle, self.silent, self.parent)

    def warn(self, text: str) -> None:
        self.kernel.stream("stderr", text, self.silent, self.parent)

    def on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        data = event.get("data") or {}
        if kind == "print":
            self.kernel.stream("stdout", str(data.get("text")) + "\n", self.silent, self.parent)
        elif kind == "artifact.published":  # Markdown as sanitised HTML (views/artifacts.py), JSON
            bundle = artifact_bundle(data)
            if bundle is not None:
                self.show(bundle)

    def open_view(self, title: str | None, run_id: str, agents: dict[str, dict[str, Any]]) -> Any:
        """The live view with a display id: the summary replaces it in place when the run
        ends, so the saved notebook keeps no live view's leftover."""
        if not self.widgets:
            return None
        try:
            from flow_kernel.views.run_view import RunView, live_display_id, request_msg_id

            view = RunView(title, run_id, agents=agents)
        except ImportError:  # ipywidgets missing: the cell still runs, without a live view
            return None
        self.view_displays[run_id] = display_id = live_display_id(run_id)  # one display per execution
        request = request_msg_id(self.parent)  # a reloaded page adopts its outputs
        self.kernel.iopub("display_data", {"data": view.mimebundle(display_id, request), "metadata": {},
                                           "transient": {"display_id": display_id}}, self.parent)
        return view

    def close_view(self, run_id: str, bundle: Bundle | None) -> None:
        display_id = self.view_displays.pop(run_id, None)
        if bundle is None or self.silent:
            return
        if display_id is None:
            self.show(bundle)
        else:
            self.kernel.iopub("update_display_data", {"data": bundle, "metadata": {},
                                                      "transient": {"display_id": display_id}}, self.parent)

    async def prompt(self, request: dict[str, Any]) -> Any:
        from flow_kernel.views.prompts import Prompts

        prompts = Prompts()
        self.show(prompts.mimebundle())
        try:
            return await prompts.ask(request)
        finally:
            prompts.close()

    async def read_line(self, prompt: str) -> str:
        return await asyncio.to_thread(self.kernel.raw_input, prompt)

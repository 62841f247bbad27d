"""`FlowKernel`: Flow cells over the Jupyter protocol (runtime.md §8).

Built on `ipykernel.kernelbase.Kernel` (not the IPython kernel: no Python completion,
debugger or `language_info`). A cell: leading magics → compile against the session →
diagnostics and stop if there are errors → run in the sandbox, `print` streamed live →
the last expression's value as `execute_result`. Every failure is an iopub `error`
message (what nbval and frontends look for) and an `execute_reply` with status error;
nothing escapes `do_execute`, so the kernel answers the next request whatever happened.

The whole run is awaited on the kernel's event loop, so comm messages (widget clicks)
are handled while a cell runs, and an `interrupt_request` (interrupt_mode "message")
cancels the running cell's task: the run ends `cancelled` and the kernel lives.

Capabilities come from the person (docs/security.md): when a cell's magics ask for one
that nothing granted, a person at the frontend is asked — "This notebook asks to run the
executable `sh`": Allow once / Allow for this notebook / Deny — before any magic of the
cell applies; headless (no stdin: nbclient, nbval) the cell fails with the refusal, which
says how to grant it (`FLOW_ALLOW`, `flow trust DIR`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import traceback
from pathlib import Path
from typing import Any

from ipykernel.kernelbase import Kernel

from flow_kernel.diagnostics import Diagnostic
from flow_kernel.kernel.magics import (
    MAGICS,
    CellPlan,
    MagicError,
    apply_cell,
    notebook_trust,
    parse_cell,
)
from flow_kernel.kernel.status import StatusGate
from flow_kernel.lang.compiler import Compiled
from flow_kernel.markup import escape
from flow_kernel.runtime.config import FlowConfig
from flow_kernel.runtime.events.failure_report import describe_error
from flow_kernel.runtime.gc_policy import older_objects_frozen
from flow_kernel.runtime.policy.ceilings import Ceilings
from flow_kernel.runtime.policy.operator import Operator
from flow_kernel.runtime.policy.processes import unpinned, unpinned_warning
from flow_kernel.runtime.policy.trust import Capability, CapabilityDenied, Trust
from flow_kernel.runtime.run import RunOutcome, new_run_id
from flow_kernel.runtime.session import Session
from flow_kernel.runtime.value_text import render_value
from flow_kernel.version import VERSION
from flow_kernel.views.artifacts import artifact_bundle
from flow_kernel.views.live import LiveView
from flow_kernel.views.prompts import ALLOW_NOTEBOOK, ALLOW_ONCE, DENY, capability_request

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
            self.flow = Session(directory=Path.cwd(), trust=notebook_trust(Path.cwd()))
        except ValueError as exc:  # ConfigError, CeilingError, a malformed FLOW_ALLOW
            self.setup_error = f"{exc}; fix it and restart the kernel"
            self.flow = Session(directory=Path.cwd(), config=FlowConfig(), ceilings=Ceilings(),
                                trust=Trust(Path.cwd(), environ={}))
        self.flow.interactive_callback = self._ask_frontend  # also for a later `%operator interactive`
        if not self.flow.config.operator:  # a trusted flow.toml's operator stands
            self.flow.set_operator(Operator("interactive", callback=self._ask_frontend))
        self._cell_task: asyncio.Task[Any] | None = None
        self._cell_parent: dict[str, Any] | None = None
        self.views: dict[str, Any] = {}  # run id -> its live RunView, while it runs
        self.view_displays: dict[str, str] = {}  # run id -> the display id of its live view
        self.interactive: dict[str, bool] = {}  # run id -> whether a person can answer its prompts
        self.background: dict[str, asyncio.Task[Any]] = {}  # run id -> the task of a %background run
        self._cell_loop: asyncio.AbstractEventLoop | None = None
        self._config_warned = False  # an untrusted flow.toml is named once, above the first cell's output
        self._unpinned_warned: set[str] = set()  # executables `run` may start with any arguments, named once
        self._resuming: Any = None  # the run a `%resume RUN` cell goes on with (kernel/durable.py)
        self._status_gate = StatusGate()
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
        with contextlib.suppress(Exception):  # a failure here shows again, clearly, in the first cell
            await self.flow.warm_up()

    def _publish_status(self, status: str, channel: str, parent: dict[str, Any] | None = None) -> None:
        """Busy from an execute request's first status until its reply, whatever control,
        subshell or comm messages are handled meanwhile (kernel/status.py)."""
        def send(state: str, of: dict[str, Any]) -> None:
            super(FlowKernel, self)._publish_status(state, channel, of)

        self._status_gate.publish(status, parent or self.get_parent(channel), send)

    @property
    def kernel_info(self) -> dict[str, Any]:
        info: dict[str, Any] = super().kernel_info
        info["supported_features"] = [f for f in info.get("supported_features", []) if f != "debugger"]
        return info

    # -- execute --------------------------------------------------------------------------
    async def do_execute(self, code: str, silent: bool, store_history: bool = True,
                         user_expressions: dict[str, Any] | None = None, allow_stdin: bool = False,
                         **_: Any) -> dict[str, Any]:
        self._allow_stdin = allow_stdin
        # Events reach the sink from the sandbox's reader task, whose context is the cell
        # that started the process: outputs carry this cell's parent explicitly.
        self._cell_parent = self.get_parent("shell")
        try:
            # The whole cell in the runs' frozen-heap window (runtime/gc_policy.py): what it
            # leaves in reference cycles (its run view's widgets, the run's host objects) is
            # collected as it ends, scanning only what it made. Left to the thresholds, they
            # waited for a full collection: ~40 KB a cell (issue 23).
            with older_objects_frozen():
                return await self._execute(code, silent)
        except Exception as exc:  # the kernel's own bug: still an answer, never a hung frontend
            return self._error("InternalError", f"{type(exc).__name__}: {exc}",
                               traceback.format_exc().splitlines(), silent)

    async def _execute(self, code: str, silent: bool) -> dict[str, Any]:
        if self.setup_error is not None:
            return self._error("ConfigError", self.setup_error, [f"ConfigError: {self.setup_error}"], silent)
        self._warn_ignored_config(silent)
        try:
            code, background = await self._kernel_magics(code, silent)
            parsed = parse_cell(code)
            missing = parsed.missing(self.flow)
            if missing and not self._person_can_answer(silent):
                return self._refused(missing, silent)
            if missing and not await self._ask_capabilities(missing, silent):
                text = "you denied: " + "; ".join(c.describe() for c in missing) + "; nothing of the cell ran"
                return self._error("CapabilityDenied", text, [f"CapabilityDenied: {text}"], silent)
            plan = apply_cell(parsed, self.flow)
        except MagicError as exc:
            return self._error("MagicError", str(exc), [f"MagicError: {exc}"], silent)
        except CapabilityDenied as exc:
            return self._refused([exc.capability], silent)
        except asyncio.CancelledError:  # interrupted at the capability prompt
            return self._error("cancelled", "the cell was interrupted", ["error[cancelled]: the cell was interrupted"], silent)
        for bundle in plan.outputs:
            self._display(bundle, silent)
        self._warn_unpinned(silent)
        resuming, self._resuming = self._resuming, None
        if not plan.code.strip() and resuming is None:
            return self._ok()
        if resuming is not None and plan.code.strip():
            return self._error("MagicError", "%resume runs the journaled program: put nothing after it",
                               ["MagicError: %resume runs the journaled program: put nothing after it"], silent)
        name = plan.name or cell_name(plan.code)
        # Checked once, here: a cell with errors shows its diagnostics and nothing runs (no
        # run view either); the session runs exactly what was checked.
        compiled = self.flow.compile(plan.code, name) if resuming is None else resuming.compiled
        if not compiled.ok:
            return self._diagnostics_error(compiled.check.diagnostics, silent)
        if plan.mode != "run":
            return self._compile_only(plan, compiled, silent)
        warnings = [d for d in compiled.check.diagnostics if not d.is_error]
        if warnings:  # above the run they are about (runtime.md §8)
            self._stream("stderr", _render_diagnostics(warnings), silent)
        run_id = new_run_id() if resuming is None else resuming.run_id
        self.interactive[run_id] = self._allow_stdin or background
        parent = self._cell_parent
        self._cell_loop = asyncio.get_running_loop()
        # A cell's summary needs no title (it sits under the cell); a `%load`ed file's names it.
        view = LiveView(lambda: self.new_view(plan.name, run_id, silent, parent, compiled), plan.name)
        task = asyncio.ensure_future(self.flow.run_async(
            compiled, run_id=run_id, sinks=[lambda event: self._on_event(event, silent, parent), view.sink],
            **({"workflow": resuming.workflow, "input": resuming.input, "resume": resuming.checkpoint} if resuming else {})))
        if background:
            self.background[run_id] = task
            task.add_done_callback(lambda t: self._finish_background(run_id, t, view, silent, parent))
            self._display(_text(f"run {run_id} goes on in the background: "
                                f"%approve {run_id} yes|no answers its approvals, %wait {run_id} awaits it"), silent)
            return self._ok()
        self._cell_task = task
        try:
            outcome: RunOutcome = await task
        except asyncio.CancelledError:
            self._interrupt_view(run_id, view, silent)
            return self._error("cancelled", "the cell was interrupted", ["error[cancelled]: the cell was interrupted"], silent)
        finally:
            self._cell_task = None
        self._finish_view(run_id, view, outcome, silent)
        if outcome.pending:  # `%operator defer`: the run stopped for an answer (kernel/durable.py)
            from flow_kernel.kernel.durable import waiting_text

            self._display(_text(waiting_text(outcome)), silent)
            return self._ok()
        if outcome.error is not None:
            return self._flow_error(outcome, silent)
        if outcome.result is not None and not silent:
            self._iopub("execute_result", {"execution_count": self.execution_count,
                                           "data": _result_bundle(outcome.result), "metadata": {}})
        return self._ok()

    # -- capabilities: asked of the person ---------------------------------------------------
    def _warn_ignored_config(self, silent: bool) -> None:
        """A flow.toml found but not trusted changes nothing; say so once, above the output."""
        if self._config_warned or silent:
            return
        warning = self.flow.config.ignored_warning()
        if warning:
            self._config_warned = True
            self._stream("stderr", f"warning: {warning}\n", silent)

    def _warn_unpinned(self, silent: bool) -> None:
        """An executable `run` may start with any arguments (`%allow run sort`, FLOW_ALLOW,
        flow.toml) is named once, above the output of the first cell that has it."""
        if silent:
            return
        for name in unpinned(self.flow.allow_run):
            if name not in self._unpinned_warned:
                self._unpinned_warned.add(name)
                self._stream("stderr", f"warning: {unpinned_warning(name)}\n", silent)

    def _person_can_answer(self, silent: bool) -> bool:
        """A person is at the frontend: it allows input (JupyterLab, Notebook, VS Code do;
        nbclient and nbval do not) — the same test as for the operator's prompts."""
        return not silent and bool(self._allow_stdin)

    async def _ask_capabilities(self, missing: list[Capability], silent: bool) -> bool:
        """Ask the person for what the cell's magics need: True when granted (once, or
        remembered for this notebook), False when denied."""
        trust = self.flow.trust
        asks = "; ".join(c.describe() for c in missing)
        answer = await self._ask_person(capability_request([c.describe() for c in missing]), silent)
        if answer not in (ALLOW_ONCE, ALLOW_NOTEBOOK):
            return False
        for capability in missing:
            trust.grant(capability, remember=answer == ALLOW_NOTEBOOK)
        how = "for this notebook" if answer == ALLOW_NOTEBOOK else "once (this kernel)"
        self._display(_text(f"allowed {how}: {asks}"), silent)
        return True

    async def _ask_person(self, request: dict[str, Any], silent: bool) -> Any:
        """A prompt outside any run, with the run view's prompt machinery (views/prompts.py)
        when the frontend shows widgets, else on stdin. Interruptible like a run."""
        if self._widgets_on(silent):
            from flow_kernel.views.prompts import Prompts

            prompts = Prompts()
            self._display(prompts.mimebundle(), silent)
            task = asyncio.ensure_future(prompts.ask(request))
            self._cell_task, self._cell_loop = task, asyncio.get_running_loop()
            try:
                return await task
            finally:
                self._cell_task = None
                prompts.close()
        typed: str = await asyncio.to_thread(
            self.raw_input, request["question"] + "".join(f"\n- {item}" for item in request.get("items", []))
            + "\nAllow [o]nce, for this [n]otebook, or [d]eny? ")
        return {"o": ALLOW_ONCE, "once": ALLOW_ONCE, "n": ALLOW_NOTEBOOK, "notebook": ALLOW_NOTEBOOK}.get(
            typed.strip().lower(), DENY)  # anything else is a no

    def _refused(self, missing: list[Capability], silent: bool) -> dict[str, Any]:
        """The cell fails: each capability asked for and not granted, with how to grant it."""
        trust = self.flow.trust
        refusals = [str(CapabilityDenied(c, asker=trust.asker, folder=trust.folder)) for c in missing]
        return self._error("CapabilityDenied", refusals[0], [f"CapabilityDenied: {r}" for r in refusals], silent)

    # -- the run view --------------------------------------------------------------------------
    def _widgets_on(self, silent: bool) -> bool:
        if silent or os.environ.get("FLOW_LIVE_VIEW", "on") == "off":  # off: for frontends without widgets
            return False
        try:
            import ipywidgets  # noqa: F401
        except ImportError:
            return False
        return True

    def new_view(self, name: str | None, run_id: str, silent: bool, parent: dict[str, Any] | None,
                 compiled: Compiled | None = None) -> Any:
        """The live view, where a person watches (the frontend allows input, or the run goes
        on in the background); headless (nbclient, nbval) the cell gets only the summary."""
        if not self._widgets_on(silent) or not self.interactive.get(run_id):
            return None
        try:
            from flow_kernel.views.run_view import RunView

            view = RunView(name, run_id, agents=_declared_agents(compiled))
        except ImportError:  # ipywidgets missing: the cell still runs, without a live view
            return None
        self.views[run_id] = view
        # Shown with a display id: the summary replaces it in place when the run ends, so the
        # saved notebook keeps no live view's leftover.
        self.view_displays[run_id] = display_id = f"flow-run-{run_id}"
        if not silent:
            self._iopub("display_data", {"data": view.mimebundle(), "metadata": {},
                                         "transient": {"display_id": display_id}}, parent)
        return view

    def _finish_view(self, run_id: str, live: LiveView, outcome: RunOutcome, silent: bool,
                     parent: dict[str, Any] | None = None) -> None:
        self.views.pop(run_id, None)
        self.interactive.pop(run_id, None)
        self._show_summary(run_id, live.finish(outcome), silent, parent)

    def _interrupt_view(self, run_id: str, live: LiveView, silent: bool, parent: dict[str, Any] | None = None) -> None:
        self.views.pop(run_id, None)
        self.interactive.pop(run_id, None)
        self._show_summary(run_id, live.interrupt(), silent, parent)

    def _show_summary(self, run_id: str, bundle: dict[str, Any] | None, silent: bool,
                      parent: dict[str, Any] | None) -> None:
        display_id = self.view_displays.pop(run_id, None)
        if bundle is None or silent:
            return
        if display_id is None:
            self._display(bundle, silent, parent)
        else:
            self._iopub("update_display_data", {"data": bundle, "metadata": {}, "transient": {"display_id": display_id}},
                        parent)

    def _drop_view(self, run_id: str, live: LiveView) -> None:
        self.views.pop(run_id, None)
        self.interactive.pop(run_id, None)
        self.view_displays.pop(run_id, None)
        live.drop()

    def _finish_background(self, run_id: str, task: asyncio.Task[Any], view: LiveView, silent: bool,
                           parent: dict[str, Any] | None) -> None:
        if task.cancelled() or task.exception() is not None:
            self._drop_view(run_id, view)
            return
        outcome: RunOutcome = task.result()
        self._finish_view(run_id, view, outcome, silent, parent)
        if outcome.error is not None:
            self._stream("stderr", "\n".join(describe_error(outcome.error, outcome.source_line)) + "\n", silent, parent)
        elif outcome.result is not None:
            self._display(_result_bundle(outcome.result), silent, parent)

    async def _kernel_magics(self, code: str, silent: bool) -> tuple[str, bool]:
        """`%background`, `%approve RUN yes|no` and `%wait RUN` need the kernel, not only the
        session: they are taken off the top of the cell here (line numbers kept)."""
        lines = code.split("\n")
        background = False
        self._resuming = None  # only this cell's `%resume` counts
        index = 0
        while index < len(lines):
            line = lines[index].strip()
            word, _, args = line.partition(" ")
            if word == "%background":
                background = True
            elif word == "%approve":
                self._approve_magic(args.strip(), silent)
            elif word == "%wait":
                await self._wait_magic(args.strip(), silent)
            elif word == "%eval":  # an eval, shown as its results (kernel/eval_magic.py)
                from flow_kernel.kernel.eval_magic import eval_in_kernel

                await eval_in_kernel(self, args.strip(), silent)
            elif word == "%resume":
                from flow_kernel.kernel.durable import open_run

                self._resuming = await open_run(self, args.strip(), silent)
            else:
                break
            index += 1
        return "\n" * index + "\n".join(lines[index:]), background

    def _approve_magic(self, args: str, silent: bool) -> None:
        words = args.split()
        if len(words) == 1 and words[0] in ("yes", "no"):  # the only run waiting for an answer
            waiting = [run for run, view in self.views.items() if view.waiting]
            if len(waiting) != 1:
                raise MagicError("%approve: no run is waiting for an approval" if not waiting else
                                 f"%approve: {len(waiting)} runs are waiting ({', '.join(waiting)}): "
                                 "say which, %approve RUN yes|no")
            words = [waiting[0], words[0]]
        if len(words) != 2 or words[1] not in ("yes", "no"):
            raise MagicError("usage: %approve [RUN] yes|no")
        run, answer = words
        view = self.views.get(run)
        if view is None:
            ended = run in self.background or any(o.run_id == run for o in self.flow.history)
            raise MagicError(f"%approve: run {run} has ended; there is nothing to answer" if ended
                             else f"%approve: no run {run} is going on (see %runs)")
        if not view.answer(answer == "yes"):
            raise MagicError(f"%approve: run {run} is not waiting for an approval")
        self._display(_text(f"run {run}: {'approved' if answer == 'yes' else 'denied'}"), silent)

    async def _wait_magic(self, args: str, silent: bool) -> None:
        task = self.background.get(args)
        if task is None:
            raise MagicError(f"%wait: no background run {args!r} (start one with %background)")
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)
        outcome = task.result() if task.done() and not task.cancelled() else None
        status = "cancelled" if outcome is None else "completed" if outcome.error is None else f"failed: {outcome.error.code}"
        self._display(_text(f"run {args}: {status}"), silent)

    def _compile_only(self, plan: CellPlan, compiled: Compiled, silent: bool) -> dict[str, Any]:
        """`%%python` shows the generated module, `%%check` the diagnostics; nothing runs."""
        diagnostics = compiled.check.diagnostics
        if plan.mode == "python":
            assert compiled.python is not None
            python = compiled.python  # an escaped <pre>, never Markdown (docs/security.md)
            self._display({"text/plain": python, "text/html": f"<pre>{escape(python)}</pre>"}, silent)
        else:
            text = _render_diagnostics(diagnostics) if diagnostics else "no diagnostics"
            self._display({"text/plain": text.rstrip("\n")}, silent)
        return self._ok()

    def _on_event(self, event: dict[str, Any], silent: bool, parent: dict[str, Any] | None) -> None:
        kind = event.get("type")
        data = event.get("data") or {}
        if kind == "print":
            self._stream("stdout", str(data.get("text")) + "\n", silent, parent)
        elif kind == "artifact.published":  # Markdown as sanitised HTML (views/artifacts.py), JSON
            bundle = artifact_bundle(data)
            if bundle is not None:
                self._display(bundle, silent, parent)

    # -- replies and outputs ----------------------------------------------------------------
    def _ok(self) -> dict[str, Any]:
        return {"status": "ok", "execution_count": self.execution_count, "payload": [], "user_expressions": {}}

    def _error(self, ename: str, evalue: str, lines: list[str], silent: bool) -> dict[str, Any]:
        content = {"ename": ename, "evalue": evalue, "traceback": lines}
        if not silent:
            self._iopub("error", content)
        return {"status": "error", "execution_count": self.execution_count, **content}

    def _flow_error(self, outcome: RunOutcome, silent: bool) -> dict[str, Any]:
        error = outcome.error
        assert error is not None
        return self._error(error.code, error.message, describe_error(error, outcome.source_line), silent)

    def _diagnostics_error(self, diagnostics: list[Diagnostic], silent: bool) -> dict[str, Any]:
        from flow_kernel.diagnostics.html import diagnostics_bundle

        errors = [d for d in diagnostics if d.is_error]
        self._display(diagnostics_bundle(diagnostics), silent)
        first = errors[0] if errors else None
        evalue = f"{len(errors)} error(s)" + (f"; first: {first.code} {first.message}" if first else "")
        return self._error("CompileError", evalue, [f"CompileError: {evalue}"], silent)

    def _display(self, bundle: dict[str, Any], silent: bool, parent: dict[str, Any] | None = None) -> None:
        if not silent:
            self._iopub("display_data", {"data": bundle, "metadata": {}}, parent)

    def _stream(self, name: str, text: str, silent: bool, parent: dict[str, Any] | None = None) -> None:
        if not silent:
            self._iopub("stream", {"name": name, "text": text}, parent)

    def _iopub(self, msg_type: str, content: dict[str, Any], parent: dict[str, Any] | None = None) -> None:
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
        if task is not None and loop is not None:
            loop.call_soon_threadsafe(task.cancel)
        assert self.session is not None
        self.session.send(stream, "interrupt_reply", {"status": "ok"}, parent, ident=ident)

    # -- operator --------------------------------------------------------------------------------
    async def _ask_frontend(self, request: dict[str, Any]) -> Any:
        """The interactive operator: the run view's prompt when a person can answer (the
        frontend allows input, or the run is in the background, where `%approve` answers);
        stdin when there is no view; else fail closed — nbclient and nbval cannot answer."""
        from flow_kernel.errors import OperatorUnavailableError

        run = str(request.get("run"))
        view = self.views.get(run)
        if view is not None and self.interactive.get(run):
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
        """Stop the sandbox processes. They belong to the shell's loop, and shutdown comes on
        the control thread's, so the closing is handed over to the shell loop."""
        loop = self._cell_loop
        if loop is not None and loop.is_running():
            future = asyncio.run_coroutine_threadsafe(self.flow.aclose(), loop)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.wrap_future(future), 5)
        return {"status": "ok", "restart": restart}

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


def cell_name(code: str) -> str:
    """A cell's name in spans, run views and journals: from its text, not the execution
    count, so a notebook's outputs are the same however its cells were run (nbval), and a
    cell run again is the same cell (no F7003 against itself)."""
    import hashlib

    return f"<cell {hashlib.sha256(code.strip().encode()).hexdigest()[:6]}>"


def _declared_agents(compiled: Compiled | None) -> dict[str, dict[str, Any]]:
    from flow_kernel.views.run_model import declared_agents

    return declared_agents(compiled.check.decls) if compiled is not None else {}


def _text(text: str) -> dict[str, Any]:
    return {"text/plain": text}


def _render_diagnostics(diagnostics: list[Diagnostic]) -> str:
    from flow_kernel.diagnostics.render import render_text

    return render_text(diagnostics)


def _result_bundle(value: Any) -> dict[str, Any]:
    """Short values on one line as Flow renders them; long structures indented."""
    text = render_value(value)
    bundle: dict[str, Any] = {"text/plain": text}
    if isinstance(value, dict | list):
        bundle["application/json"] = value
        if len(text) > 80:
            bundle["text/plain"] = json.dumps(value, ensure_ascii=False, indent=2)
    return bundle

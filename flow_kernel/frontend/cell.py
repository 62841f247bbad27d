"""The cell runner: a cell's way from text to result, written once.

    runner magics (frontend/run_magics.py) → the session magics' capabilities, granted by
    the person or refused → the magics applied → compile → diagnostics → the run with its
    view → how it ended

`CellRunner` owns that way and what lasts between cells (the runs going on, their views,
the warnings said once); a front end only adapts I/O, through a `CellPort`: where outputs
go, how a person is asked, how a live view is shown. The Flow kernel, `%%flow`, `flow run`,
`flow resume`, `%resume`, `%eval` and `flow serve` all run cells or programs through it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from flow_kernel.diagnostics import Diagnostic
from flow_kernel.frontend.magics import MAGICS, CellPlan, MagicError, apply_cell, parse_cell
from flow_kernel.frontend.outputs import compiled_bundle, render_diagnostics, result_bundle
from flow_kernel.frontend.port import Bundle, CellPort
from flow_kernel.lang.compiler import Compiled
from flow_kernel.runtime.durable.journal import Checkpoint, process_ending
from flow_kernel.runtime.events.failure_report import describe_error
from flow_kernel.runtime.policy.processes import unpinned, unpinned_warning
from flow_kernel.runtime.policy.trust import Capability, CapabilityDenied
from flow_kernel.runtime.run import RunOutcome, new_run_id
from flow_kernel.runtime.session import Resumption, Session
from flow_kernel.views.live import LiveView
from flow_kernel.views.prompts import ALLOW_NOTEBOOK, ALLOW_ONCE, DENY, capability_request


@dataclass(frozen=True)
class CellError:
    """A cell that failed: a name (`CompileError`, `MagicError`, a Flow error code…), a
    message, and the lines that say it in full."""

    name: str
    message: str
    lines: list[str]


@dataclass(frozen=True)
class CellEnd:
    """How a cell ended. `error` None: it succeeded, with `value` when its run had a result;
    `outcome` is the run's (None when nothing ran, or it goes on in the background);
    `diagnostics` are the compile errors' when the cell did not compile."""

    error: CellError | None = None
    value: Any = None
    outcome: RunOutcome | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def waiting(self) -> bool:
        """The run stopped for an answer (`%operator defer`)."""
        return self.outcome is not None and bool(self.outcome.pending)


@dataclass
class Prelude:
    """What a cell's runner magics decided for the rest of it."""

    background: bool = False
    resuming: Resumption | None = None


class CellRefused(Exception):
    """The cell cannot go on: `end` says why."""

    def __init__(self, end: CellEnd) -> None:
        super().__init__(end.error.message if end.error else "")
        self.end = end


def failed(name: str, message: str, lines: list[str] | None = None) -> CellEnd:
    return CellEnd(error=CellError(name, message, lines if lines is not None else [f"{name}: {message}"]))


CANCELLED = CellEnd(error=CellError("cancelled", "the cell was interrupted", ["error[cancelled]: the cell was interrupted"]))


class CellRunner:
    """The cells of one session, whatever front end they come from."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.live: dict[str, LiveView] = {}  # run id -> its live view, while it runs
        self.interactive: dict[str, bool] = {}  # run id -> whether a person can answer its prompts
        self.background: dict[str, asyncio.Task[RunOutcome]] = {}  # run id -> a `%background` run
        self.running: dict[str, asyncio.Task[RunOutcome]] = {}  # run id -> every run going on
        self._config_warned = False
        self._unpinned_warned: set[str] = set()

    def view_of(self, run_id: str) -> Any:
        """The live run view of a run going on (None: it has none, or has ended)."""
        live = self.live.get(run_id)
        return live.view if live is not None else None

    # -- a cell --------------------------------------------------------------------------------
    async def run_cell(self, code: str, port: CellPort) -> CellEnd:
        """Run one cell: its magics, then its code. Nothing of the cell applies when one of
        its magics is wrong or asks for what the person does not grant."""
        self._warn_config(port)
        prelude = Prelude()
        try:
            code = await self._runner_magics(code, port, prelude)
            parsed = parse_cell(code)
            await self.grant(parsed.missing(self.session), port)
            plan = apply_cell(parsed, self.session)
        except MagicError as exc:
            return failed("MagicError", str(exc))
        except CapabilityDenied as exc:
            return self.refused([exc.capability])
        except CellRefused as exc:
            return exc.end
        except asyncio.CancelledError:  # interrupted at a prompt
            return CANCELLED
        for bundle in plan.outputs:
            port.show(bundle)
        self._warn_unpinned(port)
        try:
            return await self._run_plan(plan, prelude, port)
        except asyncio.CancelledError:
            return CANCELLED

    async def _run_plan(self, plan: CellPlan, prelude: Prelude, port: CellPort) -> CellEnd:
        """The cell's code (or the run it resumes), once its magics applied."""
        resuming = prelude.resuming
        if resuming is not None:
            if plan.code.strip():
                return failed("MagicError", "%resume runs the journaled program: put nothing after it")
            return await self.run_program(resuming.compiled, port, title=plan.name, background=prelude.background,
                                          resuming=resuming)
        if not plan.code.strip():
            return CellEnd()
        compiled = self.session.compile(plan.code, plan.name or cell_name(plan.code))
        if not compiled.ok:
            return compile_failed(compiled.check.diagnostics)
        if plan.mode != "run":
            port.show(compiled_bundle(compiled, plan.mode))
            return CellEnd()
        warnings = [d for d in compiled.check.diagnostics if not d.is_error]
        if warnings:  # above the run they are about
            port.warn(render_diagnostics(warnings))
        return await self.run_program(compiled, port, title=plan.name, background=prelude.background)

    async def grant(self, missing: list[Capability], port: CellPort) -> None:
        """Ask the person for `missing` (CellRefused when nobody can answer, or they deny)."""
        if not missing:
            return
        if not port.person_present:
            raise CellRefused(self.refused(missing))
        trust = self.session.trust
        asks = "; ".join(c.describe() for c in missing)
        answer = await self._ask_capabilities(missing, port)
        if answer not in (ALLOW_ONCE, ALLOW_NOTEBOOK):
            raise CellRefused(failed("CapabilityDenied", f"you denied: {asks}; nothing of the cell ran"))
        for capability in missing:
            trust.grant(capability, remember=answer == ALLOW_NOTEBOOK)
        how = "for this notebook" if answer == ALLOW_NOTEBOOK else "once (this kernel)"
        port.show({"text/plain": f"allowed {how}: {asks}"})

    async def _ask_capabilities(self, missing: list[Capability], port: CellPort) -> Any:
        request = capability_request([c.describe() for c in missing])
        if port.widgets:
            return await port.prompt(request)
        typed = await port.read_line(request["question"] + "".join(f"\n- {item}" for item in request.get("items", []))
                                     + "\nAllow [o]nce, for this [n]otebook, or [d]eny? ")
        return {"o": ALLOW_ONCE, "once": ALLOW_ONCE, "n": ALLOW_NOTEBOOK, "notebook": ALLOW_NOTEBOOK}.get(
            typed.strip().lower(), DENY)  # anything else is a no

    def refused(self, missing: list[Capability]) -> CellEnd:
        """The cell fails: each capability asked for and not granted, with how to grant it."""
        trust = self.session.trust
        refusals = [str(CapabilityDenied(c, asker=trust.asker, folder=trust.folder)) for c in missing]
        return failed("CapabilityDenied", refusals[0], [f"CapabilityDenied: {r}" for r in refusals])

    async def _runner_magics(self, code: str, port: CellPort, prelude: Prelude) -> str:
        """Take the runner magics off the top of the cell, each handled in order (the line
        numbers of the rest kept)."""
        lines = code.split("\n")
        index = 0
        while index < len(lines):
            word, _, args = lines[index].strip().partition(" ")
            entry = MAGICS.get(word[1:]) if word.startswith("%") else None
            if entry is None or entry.handle is None:
                break
            await entry.handle(self, port, args.strip(), prelude)
            index += 1
        return "\n" * index + "\n".join(lines[index:])

    # -- a run -----------------------------------------------------------------------------------
    async def run_program(self, compiled: Compiled, port: CellPort, *, title: str | None = None,
                          workflow: str | None = None, input: dict[str, Any] | None = None,
                          run_id: str | None = None, background: bool = False,
                          resuming: Resumption | None = None) -> CellEnd:
        """Run a checked program (a cell, a file, or a run resumed) with its live view; with
        `background`, return at once and let the run go on (`%approve`, `%wait`). Cancelled
        (an interrupt), the run stops `cancelled`, its view shows so, and the caller is cancelled."""
        resume: Checkpoint | None = None
        if resuming is not None:
            run_id, workflow, input, resume = resuming.run_id, resuming.workflow, resuming.input, resuming.checkpoint
        run_id = run_id or new_run_id()
        self.interactive[run_id] = port.person_present or background
        # A live view where a person watches (a prompt can be answered, or the run goes on in
        # the background); elsewhere (nbclient, nbval, a terminal) only the summary at the end.
        live = LiveView(lambda: port.open_view(title, run_id, _declared_agents(compiled))
                        if self.interactive.get(run_id) else None, title)
        self.live[run_id] = live
        sinks = [port.on_event, live.sink] if port.summaries else [port.on_event]
        task = asyncio.ensure_future(self.session.run_async(
            compiled, run_id=run_id, sinks=sinks, workflow=workflow, input=input, resume=resume))
        self.running[run_id] = task
        task.add_done_callback(lambda _: self.running.pop(run_id, None))
        if background:
            self.background[run_id] = task
            task.add_done_callback(lambda done: self._background_ended(run_id, done, port))
            port.show({"text/plain": f"run {run_id} goes on in the background: "
                                     f"%approve {run_id} yes|no answers its approvals, %wait {run_id} awaits it"})
            return CellEnd()
        try:
            outcome = await task
        except asyncio.CancelledError:  # an interrupt: the summary says so, the caller is cancelled
            task.cancel()
            self._end_view(run_id, port, live.interrupt())
            raise
        except BaseException:
            self._forget(run_id).drop()
            raise
        self._end_view(run_id, port, live.finish(outcome))
        return ended(outcome)

    def _background_ended(self, run_id: str, task: asyncio.Task[RunOutcome], port: CellPort) -> None:
        if task.cancelled():  # the kernel shut down: the view says what happened until then
            self._end_view(run_id, port, self.live[run_id].interrupt())
            return
        if task.exception() is not None:
            port.close_view(run_id, None)
            self._forget(run_id).drop()
            return
        outcome = task.result()
        self._end_view(run_id, port, self.live[run_id].finish(outcome))
        if outcome.error is not None:
            port.warn("\n".join(describe_error(outcome.error, outcome.source_line)) + "\n")
        elif outcome.result is not None:
            port.show(result_bundle(outcome.result))

    def _end_view(self, run_id: str, port: CellPort, bundle: Bundle | None) -> None:
        self._forget(run_id)
        port.close_view(run_id, bundle)

    def _forget(self, run_id: str) -> LiveView:
        self.interactive.pop(run_id, None)
        return self.live.pop(run_id)

    async def shutdown(self, grace: float = 5.0) -> None:
        """The process shuts down (a kernel's shutdown or restart): every run going on is
        stopped as an interrupt stops it (its view says `interrupted`) and journaled
        `interrupted`, so `%resume RUN` or `flow resume RUN` goes on with it later; then the
        sandboxes stop. Waits at most `grace` seconds for the runs to end."""
        process_ending()
        tasks = list(self.running.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=grace)
        await asyncio.sleep(0)  # the cells awaiting those runs close their views
        await self.session.aclose()

    async def wait(self, run_id: str) -> RunOutcome | None:
        """Wait for a background run to end: its outcome, None when it was cancelled."""
        task = self.background.get(run_id)
        if task is None:
            raise MagicError(f"%wait: no background run {run_id!r} (start one with %background)")
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.cancelled():  # the waiting cell itself was interrupted
                raise
        return task.result() if task.done() and not task.cancelled() else None

    # -- said once ---------------------------------------------------------------------------------
    def _warn_config(self, port: CellPort) -> None:
        """A flow.toml found but not trusted changes nothing: said once, above the output."""
        if self._config_warned:
            return
        warning = self.session.config.ignored_warning()
        if warning:
            self._config_warned = True
            port.warn(f"warning: {warning}\n")

    def _warn_unpinned(self, port: CellPort) -> None:
        """Each executable `run` may start with any arguments, named once."""
        for name in unpinned(self.session.allow_run):
            if name not in self._unpinned_warned:
                self._unpinned_warned.add(name)
                port.warn(f"warning: {unpinned_warning(name)}\n")


def ended(outcome: RunOutcome) -> CellEnd:
    """A run's outcome as a cell's end: waiting and completed runs succeed, a failure fails."""
    if outcome.pending or outcome.error is None:
        return CellEnd(value=None if outcome.pending else outcome.result, outcome=outcome)
    error = outcome.error
    return CellEnd(error=CellError(error.code, error.message, describe_error(error, outcome.source_line)),
                   outcome=outcome)


def compile_failed(diagnostics: list[Diagnostic]) -> CellEnd:
    """A cell that did not compile. The front end shows `diagnostics` in full; the error's
    `message` (nbval's and automation's `evalue`) names the first, and its `lines` (what a
    notebook draws in red) give the codes alone, so no message is shown twice."""
    errors = [d for d in diagnostics if d.is_error]
    first = errors[0] if errors else None
    evalue = f"{len(errors)} error(s)" + (f"; first: {first.code} {first.message}" if first else "")
    codes = ", ".join(dict.fromkeys(d.code for d in errors))
    shown = f"CompileError: {len(errors)} error(s) ({codes}), shown above" if codes else f"CompileError: {evalue}"
    return CellEnd(error=CellError("CompileError", evalue, [shown]), diagnostics=diagnostics)


def cell_name(code: str, label: str = "cell") -> str:
    """A cell's name in spans, run views and journals: from its text, so a notebook's outputs
    are the same however its cells were run, and a cell run again is the same cell."""
    import hashlib

    return f"<{label} {hashlib.sha256(code.strip().encode()).hexdigest()[:6]}>"


def _declared_agents(compiled: Compiled) -> dict[str, dict[str, Any]]:
    from flow_kernel.views.run_model import declared_agents

    return declared_agents(compiled.check.decls)


__all__ = ["CANCELLED", "CellEnd", "CellError", "CellRefused", "CellRunner", "Prelude", "cell_name", "compile_failed",
           "ended", "failed"]

"""One run, end to end (runtime.md §1): validate the input, execute the compiled
module in an executor (the sandbox pool, or in-process for benchmarks), map errors
back to Flow spans, validate the output."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from flow_kernel.errors import (
    CapabilityViolationError,
    FlowCancelledError,
    FlowError,
    FlowIsolateError,
    OutputValidationError,
    WorkflowInputValidationError,
)
from flow_kernel.lang.compiler import Compiled
from flow_kernel.lang.sourcemap import span_to_json
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.durable.cancel import CancelRequested, watch_for
from flow_kernel.runtime.durable.cassette import source_scope
from flow_kernel.runtime.durable.checkpoint import RunCheckpoint
from flow_kernel.runtime.durable.journal import (
    Journal,
    RunLocked,
    ending_after_interrupt,
    is_process_ending,
    now_text,
)
from flow_kernel.runtime.durable.nofollow import LinkRefused
from flow_kernel.runtime.durable.resume import program_header
from flow_kernel.runtime.gc_policy import older_objects_frozen
from flow_kernel.runtime.host import HostServices
from flow_kernel.runtime.policy.ceilings import name_the_ceiling
from flow_kernel.runtime.validation import require_valid

# How long after a kernel's interrupt request a run it stopped waits for its process to say
# it shuts down (a kernel restart interrupts, then asks the kernel to shut down), before its
# journal says the person cancelled it. Only a run with a journal, stopped by a cancel
# within that time of an interrupt request, waits.
RESTART_SETTLE = 0.5


class Executor(Protocol):
    async def run(self, module: str, payload: dict[str, Any], host: HostServices) -> dict[str, Any]: ...


@dataclass
class RunOutcome:
    run_id: str
    result: Any = None
    error: FlowError | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    bindings: dict[str, Any] = field(default_factory=dict)
    steps: int = 0
    journal: Path | None = None
    traces: list[dict[str, Any]] = field(default_factory=list)
    output_bytes: int = 0  # bytes of its events' data (what the output ceiling counts)
    compiled: Compiled | None = None  # the program that ran
    # file name -> text of more sources the run's spans can point into than the program and
    # the files it `use`s: a Session's cells (its own dict, shared, not copied per run)
    sources: Mapping[str, str] = field(default_factory=dict, repr=False)
    shown_as: dict[str, str] = field(default_factory=dict, repr=False)  # a file's shown name -> its name
    # the pending requests a `defer` operator left (status `waiting`): {id, kind, question, details, choices}
    pending: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.pending

    @property
    def status(self) -> str:
        """`completed`, `failed`, or `waiting` (for an answer: `pending`; docs/durability.md)."""
        return "waiting" if self.pending else "completed" if self.error is None else "failed"

    def error_json(self) -> dict[str, Any] | None:
        """The failure as data — `{code, message, span, stage, details}` — for JSON output
        and the run view; None when the run succeeded."""
        e = self.error
        if e is None:
            return None
        return {"code": e.code, "message": e.message, "stage": e.stage, "span": e.span, "details": e.details}

    def source_line(self, file: str | None = None, line: int | None = None) -> str | None:
        """The text of Flow line `line` of `file` (default: where the error is), from the
        sources the run kept; None when that file or line is not known."""
        span = self.error.span if self.error is not None else None
        if file is None or line is None:
            if not span:
                return None
            file, line = str(span.get("file")), int(span.get("line") or 0)
        text = self._text_of(self.shown_as.get(file, file))
        if text is None:
            return None
        lines = text.split("\n")
        return lines[line - 1].removesuffix("\r") if 0 < line <= len(lines) else None

    def _text_of(self, file: str) -> str | None:
        if self.compiled is not None:
            for source in (self.compiled.check.source, *self.compiled.check.used_files):
                if source.name == file:
                    return source.text
        return self.sources.get(file)

    def show_file_as(self, file: str, shown: str) -> None:
        """Name `file` as `shown` in the error's span (the CLI shows paths as typed); its
        lines stay readable under the new name."""
        span = self.error.span if self.error is not None else None
        if span and span.get("file") == file and self.error is not None:
            self.error.span = {**span, "file": shown}
        self.shown_as[shown] = file

    @property
    def usage(self) -> dict[str, int]:
        """Tokens used by the run's agent calls, summed over their traces."""
        total: dict[str, int] = {}
        for trace in self.traces:
            for key, value in (trace.get("usage") or {}).items():
                total[key] = total.get(key, 0) + int(value)
        return total

    @property
    def cost(self) -> float | None:
        """What the run's calls cost, in the price table's currency; None when none was priced."""
        costs = [t["cost"] for t in self.traces if isinstance(t.get("cost"), int | float)]
        return round(sum(costs), 6) if costs else None

    @property
    def primary(self) -> dict[str, Any] | None:
        """The run's primary artifact (`publish primary`): `{"name", "text"}` or `{"name",
        "json"}`; None when it published none. The sandbox publishes at most one; should
        its events say more, the first counts."""
        for event in self.events:
            data = event.get("data")
            if event.get("type") == "artifact.published" and isinstance(data, dict) and data.get("primary") is True \
                    and isinstance(data.get("name"), str) and ("text" in data or "json" in data):
                return {"name": data["name"], **({"text": str(data["text"])} if "text" in data else {"json": data["json"]})}
        return None

    def to_json(self) -> dict[str, Any]:
        """`flow run --format json`: ok, result or error or what it waits for, and `primary`
        when the run published its primary artifact."""
        primary = self.primary
        extra = {"primary": primary} if primary is not None else {}
        if self.pending:
            return {"ok": None, "status": "waiting", "run": self.run_id, "pending": self.pending, **extra}
        if self.error is None:
            return {"ok": True, "result": self.result, "run": self.run_id, **extra}
        return {"ok": False, "run": self.run_id, "error": self.error_json(), **extra}


def new_run_id() -> str:
    return "r" + secrets.token_hex(6)


async def run_compiled(compiled: Compiled, executor: Executor, context: RunContext | None = None, *,
                       workflow: str | None = None, input: dict[str, Any] | None = None,
                       session_values: dict[str, Any] | None = None) -> RunOutcome:
    """Run a compiled module: its top level, or `workflow` with `input`, with the settings of
    `context` (default: `RunContext()`, no grants). Never raises a FlowError: failures are in
    the outcome, with the events up to the failure (and, with `context.journal_dir`, in
    `<journal_dir>/<run>.jsonl` as they happen). `session_values` are the bindings of a
    session's earlier cells.

    A session passes one cassette object for all its runs; the calls of a run are keyed in
    it by `context.cassette_scope`, by default the run's program and workflow
    (`cassette.source_scope`): an eval runs one workflow for many items, each its own scope
    (runtime/eval), so that items neither share nor replace each other's answers.

    The journal is also the run's checkpoint (checkpoint.py, docs/durability.md): its header
    says what ran, every effect is journaled before the run goes on, and `context.resume`
    (the verified journal of an earlier execution of `context.run_id`) answers the effects
    it holds and appends to it. The `defer` operator stops the run `waiting` (`outcome.pending`)."""
    if compiled.python is None:
        raise ValueError("the module has compile errors; nothing runs")
    context = context if context is not None else RunContext()
    run_id, resume, journal_dir = context.run_id or new_run_id(), context.resume, context.journal_dir
    known = context.sources
    try:
        journal = (Journal(journal_dir, run_id, append=resume is not None, last_mac=resume.last_mac if resume else "")
                   if journal_dir is not None else None)
    except (OSError, RunLocked) as exc:  # LinkRefused included: a planted link is never written through
        return RunOutcome(run_id, error=_journal_refused(exc, journal_dir), compiled=compiled, sources=known)
    checkpoint: RunCheckpoint | None = None
    if journal is not None:
        try:
            if resume is None:
                # Made and written while the sandbox starts the run (`_write_header`), before
                # the journal's first event or effect either way; on the disk with the run's
                # first effect or its end (Journal.record): before its first effect a run has
                # done nothing a resume would have to skip.
                journal.record_first("header", lambda: program_header(compiled.check, workflow, input, session_values,
                                                                      context.operator.policy))
            else:
                journal.record("resumed", {"execution": resume.executions + 1, "at": now_text()})
            checkpoint = RunCheckpoint(journal, resume)
        except (OSError, ValueError) as exc:  # no journal key (a read-only config folder): events only, no resume
            if resume is not None:
                journal.close()
                return RunOutcome(run_id, error=FlowIsolateError(f"the run's journal cannot be sealed: {exc}"),
                                  compiled=compiled, sources=known)
    source = compiled.check.source
    host = HostServices(compiled.check, context.replace(
        run_id=run_id, sinks=(*([journal] if journal is not None else []), *context.sinks),
        cassette_scope=context.cassette_scope or source_scope(source.name, source.text, workflow)), checkpoint)
    if checkpoint is not None:
        checkpoint.on_wait = host.fail
    outcome = RunOutcome(run_id, events=host.events, journal=journal.path if journal is not None else None,
                         traces=host.traces, compiled=compiled, sources=known)
    # `flow cancel` / `%cancel` from any process (durable/cancel.py): seen by a timer, and at
    # each effect boundary (`host.handle`), within `POLL_SECONDS`
    watch = watch_for(journal_dir, run_id) if journal is not None else None
    end_watch = watch.watch(lambda request: host.fail(request.error())) if watch else None
    host.cancel_watch = watch
    if journal is not None:
        asyncio.get_running_loop().call_soon(_write_header, journal, host)
    try:
        with older_objects_frozen(collect_later=True):  # the caller does not wait for the collection
            return await _run(compiled, executor, host, outcome, workflow, input, session_values)
    except asyncio.CancelledError:  # cancelled before the sandbox took it: the journal must not say `completed`
        outcome.error = FlowCancelledError("the run was cancelled")
        raise
    finally:
        if end_watch is not None:
            end_watch()
        outcome.output_bytes = host.output_bytes
        await host.close_agents()  # the run's MCP servers
        host.release()
        if journal is not None:
            request = watch.request if watch is not None else None
            if request is None and outcome.error is not None and outcome.error.code == "cancelled":
                with contextlib.suppress(asyncio.CancelledError):  # the shutdown's own cancel: it ends the wait
                    await ending_after_interrupt(RESTART_SETTLE)
            _record_end(journal, outcome, request)
            journal.close()
        if watch is not None:
            watch.clear()


async def _run(compiled: Compiled, executor: Executor, host: HostServices, outcome: RunOutcome,
               workflow: str | None, input: dict[str, Any] | None, session_values: dict[str, Any] | None) -> RunOutcome:
    run_id = outcome.run_id
    started = time.monotonic()
    try:
        limits = compiled.entry_limits or {}
        if workflow is not None:
            schemas = compiled.check.schema_for(workflow)
            if schemas is None or compiled.check.decls[workflow].kind != "workflow":
                raise WorkflowInputValidationError(f"no workflow `{workflow}` in {compiled.check.source.name}")
            require_valid(schemas["input"], input or {}, WorkflowInputValidationError, f"the input of `{workflow}`")
            ctx = compiled.check.workflows.get(workflow)
            limits = ctx.limits if ctx is not None else limits
        # The host's ceilings, on this side of the trust boundary: the deadline the host
        # enforces is the clamped one, and the sandbox gets them to clamp its step caps.
        limits = host.context.ceilings.clamp(limits)
        host.deadline = started + limits["duration"] / 1000 if limits.get("duration") else None
        payload = {"run": run_id, "module": compiled.python, "filename": "<flow>",
                   "args": {"workflow": workflow, "input": input or {}, "session": session_values or {}},
                   "deadline_ms": limits.get("duration"), "ceilings": host.context.ceilings.for_limits()}
        assert compiled.python is not None
        reply = await executor.run(compiled.python, payload, host)
        if host.failure is not None:  # the host stopped it (an executor that could not be interrupted)
            raise host.failure
        outcome.result = reply.get("result")
        outcome.bindings, outcome.steps = _bindings_and_steps(reply)
        if workflow is not None:
            assert schemas is not None
            require_valid(schemas["output"], outcome.result, OutputValidationError, f"the result of `{workflow}`")
    except FlowError as exc:
        if host.checkpoint is not None and host.checkpoint.waiting:  # `defer`: stopped for an answer, not failed
            outcome.pending = [dict(p) for p in host.checkpoint.waiting]
            return outcome
        if host.failure is not None and exc is not host.failure:  # what the sandbox said as it was stopped
            exc = host.failure
        exc = name_the_ceiling(exc, host.context.ceilings, _asked_limits(compiled), (time.monotonic() - started) * 1000)
        outcome.error = _locate(exc, compiled)
        outcome.bindings, outcome.steps = _bindings_and_steps(exc.dto)
        _record_failure(host, outcome.error, workflow)
    return outcome


def _write_header(journal: Journal, host: HostServices) -> None:
    """The run's header, once its request went to the sandbox (the loop's next turn: the
    pool writes the request without waiting) and before any line of the sandbox is handled
    (a line read waits a turn more). The host's own work for it (the program's digests,
    the canonical text, the seal) then overlaps the sandbox's, not the way to it. A journal
    that cannot take it (a full disk) stops the run."""
    try:
        journal.write_first()
    except (OSError, ValueError) as exc:
        host.fail(FlowIsolateError(f"the run's journal cannot be written: {exc}"))


def _record_end(journal: Journal, outcome: RunOutcome, cancel: CancelRequested | None) -> None:
    """The execution's end in the journal: how it ended, and what it waits for. A run that
    fails while its process shuts down (a kernel restart) was interrupted: it can go on; one
    stopped by a cancel request (`cancel`) was cancelled, by whom the request says."""
    status = "interrupted" if outcome.status == "failed" and is_process_ending() else outcome.status
    end: dict[str, Any] = {"status": status, "at": now_text()}
    if cancel is not None and outcome.error is not None and outcome.error.code == "cancelled":
        end.update(status="cancelled", by=cancel.by, user=cancel.user)
    if outcome.pending:
        end["pending"] = [p["id"] for p in outcome.pending]
    if outcome.error is not None:
        end["error"] = outcome.error.code
    with contextlib.suppress(OSError, ValueError):  # a full disk: the outcome stands; the journal says `interrupted`
        journal.record("end", end, sync=False)  # `journal.close()`, right after, fsyncs a run that synced a record


def _bindings_and_steps(reply: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """What a run's reply (or its error) says it bound and how many steps it took: data from
    the sandbox, so a forged shape counts as nothing rather than failing the host."""
    bindings, steps = reply.get("bindings"), reply.get("steps")
    return (bindings if isinstance(bindings, dict) else {},
            steps if isinstance(steps, int) and not isinstance(steps, bool) and steps >= 0 else 0)


def _record_failure(host: HostServices, error: FlowError, workflow: str | None) -> None:
    """The run's end belongs in its events (and journal) even when the sandbox could not
    say it: input validation, a dead sandbox, an invalid result."""
    data = {"name": workflow or "<cell>", "code": error.code, "message": error.message, "span": error.span}
    top = next((e for e in host.events if e["type"] == "workflow.started" and e["span"]["parent"] is None), None)
    ended = [e for e in host.events if e["type"] in ("workflow.failed", "workflow.completed")
             and top is not None and e["span"]["id"] == top["span"]["id"]]
    if ended and ended[-1]["type"] == "workflow.failed":
        ended[-1]["data"].setdefault("message", error.message)
        return
    host.emit({"type": "workflow.failed", "span": {"id": top["span"]["id"] if top else None, "parent": None},
               "stage": error.stage, "data": data}, last=True)


def _asked_limits(compiled: Compiled) -> dict[str, dict[str, int | float]]:
    """The limits each workflow's source asks for (before the ceilings), by name."""
    asked = {name: dict(ctx.limits) for name, ctx in compiled.check.workflows.items()}
    asked["<cell>"] = dict(compiled.entry_limits or {})
    return asked




def _journal_refused(exc: OSError | RunLocked, journal_dir: Path | str | None) -> FlowError:
    """The run's journal cannot be opened (a link planted at `.flow`, `.flow/runs` or the
    run's file, the folder is not writable, or another process is running it): the run does
    not start, so that nothing happens that its journal would not record."""
    cls = CapabilityViolationError if isinstance(exc, LinkRefused) else FlowIsolateError
    reason = (str(exc) if isinstance(exc, LinkRefused | RunLocked)
              else f"{journal_dir}: {exc.strerror or exc}")
    return cls(f"the run's journal cannot be written, so the run did not start: {reason}",
               details={"journal": str(journal_dir)})


def _locate(error: FlowError, compiled: Compiled) -> FlowError:
    """Give a sandbox error its Flow span, from the generated-code position it carries."""
    if error.span is None and compiled.source_map is not None:
        loc = error.dto.get("loc") or _line_start(compiled.python, error.dto.get("line"))
        span = compiled.source_map.lookup(loc) if isinstance(loc, list) else None
        if span is not None:
            error.span = span_to_json(span)
    return error


def _line_start(python: str | None, line: Any) -> list[int] | None:
    """The position of the first statement on `line` of the generated module (all a dead
    sandbox's report of where it was gives), as a sandbox error's `loc`."""
    if python is None or not isinstance(line, int) or isinstance(line, bool) or line < 1:
        return None
    lines = python.splitlines()
    if line > len(lines):
        return None
    text = lines[line - 1]
    column = len(text) - len(text.lstrip())
    return [line, column, line, column]


__all__ = ["Executor", "RunOutcome", "new_run_id", "run_compiled"]

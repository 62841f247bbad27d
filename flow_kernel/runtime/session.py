"""`flow_kernel.Session`: the Python API that the CLI, the kernel and the magics build on.

A session is what a notebook is: declarations and top-level bindings that accumulate
cell by cell (language.md §2), plus everything a run needs from the host — the sandbox,
the Python tools, the providers' configuration, the operator, the event and trace
sinks, a cassette to record to or replay from, and the history of its runs.

    >>> session = Session(operator="auto-approve")
    >>> @session.tool
    ... def search_kb(query: str, limit: int = 3) -> list[str]:
    ...     return kb.search(query)[:limit]
    >>> outcome = session.run('let n = 40 + 2\\nn')
    >>> outcome.result
    42
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, overload

from flow_kernel.diagnostics import Diagnostic
from flow_kernel.lang.check import check
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.lang.compiler import Compiled, compile_checked
from flow_kernel.lang.session_scope import SessionBinding, SessionScope
from flow_kernel.runtime.compile_cache import CompileCache
from flow_kernel.runtime.config import FlowConfig, find_config, load_config
from flow_kernel.runtime.context import EventSink, RunContext, TraceSink
from flow_kernel.runtime.durable.cassette import CassettePlayer, CassetteRecorder
from flow_kernel.runtime.durable.journal import Checkpoint
from flow_kernel.runtime.policy.ceilings import Ceilings
from flow_kernel.runtime.policy.grants import flag_grants
from flow_kernel.runtime.policy.operator import Operator
from flow_kernel.runtime.policy.trust import Capability, Trust, parse_allow
from flow_kernel.runtime.providers.base import Provider
from flow_kernel.runtime.providers.resilience import Resilience
from flow_kernel.runtime.run import Executor, RunOutcome, run_compiled
from flow_kernel.runtime.tools import ToolFunction, ToolRegistry
from flow_kernel.source import SourceFile

if TYPE_CHECKING:
    from flow_kernel.runtime.eval.runner import EvalReport


class CompileError(Exception):
    """A cell or file with error diagnostics: nothing ran. `diagnostics` holds them all."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        errors = [d for d in diagnostics if d.is_error]
        first = errors[0] if errors else None
        super().__init__(f"{len(errors)} compile error(s)" + (f"; first: {first.code} {first.message}" if first else ""))
        self.diagnostics = diagnostics


@dataclasses.dataclass
class Resumption:
    """A run ready to go on (`Session.prepare_resume`)."""

    run_id: str
    compiled: Compiled
    checkpoint: Checkpoint
    workflow: str | None
    input: dict[str, Any] | None


T = TypeVar("T")
HISTORY = 100  # runs kept in memory with their events (each run's journal keeps it on disk)


class _InContext(Generic[T]):
    """A session attribute that is one field of its `RunContext`: reading it reads the field,
    setting it gives the session a new context with that field changed."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, session: None, owner: type) -> _InContext[T]: ...
    @overload
    def __get__(self, session: Session, owner: type) -> T: ...

    def __get__(self, session: Session | None, owner: type) -> T | _InContext[T]:
        if session is None:
            return self
        value: T = getattr(session.context, self.name)
        return value

    def __set__(self, session: Session, value: T) -> None:
        session.context = session.context.replace(**{self.name: value})


# What the keywords of `Session(...)` and the configuration decide; a `context` given to it
# leaves them as a bare `RunContext()` has them.
_SET_BY_SESSION = ("operator", "allow_run", "config", "journal_dir", "recorder", "player", "run_id", "resume",
                   "cassette_scope", "sources")


class Session:
    context: RunContext  # the settings every run of the session starts from (`for_run` derives each run's)
    operator: _InContext[Operator] = _InContext()
    allow_run: _InContext[frozenset[str]] = _InContext()
    config: _InContext[FlowConfig] = _InContext()
    tools: _InContext[ToolRegistry] = _InContext()
    providers: _InContext[Mapping[str, Provider]] = _InContext()
    resilience: _InContext[Resilience | None] = _InContext()
    ceilings: _InContext[Ceilings] = _InContext()
    journal_dir: _InContext[Path | None] = _InContext()
    sinks: _InContext[Sequence[EventSink]] = _InContext()
    trace_sinks: _InContext[Sequence[TraceSink]] = _InContext()
    debug: _InContext[bool] = _InContext()

    def __init__(self, *, directory: str | Path | None = None, config: FlowConfig | str | Path | None = None,
                 operator: str | Operator | None = None, allow_run: Iterable[str] = (),
                 allow: Iterable[Capability | str] | Trust = (), record: str | Path | None = None,
                 replay: str | Path | None = None, journal_dir: str | Path | None = ".flow/runs",
                 sandbox: bool | Literal["one"] = True, context: RunContext | None = None) -> None:
        """`directory` is where `use` paths, `flow.toml` and the journal are found (default:
        the working directory). `journal_dir=None` keeps no journal. `sandbox=False` runs in
        this interpreter, for benchmarks and tests only: it is not a security boundary;
        `sandbox="one"` keeps no second sandbox warm (one run, as `flow run` makes).

        The other keywords are the person's grants (runtime/policy/trust.py): `allow_run`, an
        `operator` that answers for the person, `config=PATH`, `record`/`replay` paths, and
        `allow` (capabilities, or `FLOW_ALLOW` words such as "path:/data" or "tools:shop.py";
        or a front end's whole `Trust`, to which the other grants are added). What the
        session's content asks for later — `session.record(path)` outside the directory,
        `set_operator("auto-approve")`, `use` of a file outside it — goes through
        `session.trust`, which also honours `FLOW_ALLOW` and `flow trust`. A discovered
        flow.toml applies only in a trusted folder (`config.ignored` otherwise).

        `context` gives the run settings that have no keyword here: `sinks`, `trace_sinks`,
        `providers`, `tools`, `ceilings` (default: the `FLOW_MAX_*` variables), `resilience`,
        `debug` (runtime/context.py). The keywords' settings are not taken from it
        (`ValueError` when it sets one)."""
        base = context if context is not None else RunContext()
        _refuse_keyword_settings(base)
        trust, words = (allow, ()) if isinstance(allow, Trust) else (None, allow)
        self.directory = (Path(directory) if directory is not None else trust.folder if trust is not None
                          else Path.cwd())
        allow_run = list(allow_run)
        grants = self._grants(allow_run, operator, config, record, replay, words)
        if trust is None:
            trust = Trust(self.directory, grants=grants)
        else:
            for cap in grants:
                trust.grant(cap)
        self.trust = trust
        if isinstance(config, FlowConfig):
            flow_config = config
        elif config is not None:
            flow_config = load_config(config)
        else:
            flow_config = find_config(self.directory, trust=self.trust)
        if isinstance(operator, str):
            operator = self.trust.operator(operator)  # granted above; an `answers:` path made absolute
        chosen = _operator(operator if operator is not None else flow_config.operator)
        # Who answers for `interactive` set by name later (`%operator interactive`): the
        # frontend's callback when the operator given here has one.
        self.interactive_callback = chosen.callback
        self.sources: dict[str, str] = {}  # cell name -> text, of the cells that ran (error excerpts)
        self.context = base.replace(
            operator=chosen, config=flow_config, sources=self.sources,
            # FLOW_ALLOW="run:git" allows git like allow_run=["git"] (the person set it)
            allow_run=frozenset(allow_run) | frozenset(flow_config.allow_run) | self.trust.executables(),
            journal_dir=(self.directory / journal_dir) if journal_dir is not None else None)
        if base.resilience is None:
            # Each remote provider's rate limits, breaker and bulkhead, shared by all the session's
            # runs (runtime/providers/resilience.py), configured under [providers.NAME].
            self.resilience = Resilience(lambda name: self.config.provider(name).options)
        self.sandbox = sandbox is not False
        self.spare_sandbox = sandbox is True
        self.scope = SessionScope()
        self.compiled_cells = CompileCache()
        self.values: dict[str, Any] = {}  # top-level bindings as JSON, by name
        self.history: list[RunOutcome] = []  # the last HISTORY runs, newest last
        self._history_bytes = 0  # at least the output bytes of `history` (`_bound_history`)
        self.cells = 0
        self._executor: Executor | None = None
        self.record(record)
        self.replay(replay)

    def _grants(self, allow_run: Iterable[str], operator: str | Operator | None, config: FlowConfig | str | Path | None,
                record: str | Path | None, replay: str | Path | None,
                allow: Iterable[Capability | str]) -> list[Capability]:
        """What the constructor's arguments grant: the person wrote them."""
        grants = flag_grants(self.directory, allow_run=allow_run, paths=(record, replay),
                             operator=operator if isinstance(operator, str) else None,
                             config=config if isinstance(config, (str, Path)) else None)
        for item in allow:
            grants.extend([item] if isinstance(item, Capability) else parse_allow(item, self.directory))
        return grants

    # -- configuration --------------------------------------------------------------------------
    @overload
    def tool(self, fn: ToolFunction, *, name: str | None = None) -> ToolFunction: ...
    @overload
    def tool(self, fn: None = None, *, name: str | None = None) -> Callable[[ToolFunction], ToolFunction]: ...

    def tool(self, fn: ToolFunction | None = None, *, name: str | None = None) -> Any:
        """Register a Python function as the implementation of a Flow `tool` declaration of
        the same name (or `name`); usable as `@session.tool` or `@session.tool(name="x")`."""
        if fn is None:
            return lambda f: self.tools.register(f, name)
        return self.tools.register(fn, name)

    def record(self, path: str | Path | None) -> None:
        """Record every agent answer of the following runs into one cassette (None stops).
        A path outside the session's directory needs a grant (`CapabilityDenied`)."""
        if path is not None:  # granted as it resolves; written as given, so a link there is refused, not followed
            self.trust.path(path, purpose="record a cassette")
        recorder = CassetteRecorder(self.directory / path) if path is not None else None
        self.context = self.context.replace(recorder=recorder, player=None if recorder is not None else self.context.player)

    def replay(self, path: str | Path | None) -> None:
        """Answer agent calls of the following runs from a cassette (None stops).
        A path outside the session's directory needs a grant (`CapabilityDenied`)."""
        player = CassettePlayer(self.trust.path(path, purpose="replay a cassette")) if path is not None else None
        self.context = self.context.replace(player=player, recorder=None if player is not None else self.context.recorder)

    def set_operator(self, operator: str | Operator) -> None:
        """A policy by name (`%operator`) that answers for the person (auto-approve,
        answers:PATH) needs a grant (`CapabilityDenied`); an `Operator` object is the person's."""
        if isinstance(operator, str):
            operator = self.trust.operator(operator, purpose="set by `%operator`")
        chosen = _operator(operator)
        if chosen.policy == "interactive" and chosen.callback is None:
            chosen = dataclasses.replace(chosen, callback=self.interactive_callback)
        self.operator = chosen

    def reset(self) -> None:
        """Forget every declaration and binding (the runs stay in the history and journal)."""
        self.scope.reset()
        self.values.clear()

    # -- compile ------------------------------------------------------------------------------
    def check(self, source: str, name: str | None = None) -> CheckResult:
        """Check a cell against what earlier cells left; nothing is committed."""
        from flow_kernel.files import FileSystemLoader

        loader = FileSystemLoader(str(self.directory), guard=self.trust.use_guard())
        return check(self._source(source, name), session=self.scope, loader=loader, cell=True)

    def compile(self, source: str, name: str | None = None) -> Compiled:
        """Check and compile a cell. A named cell compiled again unchanged, against the same
        declarations, bindings and files, is a lookup (runtime/compile_cache.py)."""
        if name is None:  # "<cell N>": a new name each time, never compiled again
            return compile_checked(self.check(source, name), self.scope)
        from flow_kernel.files import FileSystemLoader

        loader = FileSystemLoader(str(self.directory), guard=self.trust.use_guard())
        return self.compiled_cells.compile(self._source(source, name), self.scope, loader)

    # -- run ------------------------------------------------------------------------------------
    async def run_async(self, source: str | Compiled, *, workflow: str | None = None, input: dict[str, Any] | None = None,
                        name: str | None = None, sinks: Iterable[EventSink] = (),
                        run_id: str | None = None, resume: Checkpoint | None = None) -> RunOutcome:
        """Compile and run a cell (or, with `workflow`, one of the workflows it or an earlier
        cell declared, with `input`). Raises `CompileError` when the cell has errors; a
        runtime failure is in the outcome. Declarations and the bindings the cell made —
        up to a failure — are kept for the next cell. `source` may be what `compile` gave
        (compiled against the session as it is now): a front end that compiled the cell to
        show its diagnostics runs that, and the cell is checked once."""
        compiled = source if isinstance(source, Compiled) else self.compile(source, name)
        if compiled.python is None:
            raise CompileError(compiled.check.diagnostics)
        cell = compiled.check.source
        self.sources[cell.name] = cell.text  # a later cell may call what this one declares
        outcome = await run_compiled(compiled, self._get_executor(), self.context.for_run(run_id=run_id, resume=resume,
                                                                                            sinks=sinks),
                                     workflow=workflow, input=input, session_values=dict(self.values))
        self._commit(compiled.check, outcome)
        self.history.append(outcome)
        del self.history[:-HISTORY]  # a long-lived kernel keeps the recent runs; the journals keep all
        self._bound_history()
        return outcome

    # -- durable runs (runtime/durable/resume.py, docs/durability.md) ------------------------------------
    def prepare_resume(self, run_id: str, *, input: dict[str, Any] | None = None) -> Resumption:
        """Everything `resume_async` checks before it runs (a front end with its own run path,
        the kernel, runs what this gives with `run_async(..., resume=…)`). A file run reads
        its file again; a cell run takes its text from the journal, the declarations it used
        from this session (or, when this session has none of a name, from the journal) and
        the values it used from this session. `ResumeRefused` (with a `code`) when the run cannot
        go on or its source, input, declarations or session values changed, naming what."""
        from flow_kernel.files import FileSystemLoader, SourceReadError
        from flow_kernel.runtime.durable.resume import (
            ResumeRefused,
            check_unchanged,
            load_checkpoint,
            resumable,
        )

        checkpoint = load_checkpoint(self.journal_dir, run_id)
        resumable(checkpoint)
        header = checkpoint.header or {}
        program = header.get("program") or {}
        if program.get("kind") == "file":
            loader = FileSystemLoader(str(self.directory), guard=self.trust.use_guard())
            reason = "it is gone"
            try:
                source = loader(str(program.get("path")), None)
            except SourceReadError as exc:
                source, reason = None, exc.reason
            if source is None:
                raise ResumeRefused("source-changed", f"run {run_id} cannot resume: its program {program.get('path')} "
                                    f"cannot be read now ({reason})", {"changed": [str(program.get("path"))]})
            compiled = compile_checked(check(source, loader=loader))
        else:
            self._declare_journaled(run_id, header)
            compiled = self.compile(str(program.get("text")), str(program.get("name") or "<cell>"))
        if not compiled.ok:
            first = compiled.check.errors[0]
            raise ResumeRefused("source-changed", f"run {run_id} cannot resume: its program does not compile with this "
                                f"session's declarations ({first.code} {first.message})", {"changed": [first.message]})
        check_unchanged(header, compiled.check, input, self.values)
        workflow = header.get("workflow")
        given = input if input is not None else header.get("input")
        return Resumption(run_id, compiled, checkpoint, workflow if isinstance(workflow, str) else None,
                          given if isinstance(given, dict) else None)

    def _declare_journaled(self, run_id: str, header: dict[str, Any]) -> None:
        """Declare in this session, as the run's journal holds them, the declarations its cell
        took from earlier cells and this session has none of (a new kernel): the run resumes
        with what it ran with. One this session declares stays as it is (changed, the resume
        refuses it: `source-changed`); ones that do not check are left out (the cell's own
        compile then names what is missing)."""
        from flow_kernel.runtime.durable.resume import journaled_declarations

        text = journaled_declarations(header, self.scope.decls)
        if not text:
            return
        result = self.check(text, f"<declarations of run {run_id}>")
        if result.errors:
            return
        self.scope.commit(result, bindings=False)
        self.sources[result.source.name] = text

    async def resume_async(self, run_id: str, *, input: dict[str, Any] | None = None,
                           sinks: Iterable[EventSink] = ()) -> RunOutcome:
        """Go on with run `run_id` (waiting or interrupted) from its journal: the program is
        executed again from the start, every effect the journal holds is answered from it
        (no provider, tool, process or person is asked again), and the run goes live at the
        first effect it does not hold; it appends to the same journal (`prepare_resume` says
        what is checked first)."""
        ready = self.prepare_resume(run_id, input=input)
        return await self.run_async(ready.compiled, workflow=ready.workflow, input=ready.input, sinks=sinks,
                                    run_id=run_id, resume=ready.checkpoint)

    def resume(self, run_id: str, *, input: dict[str, Any] | None = None) -> RunOutcome:
        """`resume_async` for code that has no event loop running (scripts, tests)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._resume_then_close(run_id, input))
        raise RuntimeError("an event loop is running here: use `await session.resume_async(...)`")

    async def _resume_then_close(self, run_id: str, input: dict[str, Any] | None) -> RunOutcome:
        try:
            return await self.resume_async(run_id, input=input)
        finally:
            await self.aclose()

    def answer(self, run_id: str, pending: str, value: Any, *, by: str = "api") -> dict[str, Any]:
        """Answer a waiting run's pending request (then `resume` goes on); `ResumeRefused`
        for an unknown or ended run, an unknown request, a wrong kind of value, a second answer."""
        from flow_kernel.runtime.durable.resume import record_answer

        return record_answer(self.journal_dir, run_id, pending, value, by)

    @property
    def cost(self) -> float | None:
        """What the session's runs (those in its history) cost, in the price table's currency;
        None when no call was priced."""
        costs = [o.cost for o in self.history if o.cost is not None]
        return round(sum(costs), 6) if costs else None

    def _bound_history(self) -> None:
        """Keep at most twice the output ceiling of events in memory (at least the newest run):
        a kernel after many floods holds ~128 MiB of them, not 100 x 64 MiB. Older runs
        are in their journals (`%events` reads them there). Called once per run appended:
        the history is walked only when the bytes of the runs appended since the last walk
        and of what it kept (a bound: runs dropped by count are still in it) pass the budget."""
        budget = 2 * self.ceilings.output_bytes
        if self.history:
            self._history_bytes += self.history[-1].output_bytes
        if self._history_bytes <= budget:  # all are within the budget: the walk would keep them all
            return
        total, kept = 0, 0
        for outcome in reversed(self.history):
            if total + outcome.output_bytes > budget and kept:
                break
            total += outcome.output_bytes
            kept += 1
        del self.history[:-kept]
        self._history_bytes = total

    def run(self, source: str, *, workflow: str | None = None, input: dict[str, Any] | None = None,
            name: str | None = None) -> RunOutcome:
        """`run_async` for code that has no event loop running (scripts, tests)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._run_then_close(source, workflow, input, name))
        raise RuntimeError("an event loop is running here: use `await session.run_async(...)`")

    async def _run_then_close(self, source: str, workflow: str | None, input: dict[str, Any] | None,
                              name: str | None) -> RunOutcome:
        # asyncio.run gives each call a new loop; the sandbox's process belongs to this one.
        try:
            return await self.run_async(source, workflow=workflow, input=input, name=name)
        finally:
            await self.aclose()

    # -- eval and batch (runtime/eval, docs/eval.md) ----------------------------------------------
    async def eval_async(self, workflow: str, data: str | Path, **options: Any) -> EvalReport:
        """Run `workflow` (declared by an earlier cell, or in `program`) over every case of
        `data` (.jsonl/.csv). `options` are those of `EvalOptions` (runtime/eval/api.py):
        `scorers` ("exact", "field:a.b", "workflow:NAME", "judge:AGENT", ...; none: a batch,
        or, given `default_scorer`, scored by it when the data has `expected` and a usage
        error when it has not), `program`, `epochs`, `concurrency`, `executor` ("local" or
        "ray", with `ray_address` and `workers`), `out` and `resume` (a results file),
        `on_result`. Returns an `EvalReport` (its summary, its items; a notebook shows it as
        a table). `EvalUsageError` for what is wrong before anything runs (an unknown option
        too); a failing item is a failure in the report, never an exception."""
        from flow_kernel.runtime.eval.api import EvalCompileError, EvalOptions, evaluate

        try:
            return await evaluate(self, workflow, data, EvalOptions.of(options))
        except EvalCompileError as exc:
            raise CompileError(exc.diagnostics) from None

    def eval(self, workflow: str, data: str | Path, **options: Any) -> EvalReport:
        """`eval_async` for code that has no event loop running (scripts, tests)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._eval_then_close(workflow, data, options))
        raise RuntimeError("an event loop is running here: use `await session.eval_async(...)`")

    async def _eval_then_close(self, workflow: str, data: str | Path, options: dict[str, Any]) -> EvalReport:
        try:
            return await self.eval_async(workflow, data, **options)
        finally:
            await self.aclose()

    def _commit(self, result: CheckResult, outcome: RunOutcome) -> None:
        self.scope.commit(result, bindings=False)
        for binding_name, value in outcome.bindings.items():
            binding = result.bindings.get(binding_name)
            if binding is not None:  # made by this cell
                self.scope.bindings[binding_name] = SessionBinding(binding.type, binding.mutable)
                self.values[binding_name] = value
            elif binding_name in self.scope.bindings:  # an earlier cell's `var`, assigned here
                self.values[binding_name] = value

    def _source(self, text: str, name: str | None) -> SourceFile:
        self.cells += 1
        return SourceFile(name or f"<cell {self.cells}>", text)

    def _get_executor(self) -> Executor:
        if self._executor is None:
            if self.sandbox:
                from flow_kernel.runtime.executors import SandboxExecutor

                self._executor = SandboxExecutor(max_processes=self.ceilings.sandboxes,
                                                 warm=1 if self.spare_sandbox else 0)
            else:
                from flow_kernel.sandbox.inprocess import InProcessExecutor

                self._executor = InProcessExecutor()
        return self._executor

    async def warm_up(self) -> None:
        """Start a sandbox now (in the background of a kernel's start), so that the first
        cell does not wait for one."""
        executor = self._get_executor()
        pool = getattr(executor, "pool", None)
        if pool is not None:
            await pool.prestart()

    def sandbox_pids(self) -> list[int]:
        """The process ids of this session's sandboxes (running ones first); [] in-process."""
        pool = getattr(self._executor, "pool", None)
        return pool.pids() if pool is not None else []

    async def aclose(self) -> None:
        """Stop the sandbox processes (a later run starts new ones)."""
        executor, self._executor = self._executor, None
        close = getattr(executor, "close", None)
        if close is not None:
            await close()

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _refuse_keyword_settings(context: RunContext) -> None:
    """A context given to `Session(...)` must leave what its keywords decide as a bare one has it."""
    bare = RunContext(tools=context.tools, ceilings=context.ceilings)
    given = [name for name in _SET_BY_SESSION if getattr(context, name) != getattr(bare, name)]
    if given:
        raise ValueError(f"Session(context=...) sets {', '.join(given)}: a session takes these from its own keywords "
                         "(operator, allow_run, config, journal_dir, record, replay) or per run (run_id, resume)")


def _operator(value: str | Operator | None) -> Operator:
    if isinstance(value, Operator):
        return value
    if value is None:
        return Operator.default()
    return Operator.parse(value)


__all__ = ["CompileError", "Session"]

"""Line magics at the start of a Flow cell (runtime.md §8).

`plan_cell` peels `%name args` lines off the top of a cell, applies each to the
session, and says what to do with the rest: run it, only check it, or show its
generated Python. A bad magic raises `MagicError` with a message that says what
would have been right; nothing of the cell runs then.

Capabilities come from the person, never from the notebook (docs/security.md): a
magic that would grant one — `%allow run`, `%tools`, `%operator auto-approve` and
`answers:`, and `%record`/`%replay`/`%load`/`answers:` of a path outside the
notebook's folder — only *asks* for it. Planning is two-phase: `parse_cell` reads the
magic lines and `ParsedCell.needs` says which capabilities they ask for (pure: nothing
applied, nothing read but the file system's idea of where a path points), the caller
gets the missing ones from the person (the kernel's prompt) or refuses the cell, and
only then `apply_cell` applies the magics — each still calling `session.trust.require`,
so a caller that skipped the first phase is refused too. A `%tools` file always asks,
even beside the notebook: it is Python that runs on the host (a trusted folder grants
it, like everything the folder's content asks for).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flow_kernel.frontend.port import Bundle
from flow_kernel.lang import types as T
from flow_kernel.lang.session_scope import SessionBinding
from flow_kernel.markup import escape
from flow_kernel.runtime.policy.operator import POLICIES as OPERATOR_POLICIES
from flow_kernel.runtime.policy.processes import parse_entry
from flow_kernel.runtime.policy.trust import (
    Capability,
    Trust,
    is_inside,
    operator_capability,
    resolve_path,
)
from flow_kernel.runtime.providers.table import is_model, model_forms, model_names
from flow_kernel.runtime.session import Session
from flow_kernel.short_text import shorten

if TYPE_CHECKING:
    from flow_kernel.frontend.cell import CellRunner, Prelude
    from flow_kernel.frontend.port import CellPort



class MagicError(Exception):
    """A magic with bad arguments, or an unknown one."""


@dataclass
class CellPlan:
    code: str = ""  # the Flow code after the magics
    name: str | None = None  # the source name for spans (`%load` gives the file's)
    mode: str = "run"  # "run" | "check" | "python"
    outputs: list[Bundle] = field(default_factory=list)


Needs = Callable[[Session, str], list[Capability]]
# A runner magic's handler: (the runner, the cell's port, the arguments, the cell's prelude).
RunnerMagic = Callable[["CellRunner", "CellPort", str, "Prelude"], Awaitable[None]]


def _no_needs(session: Session, args: str) -> list[Capability]:
    return []


@dataclass(frozen=True)
class Magic:
    name: str
    usage: str
    help: str
    apply: Callable[[Session, str, CellPlan], None]
    # The capabilities the magic asks for with these arguments (pure; a MagicError for
    # arguments that are wrong whatever is granted, so nobody is asked about a typo).
    needs: Needs = _no_needs
    # What completion offers after `%name ` (kernel/assist.py): fixed words, and/or
    # `offers` = "declarations" (the session's) or "diagnostic codes".
    choices: tuple[str, ...] = ()
    offers: str = ""
    # A magic of the cell runner itself (frontend/run_magics.py): it acts on the runner and
    # its front end (a background run, a prompt, a display), not only on the session; the
    # runner takes it off the top of the cell before `parse_cell`, and `apply` refuses it
    # where no runner is (`plan_cell`).
    handle: RunnerMagic | None = None


# The one registry of line magics: `parse_cell`, `%lsmagic`, completion (kernel/assist.py)
# and the cell runner read it. A new magic is one `@magic(...)` function here (one that acts
# on the runner or its front end: `runner_magic` in frontend/run_magics.py).
MAGICS: dict[str, Magic] = {}


def magic(name: str, usage: str, help_text: str, needs: Needs = _no_needs, *, choices: tuple[str, ...] = (),
          offers: str = "") -> Callable[
        [Callable[[Session, str, CellPlan], None]], Callable[[Session, str, CellPlan], None]]:
    def register(fn: Callable[[Session, str, CellPlan], None]) -> Callable[[Session, str, CellPlan], None]:
        MAGICS[name] = Magic(name, usage, help_text, fn, needs, choices, offers)
        return fn
    return register


@dataclass
class ParsedCell:
    """A cell's leading magic lines, read but not applied, and the rest of the cell."""
    magics: list[tuple[Magic, str]]  # each magic with its (stripped) arguments
    lines: int  # how many lines the magics take
    rest: str

    def needs(self, session: Session) -> list[Capability]:
        """Every capability the cell's magics ask for, each once, in order."""
        wanted: list[Capability] = []
        for entry, args in self.magics:
            for capability in entry.needs(session, args):
                if capability not in wanted:
                    wanted.append(capability)
        return wanted

    def missing(self, session: Session) -> list[Capability]:
        """What the person has not granted (yet) of `needs`."""
        return [c for c in self.needs(session) if not session.trust.granted(c)]


def parse_cell(text: str) -> ParsedCell:
    """Read the cell's leading magics without applying them (an unknown one is an error)."""
    lines = text.split("\n")
    magics: list[tuple[Magic, str]] = []
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        if not line.startswith("%"):
            break
        name, _, args = line[1:].partition(" ")
        entry = MAGICS.get(name)
        if entry is None:
            known = ", ".join(f"%{m}" for m in sorted(MAGICS))
            raise MagicError(f"unknown magic `%{name}` (line {index + 1}); the magics are {known} — see %lsmagic")
        magics.append((entry, args.strip()))
        index += 1
    return ParsedCell(magics, index, "\n".join(lines[index:]))


def apply_cell(parsed: ParsedCell, session: Session) -> CellPlan:
    """Apply the magics to `session`; the rest of the cell is `plan.code`. Every capability
    they ask for must be granted already (CapabilityDenied, before any magic applies)."""
    for capability in parsed.needs(session):
        session.trust.require(capability)
    plan = CellPlan()
    for entry, args in parsed.magics:
        entry.apply(session, args, plan)
    if plan.code and parsed.rest.strip():
        raise MagicError("`%load` replaces the cell's code: put nothing after it")
    if not plan.code:
        # Keep the line numbers of the Flow code as they are in the cell.
        plan.code = "\n" * parsed.lines + parsed.rest if parsed.rest.strip() else ""
    return plan


def plan_cell(text: str, session: Session) -> CellPlan:
    """Both phases at once, for callers that cannot ask the person: a capability not
    granted is refused (CapabilityDenied, with how to grant it) and nothing applies."""
    return apply_cell(parse_cell(text), session)


def notebook_trust(folder: Path) -> Trust:
    """The grants of a notebook's session (the Flow kernel's, `%%flow`'s). "Allow for this
    notebook" is kept under the notebook's path when the server says which (JupyterLab and
    Notebook set JPY_SESSION_NAME), else under its folder (nbclient, jupyter_client)."""
    document = os.environ.get("JPY_SESSION_NAME") or None
    return Trust(folder, document=document if document else folder, asker="This notebook")


def path_needs(session: Session, raw: str) -> list[Capability]:
    """A path outside the notebook's folder asks for a `path` capability; inside, nothing.
    Symlinks are followed to decide (a link out of the folder points outside)."""
    resolved = resolve_path(raw, session.directory)
    if is_inside(resolved, session.trust.folder):
        return []
    return [Capability("path", str(resolved))]


def operator_needs(session: Session, policy: str) -> list[Capability]:
    """Policies that answer for the person ask for an `operator` capability (and an
    `answers:` file outside the folder for its path too)."""
    capability = operator_capability(policy, session.directory)
    if capability is None:
        return []
    if policy.startswith("answers:"):
        return [capability, *path_needs(session, policy[len("answers:"):])]
    return [capability]


def text_output(text: str) -> Bundle:
    return {"text/plain": text, "text/html": f"<pre>{escape(text)}</pre>"}


def _words(args: str, name: str) -> list[str]:
    try:
        return shlex.split(args)
    except ValueError as exc:
        raise MagicError(f"%{name}: {exc}") from None


# -- configuration ---------------------------------------------------------------------------
@magic("provider", f"%provider [{' | '.join(model_forms())}]",
       'what `model: "default"` means in this session; no argument shows it', choices=model_names())
def _provider(session: Session, args: str, plan: CellPlan) -> None:
    if not args:
        plan.outputs.append(text_output(f"default model: {session.config.default_model or '(not set)'}"))
        return
    if not is_model(args):  # the provider table (runtime/providers/table.py)
        *others, last = model_forms()
        raise MagicError(f"%provider: {args!r} is not a model: use {', '.join(others)} or {last}")
    session.config = dataclasses.replace(session.config, default_model=args)
    plan.outputs.append(text_output(f"default model: {args}"))


@magic("operator", "%operator interactive | auto-approve | auto-deny | answers:PATH | none",
       "who answers approve, ask and approval-gated tools; no argument shows it",
       needs=lambda session, args: operator_needs(session, args), choices=(*OPERATOR_POLICIES, "answers:"))
def _operator(session: Session, args: str, plan: CellPlan) -> None:
    if not args:
        plan.outputs.append(text_output(f"operator: {session.operator.policy}"))
        return
    for capability in operator_needs(session, args):
        session.trust.require(capability)
    policy = args
    if policy.startswith("answers:"):
        policy = "answers:" + str(resolve_path(policy[len("answers:"):], session.directory))
    try:
        session.set_operator(policy)
    except ValueError as exc:
        raise MagicError(f"%operator: {exc}") from None
    plan.outputs.append(text_output(f"operator: {args}"))


def _cassette_needs(session: Session, args: str) -> list[Capability]:
    return path_needs(session, args) if args and args != "off" else []


def _cassette_magic(name: str, help_text: str, shown: Callable[[str], str]) -> None:
    """`%record` / `%replay` PATH | off: `session.record` / `session.replay` of the path, granted
    first; a link at the path, or a file that is not a cassette, is a MagicError and leaves
    the session as it was."""
    @magic(name, f"%{name} PATH | off", help_text, needs=_cassette_needs, choices=("off",))
    def apply(session: Session, args: str, plan: CellPlan) -> None:
        if not args:
            raise MagicError(f"%{name} needs a cassette path (or `off`)")
        for capability in _cassette_needs(session, args):
            session.trust.require(capability)
        try:
            getattr(session, name)(None if args == "off" else args)
        except ValueError as exc:
            raise MagicError(f"%{name}: {exc}") from None
        plan.outputs.append(text_output(shown(args)))


_cassette_magic("record", "record every agent answer of the following cells to a cassette",
                lambda args: "recording off" if args == "off" else f"recording agent answers to {args}")
_cassette_magic("replay", "answer agent calls of the following cells from a cassette",
                lambda args: "replay off" if args == "off" else f"replaying agent answers from {args}")


def _allow_needs(session: Session, args: str) -> list[Capability]:
    words = _words(args, "allow")
    if not words:
        return []
    if words[0] != "run" or len(words) < 2:
        raise MagicError("usage: %allow run EXE…")
    for entry in words[1:]:  # an executable, or one with pinned arguments ('git log *')
        try:
            parse_entry(entry)
        except ValueError as exc:
            raise MagicError(f"%allow run: {exc}") from None
    return [Capability("run", entry) for entry in words[1:]]


@magic("allow", "%allow run EXE…", "let `run` start these executables (no shell); no argument lists them",
       needs=_allow_needs, choices=("run",))
def _allow(session: Session, args: str, plan: CellPlan) -> None:
    wanted = _allow_needs(session, args)
    if not wanted:
        plan.outputs.append(text_output("run may start: " + (", ".join(sorted(session.allow_run)) or "nothing")))
        return
    for capability in wanted:
        session.trust.require(capability)
        session.allow_run |= {capability.target}
    plan.outputs.append(text_output("run may start: " + ", ".join(sorted(session.allow_run))))


def _tools_file(session: Session, args: str) -> tuple[str, Path]:
    words = _words(args, "tools")
    if len(words) != 1 or not words[0].endswith(".py"):
        raise MagicError("usage: %tools FILE.py")
    path = resolve_path(words[0], session.directory)
    if not path.is_file():
        raise MagicError(f"%tools: no file {words[0]} beside the notebook")
    return words[0], path


@magic("tools", "%tools FILE.py", "run a Python file on the host; its @flow_tool functions implement `tool` declarations",
       needs=lambda session, args: [Capability("tools", str(_tools_file(session, args)[1]))])
def _tools(session: Session, args: str, plan: CellPlan) -> None:
    """Tools are host code, so they come from a Python file the user wrote, run in the
    kernel's process (never in the sandbox); `@flow_tool` marks which functions count.
    The file asks for a `tools` capability even beside the notebook: it runs on the host."""
    import runpy
    import traceback

    from flow_kernel.runtime.tools import TOOLS, flow_tool

    name, path = _tools_file(session, args)
    session.trust.require(Capability("tools", str(path)))
    words = [name]
    before = dict(TOOLS.functions)
    try:
        runpy.run_path(str(path), init_globals={"flow_tool": flow_tool}, run_name=f"flow_tools_{path.stem}")
    except Exception as exc:  # the user's file: say where it failed, in their code
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        raise MagicError(f"%tools: {words[0]} failed at line {frame.lineno}: {type(exc).__name__}: {exc}") from None
    found = sorted(name for name, fn in TOOLS.functions.items() if before.get(name) is not fn)
    if not found:
        raise MagicError(f"%tools: {words[0]} registers no tool: decorate the functions with @flow_tool")
    for name in found:
        session.tools.register(TOOLS.functions[name], name)
    plan.outputs.append(text_output(f"tools from {words[0]}: {', '.join(found)}"))


@magic("mcp", "%mcp [SERVER]", "start the MCP servers of the configuration ([mcp.NAME] in flow.toml) and list "
       "their tools as Flow declarations")
def _mcp(session: Session, args: str, plan: CellPlan) -> None:
    """The servers are the configuration's, which applies only when the person granted it
    (config.py), so listing them needs no capability of its own."""
    from flow_kernel.runtime.remote.mcp import server_report

    servers = session.config.mcp
    wanted = _words(args, "mcp")
    if not servers:
        hint = session.config.ignored_warning() or "declare one as [mcp.NAME] in flow.toml"
        raise MagicError(f"%mcp: no MCP server is declared in the configuration that applies ({hint})")
    unknown = [w for w in wanted if w not in servers]
    if unknown:
        raise MagicError(f"%mcp: no MCP server `{unknown[0]}` (declared: {', '.join(sorted(servers))})")
    folder = session.config.path.parent if session.config.path is not None else None
    lines: list[str] = []
    for name, started, detail, tools in server_report(servers, folder, wanted or None):
        lines.append(f"{name}: {detail}" if started else f"{name}: not started: {detail}")
        lines += [f"  {t}" for t in tools]
    plan.outputs.append(text_output("\n".join(lines)))


@magic("input", "%input NAME = JSON", "bind a session value from JSON, as if an earlier cell had `let` it")
def _input(session: Session, args: str, plan: CellPlan) -> None:
    name, sep, raw = args.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier() or name.startswith("__"):
        raise MagicError("usage: %input NAME = JSON")
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise MagicError(f"%input {name}: not JSON: {exc}") from None
    session.scope.bindings[name] = SessionBinding(type_of_json(value), False)
    session.values[name] = value
    plan.outputs.append(text_output(f"{name}: {T.display(session.scope.bindings[name].type)}"))


def type_of_json(value: Any) -> T.Type:
    """The static type a JSON value gets as a session binding."""
    if isinstance(value, bool):
        return T.BOOL
    if isinstance(value, int):
        return T.INT
    if isinstance(value, float):
        return T.NUMBER
    if isinstance(value, str):
        return T.STRING
    if value is None:
        return T.NULL
    if isinstance(value, list):
        items = [T.widen(type_of_json(v)) for v in value]
        if T.NUMBER in items:  # ints among numbers are numbers
            items = [T.NUMBER if t == T.INT else t for t in items]
        return T.ArrayType(T.union(items) if items else T.ANY)
    if isinstance(value, dict):
        return T.object_type({str(k): type_of_json(v) for k, v in value.items()})
    return T.ANY


# -- modes ----------------------------------------------------------------------------------
@magic("check", "%check", "check the rest of the cell and show its diagnostics; run nothing")
def _check(session: Session, args: str, plan: CellPlan) -> None:
    plan.mode = "check"


@magic("python", "%python", "show the restricted Python the rest of the cell compiles to; run nothing")
def _python(session: Session, args: str, plan: CellPlan) -> None:
    plan.mode = "python"


def _load_needs(session: Session, args: str) -> list[Capability]:
    words = _words(args, "load")
    if len(words) != 1:
        raise MagicError("usage: %load FILE.flow")
    return path_needs(session, words[0])


@magic("load", "%load FILE.flow", "run a Flow file as this cell (its declarations and bindings stay)",
       needs=_load_needs)
def _load(session: Session, args: str, plan: CellPlan) -> None:
    for capability in _load_needs(session, args):
        session.trust.require(capability)
    words = _words(args, "load")
    path = session.directory / words[0]
    try:
        plan.code = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MagicError(f"%load: cannot read {words[0]}: {exc.strerror}") from None
    plan.name = str(path)


# -- looking around ------------------------------------------------------------------------------
@magic("schema", "%schema NAME", "the JSON Schema of a type, or of a workflow's, tool's or agent's input/output",
       offers="declarations")
def _schema(session: Session, args: str, plan: CellPlan) -> None:
    if not args.isidentifier():
        raise MagicError("usage: %schema NAME")
    result = session.check(args)  # the name as an expression statement: resolves it against the session
    schema = result.schema_for(args)
    if schema is None:
        declared = ", ".join(sorted(session.scope.decls)) or "nothing yet"
        raise MagicError(f"%schema: no declaration `{args}` in this session (declared: {declared})")
    text = json.dumps(schema, indent=2, ensure_ascii=False)
    plan.outputs.append({"text/plain": text, "application/json": schema})


@magic("who", "%who", "the session's declarations and top-level bindings")
def _who(session: Session, args: str, plan: CellPlan) -> None:
    lines: list[str] = []
    for name, decl in sorted(session.scope.decls.items()):
        kind = type(decl).__name__.removesuffix("Decl").lower()
        lines.append(f"{kind:<9} {name}")
    for name, binding in sorted(session.scope.bindings.items()):
        keyword = "var" if binding.mutable else "let"
        lines.append(f"{keyword:<9} {name}: {T.display(binding.type)} = {shorten(session.values.get(name), 80, as_json=True)}")
    plan.outputs.append(text_output("\n".join(lines) or "the session is empty"))


@magic("runs", "%runs [--waiting]", "the runs journaled in .flow/runs with their status (completed, failed, cancelled, "
       "waiting, interrupted, running), and what each waiting run asks")
def _runs(session: Session, args: str, plan: CellPlan) -> None:
    from flow_kernel.runtime.durable.resume import list_runs, runs_table

    if args.strip() not in ("", "--waiting"):
        raise MagicError("usage: %runs [--waiting]")
    infos = list_runs(session.journal_dir, waiting=args.strip() == "--waiting")
    plan.outputs.append(text_output(runs_table(infos) or ("no waiting runs" if args.strip() else "no runs yet")))


# What `last` may name, by magic (default: a waiting run)
LAST_STATUSES = {"%resume": ("waiting", "interrupted"), "%cancel": ("running", "waiting", "interrupted")}


def waiting_run(session: Session, run: str, magic: str) -> str:
    """RUN as typed, or for `last` the newest run of this kernel that stopped waiting and has
    not gone on since: a notebook can answer and resume the run a cell above left waiting
    without writing its (random) id into a cell. When no run of this kernel ever waited (a
    new kernel, after a restart), the newest run of the folder's journals that is waiting
    (`%resume`: or interrupted). For `%cancel`, always the newest of the folder's runs that
    is running, waiting or interrupted: whichever kernel or terminal runs it."""
    from flow_kernel.runtime.durable.resume import last_run

    if run != "last":
        return run
    seen: set[str] = set()
    for outcome in reversed(session.history if magic != "%cancel" else []):
        if outcome.run_id not in seen and outcome.pending:
            return outcome.run_id
        seen.add(outcome.run_id)
    if magic == "%cancel" or not any(outcome.pending for outcome in session.history):  # none ever waited here
        found = last_run(session.journal_dir, LAST_STATUSES.get(magic, ("waiting",)))
        if found is not None:
            return found
    if magic == "%cancel":
        raise MagicError("%cancel: no run here is running, waiting or interrupted; name the run: %cancel RUN (see %runs)")
    raise MagicError(f"{magic}: no run of this kernel is waiting; name the run: {magic} RUN (see %runs --waiting)")


@magic("answer", "%answer RUN|last PENDING_ID VALUE", "answer a waiting run's approval (true/false) or question (text); "
       "then %resume RUN goes on (`last`: the run this kernel last left waiting)")
def _answer(session: Session, args: str, plan: CellPlan) -> None:
    from flow_kernel.runtime.durable.resume import ResumeRefused

    words = args.split(maxsplit=2)
    if len(words) != 3:
        raise MagicError("usage: %answer RUN PENDING_ID VALUE (the ids are in %runs --waiting)")
    run, pending, text = words
    run = waiting_run(session, run, "%answer")
    try:
        value: Any = json.loads(text)
    except ValueError:
        value = text  # a question's answer as typed
    try:
        session.answer(run, pending, value, by="%answer")
    except ResumeRefused as exc:
        raise MagicError(f"%answer: error[{exc.code}]: {exc.message}") from None
    plan.outputs.append(text_output(f"answered {pending} of run {run}: {json.dumps(value)}; %resume {run} goes on"))


@magic("events", "%events RUN", "the events of a run, in canonical order")
def _events(session: Session, args: str, plan: CellPlan) -> None:
    from flow_kernel.runtime.durable.journal import read_journal
    from flow_kernel.runtime.events.vocabulary import canonical

    run = args.strip()
    if not run:
        raise MagicError("usage: %events RUN (the run ids are in %runs)")
    events: list[dict[str, Any]] | None = next((o.events for o in session.history if o.run_id == run), None)
    if events is None and session.journal_dir is not None:
        path = session.journal_dir / f"{Path(run).name}.jsonl"
        if path.is_file() and not path.is_symlink():  # a link is no journal: read_journal refuses it
            events = read_journal(path)
    if events is None:
        raise MagicError(f"%events: no run `{run}` (see %runs)")
    lines = [f"{e['seq']:>4} {e['type']:<20} {e.get('stage') or '':<12} {shorten(e.get('data'), 80, as_json=True)}"
             for e in canonical(events)]
    plan.outputs.append(text_output("\n".join(lines)))


@magic("explain", "%explain CODE", "the explanation of a diagnostic code, with an example and its fix",
       offers="diagnostic codes")
def _explain(session: Session, args: str, plan: CellPlan) -> None:
    from flow_kernel.diagnostics.explain import explain

    text = explain(args.strip().upper())
    if text is None:
        raise MagicError(f"%explain: {args!r} is not a diagnostic code (they look like F3001)")
    plan.outputs.append(text_output(text))


@magic("reset", "%reset", "forget every declaration and binding of the session")
def _reset(session: Session, args: str, plan: CellPlan) -> None:
    session.reset()
    plan.outputs.append(text_output("the session is empty"))


@magic("lsmagic", "%lsmagic", "this list")
def _lsmagic(session: Session, args: str, plan: CellPlan) -> None:
    width = max(len(m.usage) for m in MAGICS.values())
    plan.outputs.append(text_output("\n".join(f"{m.usage:<{width}}  {m.help}" for _, m in sorted(MAGICS.items()))))

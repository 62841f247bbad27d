"""What a person sees of an input, as plain JSON: every diagnostic in full (code,
severity, message, file, span offsets and line/columns, related notes, hints), the text
the CLI prints for them (`render_text`, no colour), and whether each cell checked clean;
for a run, the result, the events in canonical order (`events.comparable`: no times or
durations) and the error (code, message, stage, Flow span, details).

Imports flow_kernel from wherever `sys.path` finds it: the regeneration script points it
at another checkout."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from flow_kernel.diagnostics.model import Diagnostic
from flow_kernel.diagnostics.render import render_text
from flow_kernel.lang import SessionScope, check
from flow_kernel.source import SourceFile, Span

RUN_ID = "rgolden"


def _span(span: Span) -> dict[str, Any]:
    start, end = span.start_pos, span.end_pos
    return {"file": span.source.name, "start": span.start, "end": span.end,
            "from": [start.line, start.column], "to": [end.line, end.column]}


def diagnostic_record(d: Diagnostic) -> dict[str, Any]:
    return {"code": d.code, "severity": d.severity.value, "message": d.message, "span": _span(d.span),
            "related": [{"message": r.message, "span": _span(r.span)} for r in d.related],
            "hints": list(d.hints)}


def check_input(item: dict[str, Any]) -> list[dict[str, Any]]:
    """Each cell's diagnostics, rendered text and whether it checked clean."""
    files: dict[str, str] = item.get("files", {})

    def loader(path: str, importer: str | None) -> SourceFile | None:
        name = path.removeprefix("./")
        return SourceFile(name, files[name]) if name in files else None

    cells = item["cells"]
    session = SessionScope() if len(cells) > 1 else None
    out = []
    for name, text in cells:
        if session is None:
            result = check(SourceFile(name, text), loader=loader)
        else:
            result = check(SourceFile(name, text), session=session, loader=loader)
        out.append({"ok": result.ok, "diagnostics": [diagnostic_record(d) for d in result.diagnostics],
                    "text": render_text(result.diagnostics, color=False)})
        if session is not None and result.ok:
            session.commit(result)
    return out


def generate_all(inputs: dict[str, dict[str, Any]]) -> dict[str, list[str | None]]:
    """The Python generated for each cell that checks clean (None for one that does not),
    cells of one input in one session as `check_all` takes them."""
    from flow_kernel.lang.compiler import compile_checked

    out: dict[str, list[str | None]] = {}
    for key, item in inputs.items():
        files: dict[str, str] = item.get("files", {})

        def loader(path: str, importer: str | None, files: dict[str, str] = files) -> SourceFile | None:
            name = path.removeprefix("./")
            return SourceFile(name, files[name]) if name in files else None

        session = SessionScope() if len(item["cells"]) > 1 else None
        texts: list[str | None] = []
        for name, text in item["cells"]:
            result = check(SourceFile(name, text), session=session, loader=loader) if session is not None \
                else check(SourceFile(name, text), loader=loader)
            texts.append(compile_checked(result, session).python)
            if session is not None and result.ok:
                session.commit(result)
        out[key] = texts
    return out


def _plain(value: Any, root: str) -> Any:
    """JSON-safe, with the checkout's path (it differs between checkouts) replaced."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)
    plain: Any = json.loads(text.replace(root, "<root>"))
    return plain


def outcome_record(outcome: Any, root: str) -> dict[str, Any]:
    from flow_kernel.runtime.events.vocabulary import comparable

    events = comparable(outcome.events)
    for event in events:
        event.pop("run", None)  # a session's run ids are random
    plain: dict[str, Any] = _plain({"status": outcome.status, "result": outcome.result, "error": outcome.error_json(),
                   "events": events}, root)
    return plain


async def run_input(item: dict[str, Any], executor: Any, directory: Path) -> list[dict[str, Any]]:
    """Run each cell in order in one Session (in `directory`, no journal) on `executor`:
    each cell's outcome, or its diagnostics when it does not compile."""
    from flow_kernel.runtime.session import CompileError, Session

    session = Session(directory=directory, journal_dir=None, sandbox="one")
    session._executor = executor  # one sandbox for the whole corpus (the session never closes it)
    out: list[dict[str, Any]] = []
    for name, text in item["cells"]:
        try:
            outcome = await session.run_async(text, name=name, run_id=RUN_ID)
        except CompileError as exc:
            out.append({"compile_error": [diagnostic_record(d) for d in exc.diagnostics]})
            continue
        out.append(outcome_record(outcome, str(directory.parent)))
    return out


def run_all(inputs: dict[str, dict[str, Any]], directory: Path) -> dict[str, list[dict[str, Any]]]:
    """Every run input through one real sandbox (SandboxExecutor: Pyodide in Node)."""
    from flow_kernel.runtime.executors import SandboxExecutor

    async def go() -> dict[str, list[dict[str, Any]]]:
        executor = SandboxExecutor(warm=0)
        try:
            return {key: await run_input(item, executor, directory) for key, item in inputs.items()}
        finally:
            await executor.close()

    return asyncio.run(go())


def check_all(inputs: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    return {key: check_input(item) for key, item in inputs.items()}

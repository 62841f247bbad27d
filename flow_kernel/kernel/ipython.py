"""Flow in a Python notebook: `%load_ext flow_kernel`, then

    %%flow [--out NAME] [--operator POLICY]
    let n = len(tickets)          # `tickets` is read from the Python namespace (JSON values)
    triage(n)

Python functions decorated with `@flow_tool` implement Flow `tool` declarations. The
result lands in `NAME` (and is the cell's value); a compile error or a failed run is a
Python exception, so nbval and the notebook see the cell fail.

In a Jupyter kernel the cell is rewritten (before IPython's own magic handling) into a
top-level `await`, so the run is awaited on the kernel's event loop like a Flow kernel
cell — widget clicks and interrupts reach it while it runs. Declarations and bindings
persist across `%%flow` cells, as in the Flow kernel.

`--operator auto-approve` and `answers:PATH` answer for the person, so, as in the Flow
kernel, they only ask: the person at the frontend gets the capability prompt, and a
headless run (nbclient, nbval) refuses the cell with how to grant it. (A Python notebook
runs its own Python on the host anyway: read it before you run it. The prompt keeps a
cell from answering approvals for you without your saying so.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from flow_kernel.diagnostics import Diagnostic
from flow_kernel.errors import FlowError
from flow_kernel.frontend.cell import CellRefused, CellRunner, cell_name
from flow_kernel.frontend.magics import notebook_trust, operator_needs, type_of_json
from flow_kernel.lang.session_scope import SessionBinding
from flow_kernel.runtime.policy.operator import Operator
from flow_kernel.runtime.session import Session
from flow_kernel.runtime.tools import TOOLS, flow_tool
from flow_kernel.runtime.value_text import render_value


class FlowRunError(Exception):
    """A `%%flow` cell whose run failed: `.error` is the FlowError (code, message, span)."""

    def __init__(self, error: FlowError, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.error = error
        self.code = error.code
        self.lines = lines

    def _render_traceback_(self) -> list[str]:  # IPython shows this instead of a Python traceback
        return self.lines


class FlowCapabilityError(Exception):
    """A `%%flow` cell asked for a capability nobody granted (headless) or the person
    denied: nothing of the cell ran. `.capabilities` are what it asked for."""

    def __init__(self, capabilities: list[Any], lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.capabilities = capabilities
        self.lines = lines

    def _render_traceback_(self) -> list[str]:
        return self.lines


class FlowCompileError(Exception):
    """A `%%flow` cell with compile errors: `.diagnostics` holds them; nothing ran."""

    def __init__(self, diagnostics: list[Diagnostic], text: str) -> None:
        super().__init__("\n" + text)
        self.diagnostics = diagnostics
        self.text = text

    def _render_traceback_(self) -> list[str]:
        return self.text.rstrip("\n").split("\n")


_parser = argparse.ArgumentParser(prog="%%flow", add_help=False)
_parser.add_argument("--out", metavar="NAME")
_parser.add_argument("--operator", metavar="POLICY")


class FlowMagics:
    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.session = Session(directory=Path.cwd(), operator=Operator("interactive", callback=self._ask),
                               allow=notebook_trust(Path.cwd()))
        self.session.tools = TOOLS
        self.runner = CellRunner(self.session)
        self.cells = 0
        # In a Jupyter kernel the loop lives as long as the kernel: keep the sandbox warm.
        self.persistent_loop = getattr(shell, "kernel", None) is not None

    async def _ask(self, request: dict[str, Any]) -> Any:
        """Interactive prompts in the cell's run view, when a person is there (the frontend
        allows input); otherwise fail closed, as nbval and nbclient cannot answer."""
        from flow_kernel.errors import OperatorUnavailableError

        view = self.runner.view_of(str(request.get("run")))
        if view is not None and self.runner.interactive.get(str(request.get("run"))):
            return await view.ask(request)
        raise OperatorUnavailableError(f"no operator can answer {request.get('question')!r} here "
                                       "(use %%flow --operator auto-approve | auto-deny | answers:PATH)")

    async def run(self, line: str, code: str) -> Any:
        try:
            args = _parser.parse_args(shlex.split(line))
        except (SystemExit, ValueError):
            raise ValueError(f"%%flow: bad arguments {line!r}: use [--out NAME] [--operator POLICY]") from None
        if args.out is not None and not args.out.isidentifier():
            raise ValueError(f"%%flow --out: {args.out!r} is not a Python name")
        port = IPythonPort(self.shell)
        if args.operator is not None:
            await self._grant_operator(args.operator, port)
        if args.operator == "interactive":  # the person at the run view's prompts
            self.session.set_operator(Operator("interactive", callback=self._ask))
        elif args.operator is not None:
            self.session.set_operator(args.operator)
        self.cells += 1
        name = cell_name(code, "flow cell")
        # Checked once; again only when the cell reads Python values, whose types change it.
        compiled = self.session.compile(code, name)
        if self._import_python_values(compiled.check.diagnostics):
            compiled = self.session.compile(code, name)
        if not compiled.ok:
            from flow_kernel.diagnostics.render import render_text

            diagnostics = compiled.check.diagnostics
            raise FlowCompileError(diagnostics, render_text(diagnostics))
        try:
            end = await self.runner.run_program(compiled, port)
        finally:
            if not self.persistent_loop:
                await self.session.aclose()
        if end.error is not None:
            assert end.outcome is not None and end.outcome.error is not None
            raise FlowRunError(end.outcome.error, end.error.lines)
        if args.out is not None:
            self.shell.user_ns[args.out] = end.value
        return FlowResult(end.value) if end.value is not None else None

    async def _grant_operator(self, policy: str, port: IPythonPort) -> None:
        """`--operator` policies that answer for the person must be granted by the person:
        the capability prompt when one is at the frontend, else a FlowCapabilityError."""
        trust = self.session.trust
        missing = [c for c in operator_needs(self.session, policy) if not trust.granted(c)]
        try:
            await self.runner.grant(missing, port)
        except CellRefused as refused:
            assert refused.end.error is not None
            raise FlowCapabilityError(missing, refused.end.error.lines) from None

    def _import_python_values(self, diagnostics: list[Diagnostic]) -> bool:
        """Names the Flow code uses but the session lacks (its F2001s), taken from the Python
        namespace when their values are JSON (a copy: Flow never sees the Python object).
        True when one was taken: the cell must be checked again."""
        imported = False
        for d in diagnostics:
            if d.code != "F2001":
                continue
            wanted = d.span.text
            if wanted not in self.shell.user_ns or wanted in self.session.scope.decls:
                continue
            try:
                value = json.loads(json.dumps(self.shell.user_ns[wanted]))
            except (TypeError, ValueError):
                continue  # not JSON: the F2001 stands, and says the name is unknown to Flow
            self.session.scope.bindings[wanted] = SessionBinding(type_of_json(value), False)
            self.session.values[wanted] = value
            imported = True
        return imported


class IPythonPort:
    """A `%%flow` cell's I/O (frontend/cell.py `CellPort`) in IPython: `print` output and
    displays in the cell (its context kept: events come from the sandbox's reader task),
    prompts and the live view as widgets when a person is at a Jupyter frontend."""

    def __init__(self, shell: Any) -> None:
        self.kernel = kernel = getattr(shell, "kernel", None)
        # A person at the frontend: a Jupyter kernel's shell whose request allows input;
        # headless (nbclient, nbval, a terminal) the cell gets only the summary at the end.
        self.person_present = (shell.__class__.__name__ == "ZMQInteractiveShell"
                               and bool(getattr(kernel, "_allow_stdin", False)))
        self.widgets = self.person_present
        self.summaries = True
        self.cell = contextvars.copy_context()
        self.view_display: Any = None  # the live view's display handle (the summary replaces it)

    def show(self, bundle: dict[str, Any]) -> None:
        from IPython.display import display

        self.cell.run(display, bundle, raw=True)

    def warn(self, text: str) -> None:
        self.cell.run(sys.stderr.write, text)

    def on_event(self, event: dict[str, Any]) -> None:
        if event.get("type") == "print":
            self.cell.run(print, (event.get("data") or {}).get("text"))

    def open_view(self, title: str | None, run_id: str, agents: dict[str, dict[str, Any]]) -> Any:
        try:
            from IPython.display import display

            from flow_kernel.views.run_view import RunView, live_display_id, request_msg_id

            view = RunView(run_id=run_id, agents=agents)  # the summary sits under its cell: no title
        except ImportError:
            return None
        display_id = live_display_id(run_id)
        request = request_msg_id(self.cell.run(self.parent))  # a reloaded page adopts its outputs
        self.view_display = self.cell.run(display, view.mimebundle(display_id, request), raw=True, display_id=display_id)
        return view

    def parent(self) -> Any:
        """The request the cell runs for (its outputs' parent), if in a kernel."""
        get_parent = getattr(self.kernel, "get_parent", None)
        return get_parent() if callable(get_parent) else None

    def close_view(self, run_id: str, bundle: dict[str, Any] | None) -> None:
        if bundle is not None and self.view_display is not None:
            self.cell.run(self.view_display.update, bundle, raw=True)
        elif bundle is not None:
            self.show(bundle)
        self.view_display = None

    async def prompt(self, request: dict[str, Any]) -> Any:
        from flow_kernel.views import prompts as p

        box = p.Prompts()
        self.show(box.mimebundle())
        try:
            return await box.ask(request)
        finally:
            box.close()

    async def read_line(self, prompt: str) -> str:  # widgets whenever a person is there: never asked
        raise RuntimeError("%%flow asks with widgets only")


class FlowResult:
    """The value of a `%%flow` cell as IPython shows it: Flow's rendering, and JSON."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle: dict[str, Any] = {"text/plain": render_value(self.value)}
        if isinstance(self.value, dict | list):
            bundle["application/json"] = self.value
        return bundle

    def __repr__(self) -> str:
        return render_value(self.value)


_MAGICS_ATTR = "_flow_magics"


def load_ipython_extension(shell: Any) -> None:
    from flow_kernel.kernel.status import name_idles_by_their_dispatch

    kernel = getattr(shell, "kernel", None)  # None in a terminal IPython
    if kernel is not None:
        name_idles_by_their_dispatch(kernel)  # Run All in JupyterLab: kernel/status.py
    magics = FlowMagics(shell)
    setattr(shell, _MAGICS_ATTR, magics)
    shell.user_ns.setdefault("flow_tool", flow_tool)

    def cell_magic(line: str, cell: str) -> Any:
        """The plain cell magic, for callers that cannot await (the rewrite below is used in
        a kernel): runs the cell on a loop of its own."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(magics.run(line, cell))
        raise RuntimeError("%%flow cannot block the running event loop here; run it as a notebook cell")

    shell.register_magic_function(cell_magic, "cell", "flow")
    transforms = shell.input_transformer_manager.cleanup_transforms
    if _rewrite_flow_cell not in transforms:
        transforms.append(_rewrite_flow_cell)


def unload_ipython_extension(shell: Any) -> None:
    transforms = shell.input_transformer_manager.cleanup_transforms
    if _rewrite_flow_cell in transforms:
        transforms.remove(_rewrite_flow_cell)


def _rewrite_flow_cell(lines: list[str]) -> list[str]:
    """`%%flow ARGS` + body → one top-level await of the extension's runner."""
    if not lines or not lines[0].startswith("%%flow") or lines[0][6:7] not in ("", " ", "\t", "\n"):
        return lines
    line = lines[0][6:].strip()
    body = "".join(lines[1:])
    call = (f"await getattr(get_ipython(), {_MAGICS_ATTR!r}).run({line!r}, {body!r})\n")
    return [call]

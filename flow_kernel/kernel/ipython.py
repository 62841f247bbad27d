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
import hashlib
import json
import shlex
from pathlib import Path
from typing import Any

from flow_kernel.diagnostics import Diagnostic
from flow_kernel.errors import FlowError
from flow_kernel.kernel.magics import type_of_json
from flow_kernel.lang.session_scope import SessionBinding
from flow_kernel.runtime.events.failure_report import describe_error
from flow_kernel.runtime.session import Session
from flow_kernel.runtime.tools import TOOLS, flow_tool
from flow_kernel.runtime.value_text import render_value
from flow_kernel.views.live import LiveView
from flow_kernel.views.run_model import declared_agents


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
        from flow_kernel.runtime.policy.operator import Operator

        self.shell = shell
        from flow_kernel.kernel.magics import notebook_trust

        self.session = Session(directory=Path.cwd(), operator=Operator("interactive", callback=self._ask),
                               trust=notebook_trust(Path.cwd()))
        self.session.tools = TOOLS
        self.cells = 0
        # In a Jupyter kernel the loop lives as long as the kernel: keep the sandbox warm.
        self.persistent_loop = getattr(shell, "kernel", None) is not None
        self.live: LiveView | None = None  # the running cell's run view
        self.view_display: Any = None  # its display handle (the summary replaces it)

    async def _ask(self, request: dict[str, Any]) -> Any:
        """Interactive prompts in the cell's run view, when a person is there (the frontend
        allows input); otherwise fail closed, as nbval and nbclient cannot answer."""
        from flow_kernel.errors import OperatorUnavailableError

        kernel = getattr(self.shell, "kernel", None)
        view = self.live.view if self.live is not None else None
        if view is not None and getattr(kernel, "_allow_stdin", False):
            return await view.ask(request)
        raise OperatorUnavailableError(f"no operator can answer {request.get('question')!r} here "
                                       "(use %%flow --operator auto-approve | auto-deny | answers:PATH)")

    def _open_view(self, agents: dict[str, dict[str, Any]]) -> Any:
        """The live view where a person watches (the frontend allows input); headless —
        nbclient, nbval, a terminal — the cell gets only the summary at the end."""
        kernel = getattr(self.shell, "kernel", None)
        if self.shell.__class__.__name__ != "ZMQInteractiveShell" or not getattr(kernel, "_allow_stdin", False):
            return None
        try:
            from IPython.display import display

            from flow_kernel.views.run_view import RunView

            view = RunView(agents=agents)
        except ImportError:
            return None
        # With a display id: the summary replaces the live view in place when the run ends.
        self.view_display = display(view.mimebundle(), raw=True, display_id=True)
        return view

    async def run(self, line: str, code: str) -> Any:
        try:
            args = _parser.parse_args(shlex.split(line))
        except (SystemExit, ValueError):
            raise ValueError(f"%%flow: bad arguments {line!r}: use [--out NAME] [--operator POLICY]") from None
        if args.out is not None and not args.out.isidentifier():
            raise ValueError(f"%%flow --out: {args.out!r} is not a Python name")
        if args.operator is not None:
            await self._grant_operator(args.operator)
        if args.operator == "interactive":  # the person at the run view's prompts
            from flow_kernel.runtime.policy.operator import Operator

            self.session.set_operator(Operator("interactive", callback=self._ask))
        elif args.operator is not None:
            self.session.set_operator(args.operator)
        self.cells += 1
        name = f"<flow cell {hashlib.sha256(code.strip().encode()).hexdigest()[:6]}>"  # by its text (kernel.cell_name)
        # Checked once; again only when the cell reads Python values, whose types change it.
        compiled = self.session.compile(code, name)
        if self._import_python_values(compiled.check.diagnostics):
            compiled = self.session.compile(code, name)
        if not compiled.ok:
            from flow_kernel.diagnostics.render import render_text

            diagnostics = compiled.check.diagnostics
            raise FlowCompileError(diagnostics, render_text(diagnostics))
        self.view_display = None
        agents = declared_agents(compiled.check.decls)
        live = self.live = LiveView(lambda: self._open_view(agents))  # the summary sits under its cell: no title
        # Events reach the sinks from the sandbox's reader task, whose context is the cell
        # that started the process; ipykernel takes an output's parent from the context, so
        # the sinks run in this cell's.
        cell = contextvars.copy_context()

        def in_cell(event: dict[str, Any]) -> None:
            cell.run(_print_sink, event)
            cell.run(live.sink, event)

        try:
            outcome = await self.session.run_async(compiled, sinks=[in_cell])
        except BaseException:
            live.drop()
            raise
        finally:
            self.live = None
            if not self.persistent_loop:
                await self.session.aclose()
        bundle = live.finish(outcome)
        if bundle is not None and self.view_display is not None:
            self.view_display.update(bundle, raw=True)
        elif bundle is not None:
            from IPython.display import display

            display(bundle, raw=True)
        if outcome.error is not None:
            raise FlowRunError(outcome.error, describe_error(outcome.error, outcome.source_line))
        if args.out is not None:
            self.shell.user_ns[args.out] = outcome.result
        return FlowResult(outcome.result) if outcome.result is not None else None

    async def _grant_operator(self, policy: str) -> None:
        """`--operator` policies that answer for the person must be granted by the person:
        the capability prompt when one is at the frontend, else a FlowCapabilityError."""
        from flow_kernel.kernel.magics import operator_needs
        from flow_kernel.runtime.policy.trust import CapabilityDenied

        trust = self.session.trust
        missing = [c for c in operator_needs(self.session, policy) if not trust.granted(c)]
        if not missing:
            return
        kernel = getattr(self.shell, "kernel", None)
        if self.shell.__class__.__name__ != "ZMQInteractiveShell" or not getattr(kernel, "_allow_stdin", False):
            refusals = [str(CapabilityDenied(c, asker=trust.asker, folder=trust.folder)) for c in missing]
            raise FlowCapabilityError(missing, [f"CapabilityDenied: {r}" for r in refusals])
        from IPython.display import display

        from flow_kernel.views import prompts as p

        asks = "; ".join(c.describe() for c in missing)
        prompts = p.Prompts()
        display(prompts.mimebundle(), raw=True)
        try:
            answer = await prompts.ask(p.capability_request([c.describe() for c in missing]))
        finally:
            prompts.close()
        if answer not in (p.ALLOW_ONCE, p.ALLOW_NOTEBOOK):
            text = f"you denied: {asks}; nothing of the cell ran"
            raise FlowCapabilityError(missing, [f"CapabilityDenied: {text}"])
        for capability in missing:
            trust.grant(capability, remember=answer == p.ALLOW_NOTEBOOK)

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


def _print_sink(event: dict[str, Any]) -> None:
    if event.get("type") == "print":
        print((event.get("data") or {}).get("text"))


_MAGICS_ATTR = "_flow_magics"


def load_ipython_extension(shell: Any) -> None:
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

"""Flow Kernel: the Flow language, its sandbox and runtime, the Jupyter kernel, the `flow`
command and the `%%flow` IPython magic (docs/architecture.md). This module is the
library's face: the names a Python program uses.

    >>> from flow_kernel import SourceFile, check
    >>> result = check(SourceFile("hello.flow", 'print "hello"'))
    >>> result.ok
    True
    >>> from flow_kernel import Session
    >>> Session(operator="none", journal_dir=None).run("let n = 40 + 2\\nn").result
    42

`Session` and the runtime are imported on first use, so that `import flow_kernel` (and
`flow_kernel.lang`) does not start the runtime. Nothing inside the package imports this
module: the kernel, the CLI and the rest import the modules that define what they use
(tests/test_layering.py holds them to it).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from flow_kernel.compiled_front import install as _choose_front_end

if TYPE_CHECKING:
    from flow_kernel.diagnostics import REGISTRY, Diagnostic, Severity
    from flow_kernel.lang import CheckResult, SessionScope, check
    from flow_kernel.source import SourceFile, Span

# jsonschema, when `rfc3987_syntax` is installed (jupyterlab brings it), imports it at import
# time to check the `iri` format, and that builds a Lark parser: about 1.3 s of CPU on every
# `flow` command and kernel start (4 s and more on a busy machine), most of a `flow resume`'s
# start-up. Flow checks no formats (runtime/validation.py; check_decls.py uses an empty
# FormatChecker), so it is not loaded (nothing above imports jsonschema); a process that
# imported it already keeps it.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

# The lexer, parser and checker compiled with mypyc when a build of exactly these sources is
# beside the package (flow_kernel/compiled_front.py), else pure: chosen before any of them loads.
_choose_front_end()

# Imported on first use: the runtime and the kernel are not needed to check a program, and
# the version's metadata lookup pulls in email and socket, which `flow_kernel.lang` must not.
# The language too: `flow run` starts its sandbox (flow_kernel.cli.main) before it imports
# the checker (~0.1 s), and `python -m flow_kernel` before the kernel's imports.
_LAZY = {"REGISTRY": "flow_kernel.diagnostics", "Diagnostic": "flow_kernel.diagnostics",
         "Severity": "flow_kernel.diagnostics", "CheckResult": "flow_kernel.lang",
         "SessionScope": "flow_kernel.lang", "check": "flow_kernel.lang", "SourceFile": "flow_kernel.source",
         "Span": "flow_kernel.source", "Session": "flow_kernel.runtime.session", "CompileError": "flow_kernel.runtime.session",
         "RunOutcome": "flow_kernel.runtime.run", "RunContext": "flow_kernel.runtime.context",
         "FlowError": "flow_kernel.errors",
         "FlowConfig": "flow_kernel.runtime.config", "Operator": "flow_kernel.runtime.policy.operator",
         "flow_tool": "flow_kernel.runtime.tools", "__version__": "flow_kernel.version"}


def load_ipython_extension(shell: object) -> None:
    """`%load_ext flow_kernel`: the `%%flow` cell magic and `@flow_tool`."""
    from flow_kernel.kernel.ipython import load_ipython_extension as load

    load(shell)


def unload_ipython_extension(shell: object) -> None:
    from flow_kernel.kernel.ipython import unload_ipython_extension as unload

    unload(shell)


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'flow_kernel' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = ["REGISTRY", "CheckResult", "CompileError", "Diagnostic", "FlowConfig", "FlowError", "Operator", "RunContext",
           "RunOutcome", "Session", "SessionScope", "Severity", "SourceFile", "Span", "__version__", "check", "flow_tool",
           "load_ipython_extension", "unload_ipython_extension"]


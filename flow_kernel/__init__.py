"""Flow Kernel: the Flow language front end (and, as it lands, its sandbox, runtime and
Jupyter kernel).

    >>> from flow_kernel import SourceFile, check
    >>> result = check(SourceFile("hello.flow", 'print "hello"'))
    >>> result.ok
    True
"""

from __future__ import annotations

from flow_kernel.diagnostics import REGISTRY, Diagnostic, Severity
from flow_kernel.lang import CheckResult, SessionScope, check
from flow_kernel.source import SourceFile, Span

__version__ = "0.1.0"

__all__ = ["REGISTRY", "CheckResult", "Diagnostic", "SessionScope", "Severity", "SourceFile", "Span", "__version__", "check"]

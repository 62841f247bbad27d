"""The Flow front end: source → tokens → AST → checked program (pure: no I/O)."""

from __future__ import annotations

from flow_kernel.lang.check import CheckResult, Loader, UseRefused, check
from flow_kernel.lang.parser import parse
from flow_kernel.lang.session import SessionBinding, SessionScope

__all__ = ["CheckResult", "Loader", "SessionBinding", "SessionScope", "UseRefused", "check", "parse"]

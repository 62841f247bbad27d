"""The Flow front end: source → tokens → AST → checked program (pure: no I/O)."""

from __future__ import annotations

from flow_kernel.lang.check import check
from flow_kernel.lang.check_result import CheckResult
from flow_kernel.lang.parser import parse
from flow_kernel.lang.session_scope import SessionBinding, SessionScope
from flow_kernel.source import Loader, UseRefused

__all__ = ["CheckResult", "Loader", "SessionBinding", "SessionScope", "UseRefused", "check", "parse"]

"""What `check` hands on besides diagnostics: the implicit workflow's context and the
typed top-level bindings that a session keeps."""

from __future__ import annotations

from flow_kernel.lang import SessionScope, check
from flow_kernel.lang import types as T
from flow_kernel.source import SourceFile


def test_toplevel_context_carries_its_limits() -> None:
    result = check(SourceFile("cell", "limits { steps: 5, agent_runs: 7 }\nprint 1"))
    assert result.ok
    assert result.toplevel is not None
    assert result.toplevel.limits["steps"] == 5 and result.toplevel.limits["agent_runs"] == 7


def test_session_keeps_binding_types() -> None:
    session = SessionScope()
    first = check(SourceFile("cell[1]", "var n = 3\nlet s = \"x\""), session=session)
    session.commit(first)
    assert session.bindings["n"].type == T.INT and session.bindings["n"].mutable
    assert not session.bindings["s"].mutable
    second = check(SourceFile("cell[2]", "n = \"text\""), session=session)
    assert [d.code for d in second.diagnostics] == ["F3001"]

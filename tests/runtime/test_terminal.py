"""The terminal view of `flow run`: indented by the run's tree, one line per happening."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.events.terminal import TerminalProgress
from flow_kernel.runtime.policy.operator import Operator
from flow_kernel.runtime.run import run_compiled
from flow_kernel.sandbox.inprocess import InProcessExecutor

ROOT = Path(__file__).resolve().parents[2]


def render(source: str, **kw: object) -> str:
    out = io.StringIO()
    compiled = compile_source(SourceFile("t.flow", source))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    asyncio.run(run_compiled(compiled, InProcessExecutor(),
                             RunContext(sinks=[TerminalProgress(out, **kw)], operator=Operator("auto-approve"))))
    return out.getvalue()


def strip_ms(text: str) -> list[str]:
    import re

    return [re.sub(r" \d+ ms", "", line) for line in text.splitlines()]


def test_the_triage_example_reads_as_a_tree() -> None:
    lines = strip_ms(render((ROOT / "examples" / "triage.flow").read_text()))
    assert lines[:5] == ["▸ workflow <cell>", "  ▸ workflow triage_all", "    ▸ pipeline triage",
                         '      ▸ stage "classify"', "        ▸ agent triager: Ticket T1: Reset my password"]
    assert "        [####################] 2/2" in lines
    assert "        ✓ verify high needs a human" in lines
    assert lines[-5:] == ["    ? Escalate 1 tickets?", "      → yes (auto-approve)", "    · escalated",
                          "  ✓ workflow triage_all", "✓ workflow <cell>"]


def test_failures_show_the_code_and_message_and_attempts() -> None:
    lines = strip_ms(render('agent a { model: "scripted", retry: { on: ["agent-invocation"], attempts: 2 }, '
                            'script: [fail("agent-invocation", "down\\nmore")] }\nstage "s" { a("x") }'))
    assert "    ✗ agent a (2 attempts): agent-invocation down" in lines
    assert '  ✗ stage "s": agent-invocation' in lines[-2]
    assert lines[-1].startswith("✗ workflow <cell>: agent-invocation")


def test_ascii_marks_and_color() -> None:
    assert "ok workflow <cell>" in render("let x = 1", unicode=False)
    assert "\x1b[32m✓\x1b[0m workflow <cell>" in render("let x = 1", color=True)

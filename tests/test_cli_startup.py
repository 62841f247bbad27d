"""`flow`'s start: the parser imports no command's machinery, and a run starts importing
the provider clients its program names while its sandbox starts (cli/prefetch.py).
Nothing here is timed."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from flow_kernel.cli.prefetch import client_packages, prefetch_clients, program_models
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.config import FlowConfig
from flow_kernel.runtime.providers import table
from flow_kernel.source import SourceFile

HEAVY = ("flow_kernel.runtime.session", "flow_kernel.lang.checker", "flow_kernel.frontend.cell",
         "flow_kernel.runtime.context", "flow_kernel.bench.measure", "openai", "anthropic")


def test_the_parser_imports_no_command_machinery() -> None:
    """`flow --version`, `flow check`, `flow runs`… build the whole parser: what a command
    needs is imported by its handler, not by the parser."""
    probe = ("import sys; from flow_kernel.cli import build_parser; build_parser(); "
             f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_client_packages_of_remote_models_only() -> None:
    models = ["openai/gpt-4o", "scripted", "mock", "anthropic/claude", "openai/other", "nope/x", "a2a/agent",
              "default", "for:cheap"]
    assert client_packages(models) == ["openai", "anthropic", "a2a"]


def test_program_models_are_the_agents_and_the_configuration() -> None:
    compiled = compile_source(SourceFile("p.flow", 'agent a { model: "openai/gpt-test" }\n'
                                                    'agent b { model: "scripted", script: ["x"] }\n'
                                                    'agent c { instructions: "no model: the default" }\n'
                                                    'a("hi")\n'))
    assert compiled.ok
    config = FlowConfig(default_model="anthropic/claude-x", models={"cheap": "a2a/agent"})
    models = program_models(compiled.check.decls, config)
    assert sorted(models) == sorted(["openai/gpt-test", "scripted", "default", "anthropic/claude-x", "a2a/agent"])
    assert program_models(compiled.check.decls, FlowConfig()) == ["openai/gpt-test", "scripted", "default"]


def test_prefetch_imports_in_a_thread_and_leaves_failures_to_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "flow_prefetch_probe.py").write_text("IMPORTED_BY = __import__('threading').current_thread().name\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "flow_prefetch_probe", raising=False)
    monkeypatch.setitem(table.REMOTE_PROVIDERS, "probe", table.ProviderEntry("probe", "x:y", "flow_prefetch_probe"))
    monkeypatch.setitem(table.REMOTE_PROVIDERS, "broken",
                        table.ProviderEntry("broken", "x:y", "flow_prefetch_no_such_module"))
    failures: list[object] = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    assert prefetch_clients(["scripted", "mock"]) is None  # local models: nothing to import, no thread
    thread = prefetch_clients(["broken/m", "probe/m"])
    assert thread is not None and thread.daemon
    thread.join()
    assert sys.modules["flow_prefetch_probe"].IMPORTED_BY == "flow-client-prefetch"
    assert failures == []  # a client that does not import is the run's own error to report

"""A model whose provider's client package is not installed (`pip install
'flow-kernel[node]'` alone has no `openai`): the run fails at that call, before any
request, with one agent-invocation error naming the package and the command that
installs it — the same command `flow doctor` shows."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from flow_kernel.errors import AgentInvocationError
from flow_kernel.runtime.config import parse_config
from flow_kernel.runtime.providers.table import PROVIDERS, REMOTE_PROVIDERS

PROGRAM = """type Greeting = { text: string }
agent greeter {
  model: "openai/gpt-4o-mini"
  output: Greeting
}
workflow greet(name: string) -> Greeting {
  stage "greet" { let g = greeter("Greet ${name}") }
  return g
}
greet("Ada")
"""

# `import openai` raises ImportError in this process, as where it is not installed; the rest is `flow`.
WITHOUT_OPENAI = "import sys; sys.modules['openai'] = None; from flow_kernel.cli import main; sys.exit(main(sys.argv[1:]))"


def test_flow_run_without_the_openai_package_says_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "greet.flow").write_text(PROGRAM)
    with socket.socket() as endpoint:  # where a request would go: nothing may connect
        endpoint.bind(("127.0.0.1", 0))
        endpoint.listen()
        endpoint.setblocking(False)
        env = {**os.environ, "NO_COLOR": "1", "OPENAI_BASE_URL": f"http://127.0.0.1:{endpoint.getsockname()[1]}/v1",
               "OPENAI_API_KEY": "sk-test"}
        proc = subprocess.run([sys.executable, "-c", WITHOUT_OPENAI, "run", "greet.flow", "--format", "json"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
        with pytest.raises(BlockingIOError):
            endpoint.accept()
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and not result["ok"], proc.stderr
    assert result["error"]["code"] == "agent-invocation"
    assert result["error"]["message"] == ("the `openai` provider needs the `openai` package, which is not installed "
                                          "here: pip install 'flow-kernel[providers]'")
    assert result["error"]["details"] == {"provider": "openai", "package": "openai",
                                          "install": "pip install 'flow-kernel[providers]'"}


@pytest.mark.parametrize("name", list(REMOTE_PROVIDERS))
def test_every_remote_provider_names_its_package_and_extra(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = REMOTE_PROVIDERS[name]
    monkeypatch.setitem(sys.modules, entry.package, None)
    with pytest.raises(AgentInvocationError) as info:
        entry.make_for(parse_config({}))
    package = entry.distribution or entry.package  # a2a: `a2a-sdk`, in the `protocols` extra
    assert info.value.message == (f"the `{name}` provider needs the `{package}` package, which is not installed "
                                  f"here: pip install 'flow-kernel[{entry.extra}]'")
    assert entry.doctor_line() == f"{name} not installed (pip install 'flow-kernel[{entry.extra}]')"


@pytest.mark.parametrize("name", [name for name, entry in PROVIDERS.items() if entry.local])
def test_a_local_provider_needs_no_client(name: str) -> None:
    entry = PROVIDERS[name]
    assert entry.package == "" and entry.key_env == "" and entry.url_env == ""
    entry.require_client()  # nothing to import: no error
    assert hasattr(entry.make_for(parse_config({})), "attempt")

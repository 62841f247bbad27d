"""A model server that is down, for each remote provider through its official client: the
`agent-invocation` error names the address, the setting it came from (a `flow.toml` key,
an environment variable, the client's default) and the provider, in its message and in
`details`. Every address is a closed loopback port (nothing listens there); the default's
message is built from the provider the run would use, never sent to the internet."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.runtime.config import parse_config
from flow_kernel.runtime.providers.base import Endpoint
from flow_kernel.runtime.providers.table import PROVIDERS
from flow_kernel.runtime.session import Session

VARIABLES = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "A2A_BASE_URL")


@pytest.fixture(autouse=True)
def no_endpoint_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-unreachable-0001")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-unreachable-0001")


@pytest.fixture()
def closed() -> str:
    """The base URL of a loopback port nobody listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def failure(tmp_path: Path, toml: str, model: str) -> Any:
    """The error of a run of one call to an agent of `model`, under the flow.toml `toml`."""
    config = tmp_path / "flow.toml"
    config.write_text(toml)
    outcome = Session(directory=tmp_path, config=config, operator="auto-deny", sandbox=False,
                      journal_dir=None).run(f'agent a {{ model: "{model}", output: string }}\na("hi")')
    assert outcome.error is not None and outcome.error.code == "agent-invocation", outcome.error
    return outcome.error


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [True, False])
def test_a_base_url_from_flow_toml(tmp_path: Path, closed: str, provider: str, stream: bool) -> None:
    toml = f'[providers.{provider}]\nbase_url = "{closed}"\nstream = {str(stream).lower()}\n'
    error = failure(tmp_path, toml, f"{provider}/m")
    source = f"{tmp_path / 'flow.toml'} [providers.{provider}] base_url"
    assert error.message == (f"the {provider} provider could not be reached at {closed} (from {source}): "
                             "Connection error.")
    assert error.details == {"provider": provider, "base_url": closed, "source": source}


@pytest.mark.parametrize(("provider", "variable"), [("openai", "OPENAI_BASE_URL"),
                                                    ("anthropic", "ANTHROPIC_BASE_URL")])
def test_a_base_url_from_the_environment(tmp_path: Path, closed: str, monkeypatch: pytest.MonkeyPatch,
                                         provider: str, variable: str) -> None:
    monkeypatch.setenv(variable, closed)
    error = failure(tmp_path, "", f"{provider}/m")
    assert error.message == (f"the {provider} provider could not be reached at {closed} (from ${variable}): "
                             "Connection error.")
    assert error.details == {"provider": provider, "base_url": closed, "source": f"${variable}"}


@pytest.mark.parametrize(("provider", "default"), [("openai", "https://api.openai.com/v1"),
                                                   ("anthropic", "https://api.anthropic.com")])
def test_the_clients_default(provider: str, default: str) -> None:
    built = PROVIDERS[provider].make_for(parse_config({}))
    variable = PROVIDERS[provider].url_env
    assert built.endpoint == Endpoint(provider, None, "default", variable)  # type: ignore[attr-defined]
    error = built.endpoint.unreachable(str(built.client.base_url).rstrip("/"), "Connection error.")  # type: ignore[attr-defined]
    assert error.message == (f"the {provider} provider could not be reached at {default} (the {provider} client's "
                             f"default; [providers.{provider}] base_url in flow.toml or ${variable} sets another): "
                             "Connection error.")
    assert error.details == {"provider": provider, "base_url": default, "source": "default"}


def test_a2a_agents_from_flow_toml_and_the_environment(tmp_path: Path, closed: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    said = "ConnectError: All connection attempts failed"
    declared = failure(tmp_path, f'[a2a.far]\nurl = "{closed}"\n', "a2a/far")
    source = f"{tmp_path / 'flow.toml'} [a2a.far] url"
    assert declared.message == f"the A2A agent `far` could not be reached at {closed} (from {source}): {said}"
    assert declared.details == {"provider": "a2a", "base_url": closed, "source": source, "agent": "far"}
    table = failure(tmp_path, f'[providers.a2a]\nbase_url = "{closed}"\n', "a2a/near")
    source = f"{tmp_path / 'flow.toml'} [providers.a2a] base_url"
    assert table.message == f"the A2A agent `near` could not be reached at {closed} (from {source}): {said}"
    assert table.details == {"provider": "a2a", "base_url": closed, "source": source, "agent": "near"}
    monkeypatch.setenv("A2A_BASE_URL", closed)
    environment = failure(tmp_path, "", "a2a/near")
    assert environment.message == f"the A2A agent `near` could not be reached at {closed} (from $A2A_BASE_URL): {said}"
    assert environment.details == {"provider": "a2a", "base_url": closed, "source": "$A2A_BASE_URL", "agent": "near"}


def test_a_password_in_the_address_is_not_repeated(tmp_path: Path, closed: str) -> None:
    secret = closed.replace("http://", "http://me:hunter2-secret@")
    error = failure(tmp_path, f'[providers.openai]\nbase_url = "{secret}"\n', "openai/m")
    assert "hunter2" not in error.message and "hunter2" not in str(error.details)
    assert error.details["base_url"] == closed.replace("http://", "http://me:***@")

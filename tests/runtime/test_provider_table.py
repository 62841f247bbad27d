"""The provider table (runtime/providers/table.py) is what every part reads: config keys,
`%provider`, completion, `flow doctor` and the `providers` extra follow it."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import tomllib
from pathlib import Path

import pytest

from flow_kernel.runtime.config import ConfigError, parse_config
from flow_kernel.runtime.doctor import doctor_report
from flow_kernel.runtime.providers.table import (
    EXTRA,
    LOCAL_PROVIDERS,
    PROVIDERS,
    REMOTE_PROVIDERS,
    calls_tools,
    is_local,
    is_model,
    is_remote,
    model_names,
)

ROOT = Path(__file__).resolve().parents[2]


def test_every_remote_provider_client_is_in_its_extra() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for entry in REMOTE_PROVIDERS.values():  # `providers`, or `protocols` for a2a
        packages = {requirement.split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip()
                    for requirement in extras[entry.extra]}
        assert (entry.distribution or entry.package) in packages, entry.name
    assert {e.extra for e in REMOTE_PROVIDERS.values()} >= {EXTRA}


def test_config_keys_follow_the_table() -> None:
    for name, entry in REMOTE_PROVIDERS.items():
        settings = parse_config({"providers": {name: {"base_url": "http://x", "api_key_env": "K"}}}).provider(name)
        assert (settings.base_url, settings.api_key_env) == ("http://x", "K")
        with pytest.raises(ConfigError, match=f"known: {', '.join(entry.config_keys)}"):
            parse_config({"providers": {name: {"colour": "red"}}})
        with pytest.raises(ConfigError, match=f"default {entry.key_env}"):
            parse_config({"providers": {name: {"api_key": "sk-1"}}})
    for name in ("cohere", *LOCAL_PROVIDERS):  # a local provider has no settings
        with pytest.raises(ConfigError, match=f"known: {', '.join(REMOTE_PROVIDERS)}"):
            parse_config({"providers": {name: {}}})


def test_a_providers_key_comes_from_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for entry in REMOTE_PROVIDERS.values():
        settings = parse_config({"providers": {entry.name: {"api_key_env": "MY_OWN_KEY"}}}).provider(entry.name)
        monkeypatch.setenv(entry.key_env, "default-key")
        monkeypatch.setenv("MY_OWN_KEY", "own-key")
        assert entry.key(settings) == "own-key"
        assert entry.key(parse_config({}).provider(entry.name)) == "default-key"


def test_model_names_and_doctor_read_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    assert model_names() == (*LOCAL_PROVIDERS, *(f"{n}/" for n in REMOTE_PROVIDERS))
    assert all(is_model(f"{n}/some-model") for n in REMOTE_PROVIDERS) and all(is_model(n) for n in LOCAL_PROVIDERS)
    assert not is_model("gpt-4") and not is_model("cohere/command") and not is_model("mock/x")
    for entry in REMOTE_PROVIDERS.values():  # set or unset, never a value
        monkeypatch.setenv(entry.key_env, "sk-secret-value")
    (row,) = [detail for name, _, detail in doctor_report() if name == "providers"]
    for entry in REMOTE_PROVIDERS.values():
        assert entry.name in row
        assert f"{entry.key_env} set" in row or f"{entry.name} not installed" in row
    assert "sk-secret-value" not in row


def test_the_local_providers_are_entries_of_the_one_table() -> None:
    assert LOCAL_PROVIDERS == ("mock", "scripted") and list(PROVIDERS)[:2] == ["mock", "scripted"]
    assert set(PROVIDERS) == {*LOCAL_PROVIDERS, *REMOTE_PROVIDERS}
    assert [name for name in PROVIDERS if is_local(name)] == ["mock", "scripted"]
    assert [name for name in PROVIDERS if is_remote(name)] == list(REMOTE_PROVIDERS)
    assert not is_local("cohere") and not is_remote("cohere")  # an embedder's provider is neither


def test_whether_a_provider_calls_tools_is_a_property_of_its_entry() -> None:
    assert [name for name in PROVIDERS if not calls_tools(name)] == ["scripted"]
    assert calls_tools("an-embedders-own")  # unknown to the table: it may


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_a_client_reads_its_variables_from_the_table(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip(name)
    module = importlib.import_module(f"flow_kernel.runtime.providers.{name}")
    assert module._ENTRY is PROVIDERS[name]
    monkeypatch.setattr(module, "_ENTRY", dataclasses.replace(PROVIDERS[name], key_env="FLOW_TEST_KEY",
                                                              url_env="FLOW_TEST_URL"))
    monkeypatch.setenv("FLOW_TEST_KEY", "from-the-table")
    monkeypatch.setenv("FLOW_TEST_URL", "http://127.0.0.1:9/v1")
    provider = module.OpenAIProvider() if name == "openai" else module.AnthropicProvider()
    assert provider.endpoint.source == "$FLOW_TEST_URL" and provider.client.api_key == "from-the-table"


def test_every_entry_names_a_builder_that_imports() -> None:
    for entry in PROVIDERS.values():
        module, _, function = entry.builder.partition(":")
        assert module.startswith("flow_kernel.runtime.") and function, entry.name
        if entry.local or importlib.util.find_spec(entry.package) is not None:
            assert callable(entry.build), entry.name

"""The provider table (runtime/providers/table.py) is what every part reads: config keys,
`%provider`, completion, `flow doctor` and the `providers` extra follow it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from flow_kernel.runtime.config import ConfigError, parse_config
from flow_kernel.runtime.doctor import doctor_report
from flow_kernel.runtime.providers.table import (
    EXTRA,
    LOCAL_PROVIDERS,
    PROVIDERS,
    is_model,
    model_names,
)

ROOT = Path(__file__).resolve().parents[2]


def test_every_remote_provider_client_is_in_its_extra() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for entry in PROVIDERS.values():  # `providers`, or `protocols` for a2a
        packages = {requirement.split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip()
                    for requirement in extras[entry.extra]}
        assert (entry.distribution or entry.package) in packages, entry.name
    assert {e.extra for e in PROVIDERS.values()} >= {EXTRA}


def test_config_keys_follow_the_table() -> None:
    for name, entry in PROVIDERS.items():
        settings = parse_config({"providers": {name: {"base_url": "http://x", "api_key_env": "K"}}}).provider(name)
        assert (settings.base_url, settings.api_key_env) == ("http://x", "K")
        with pytest.raises(ConfigError, match=f"known: {', '.join(entry.config_keys)}"):
            parse_config({"providers": {name: {"colour": "red"}}})
        with pytest.raises(ConfigError, match=f"default {entry.key_env}"):
            parse_config({"providers": {name: {"api_key": "sk-1"}}})
    with pytest.raises(ConfigError, match=f"known: {', '.join(PROVIDERS)}"):
        parse_config({"providers": {"cohere": {}}})


def test_a_providers_key_comes_from_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for entry in PROVIDERS.values():
        settings = parse_config({"providers": {entry.name: {"api_key_env": "MY_OWN_KEY"}}}).provider(entry.name)
        monkeypatch.setenv(entry.key_env, "default-key")
        monkeypatch.setenv("MY_OWN_KEY", "own-key")
        assert entry.key(settings) == "own-key"
        assert entry.key(parse_config({}).provider(entry.name)) == "default-key"


def test_model_names_and_doctor_read_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    assert model_names() == (*LOCAL_PROVIDERS, *(f"{n}/" for n in PROVIDERS))
    assert all(is_model(f"{n}/some-model") for n in PROVIDERS) and all(is_model(n) for n in LOCAL_PROVIDERS)
    assert not is_model("gpt-4") and not is_model("cohere/command")
    for entry in PROVIDERS.values():  # set or unset, never a value
        monkeypatch.setenv(entry.key_env, "sk-secret-value")
    (row,) = [detail for name, _, detail in doctor_report() if name == "providers"]
    for entry in PROVIDERS.values():
        assert entry.name in row
        assert f"{entry.key_env} set" in row or f"{entry.name} not installed" in row
    assert "sk-secret-value" not in row

"""The one table of model providers (runtime.md §4.1): everything that knows a provider by
name reads it here — building one on first use (runtime/agents.py), the `[providers.NAME]`
keys of `flow.toml` (runtime/config.py), the `flow doctor` line (runtime/doctor.py),
`%provider`'s check and its completion (kernel/magics.py, kernel/assist.py).

Adding a remote provider is one `ProviderEntry` in `PROVIDERS` (plus its client module,
`provider_NAME.py`, and its package in pyproject's `providers` extra, which
tests/runtime/test_provider_table.py checks). The local providers `mock` and `scripted`
are made per run from the program (runtime/providers.py), so they have no entry, only
their names in `LOCAL_PROVIDERS`.

Imports only the standard library and `provider_base` at module level: config.py reads
this table, and a client library is imported only when its provider is built.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flow_kernel.runtime.provider_base import Provider

# Made from the program itself (an agent's `script`, seeded schema-valid values).
LOCAL_PROVIDERS: tuple[str, ...] = ("mock", "scripted")
# The pip extra that installs every remote provider's client (pyproject.toml).
EXTRA = "providers"
# Words a config file may not use for a provider's key: keys are read from the environment only.
KEY_WORDS = ("api_key", "key", "token", "secret")


@dataclass(frozen=True)
class ProviderSettings:
    """One `[providers.NAME]` table of the configuration, validated against its entry."""

    base_url: str | None = None
    api_key_env: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)  # the entry's own keys (`max_tokens`, …)

    @property
    def max_tokens(self) -> int | None:
        value = self.options.get("max_tokens")
        return value if isinstance(value, int) else None


@dataclass(frozen=True)
class Option:
    """A provider's own configuration key beyond `base_url` and `api_key_env`."""

    valid: Callable[[Any], bool]
    expected: str  # what `valid` wants, for the error: "a positive integer"


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


MAX_TOKENS = Option(_positive_int, "a positive integer")


@dataclass(frozen=True)
class ProviderEntry:
    name: str  # the prefix of `model: "NAME/model"`
    # (settings, the key read from the environment or None) -> the provider; imports its client
    build: Callable[[ProviderSettings, str | None], Provider]
    package: str  # the client package: `flow doctor` shows its version
    key_env: str  # the variable holding the key when `api_key_env` is not set
    url_env: str  # the variable holding the endpoint when `base_url` is not set
    options: Mapping[str, Option] = field(default_factory=dict)

    @property
    def config_keys(self) -> tuple[str, ...]:
        return ("base_url", "api_key_env", *self.options)

    def key(self, settings: ProviderSettings) -> str | None:
        """The key, from the variable the settings name, else the default one."""
        return os.environ.get(settings.api_key_env or self.key_env) or None

    def make(self, settings: ProviderSettings) -> Provider:
        return self.build(settings, self.key(settings))

    def doctor_line(self) -> str:
        """The client's version and whether its settings are in the environment (set or
        unset only: never a value)."""
        try:
            version = __import__(self.package).__version__
        except ImportError:
            return f"{self.name} not installed (pip install 'flow-kernel[{EXTRA}]')"
        url, key = self.url_env, self.key_env
        return (f"{self.name} {version} ({url} {'set' if os.environ.get(url) else 'unset'}, "
                f"{key} {'set' if os.environ.get(key) else 'unset'})")


def _openai(settings: ProviderSettings, key: str | None) -> Provider:
    from flow_kernel.runtime.provider_openai import OpenAIProvider

    return OpenAIProvider(settings.base_url, key)


def _anthropic(settings: ProviderSettings, key: str | None) -> Provider:
    from flow_kernel.runtime.provider_anthropic import AnthropicProvider

    if settings.max_tokens is not None:
        return AnthropicProvider(settings.base_url, key, max_tokens=settings.max_tokens)
    return AnthropicProvider(settings.base_url, key)


# The remote providers, by the prefix of `model: "provider/model"`, in the order they are listed.
PROVIDERS: dict[str, ProviderEntry] = {entry.name: entry for entry in (
    # `max_tokens` is accepted and not used, as before this table: a flow.toml written for
    # either provider keeps loading.
    ProviderEntry("openai", _openai, "openai", "OPENAI_API_KEY", "OPENAI_BASE_URL", {"max_tokens": MAX_TOKENS}),
    ProviderEntry("anthropic", _anthropic, "anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
                  {"max_tokens": MAX_TOKENS}),
)}


def model_names() -> tuple[str, ...]:
    """What `%provider` and completion offer: the local providers, then `NAME/` per remote one."""
    return (*LOCAL_PROVIDERS, *(f"{name}/" for name in PROVIDERS))


def is_model(text: str) -> bool:
    """`mock`, `scripted` or `NAME/MODEL` of a provider in the table."""
    provider, slash, _ = text.partition("/")
    return text in LOCAL_PROVIDERS or (bool(slash) and provider in PROVIDERS)


def model_forms() -> tuple[str, ...]:
    """`mock`, `scripted`, `openai/MODEL`, `anthropic/MODEL`: how a model is written, for usage lines."""
    return (*LOCAL_PROVIDERS, *(f"{name}/MODEL" for name in PROVIDERS))

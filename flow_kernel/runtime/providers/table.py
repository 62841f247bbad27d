"""The one table of model providers (runtime.md §4.1): everything that knows a provider by
name reads it here — building one on first use (runtime/agents.py), the `[providers.NAME]`
keys of `flow.toml` (runtime/config.py), the `flow doctor` line (runtime/doctor.py),
`%provider`'s check and its completion (kernel/magics.py, kernel/assist.py).

Adding a remote provider is one `ProviderEntry` in `PROVIDERS` (plus its client module,
`provider_NAME.py`, and its package in pyproject's `providers` extra, which
tests/runtime/test_provider_table.py checks). The local providers `mock` and `scripted`
are made per run from the program (runtime/providers/local.py), so they have no entry, only
their names in `LOCAL_PROVIDERS`.

Imports only the standard library, `errors` and `provider_base` at module level: config.py reads
this table, and a client library is imported only when its provider is built.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flow_kernel.errors import AgentInvocationError
from flow_kernel.runtime.providers.base import Endpoint, Provider, resolve_endpoint

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
    origin: str = ""  # the table it was read from, `/p/flow.toml [providers.openai]`; "" when given in code

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


def _positive_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# A remote provider's resilience (runtime/providers/resilience.py, `Limits`: unset keys keep its defaults)
# and whether it streams (runtime/providers/streaming.py; default true).
RESILIENCE: dict[str, Option] = {
    "requests_per_minute": Option(_positive_number, "a positive number"),
    "tokens_per_minute": Option(_positive_number, "a positive number"),
    "max_in_flight": Option(_positive_int, "a positive integer"),
    "breaker_failures": Option(_positive_int, "a positive integer"),
    "breaker_pause": Option(_positive_number, "a positive number of seconds"),
    "rate_limit_retries": Option(_count, "a non-negative integer"),
}
STREAM = Option(lambda value: isinstance(value, bool), "true or false")


@dataclass(frozen=True)
class ProviderEntry:
    name: str  # the prefix of `model: "NAME/model"`
    # (settings, the key read from the environment or None) -> the provider; imports its client
    build: Callable[[ProviderSettings, str | None], Provider]
    package: str  # the client package: `flow doctor` shows its version
    key_env: str  # the variable holding the key when `api_key_env` is not set
    url_env: str  # the variable holding the endpoint when `base_url` is not set
    options: Mapping[str, Option] = field(default_factory=dict)
    extra: str = EXTRA  # the pip extra that installs its client
    distribution: str = ""  # the client's name on PyPI, when it is not `package`
    # A provider built from the whole configuration (its own tables, e.g. [a2a.NAME]) rather
    # than from its [providers.NAME] settings alone: (FlowConfig) -> the provider.
    configured: Callable[[Any], Provider] | None = None

    @property
    def config_keys(self) -> tuple[str, ...]:
        return ("base_url", "api_key_env", *self.options)

    def endpoint(self, settings: ProviderSettings) -> Endpoint:
        """Where the provider's requests go and which setting said so: `base_url` of the
        settings, else the environment variable `url_env`, else the client's default."""
        return resolve_endpoint(self.name, settings.base_url, settings.origin, self.url_env)

    def key(self, settings: ProviderSettings) -> str | None:
        """The key, from the variable the settings name, else the default one."""
        return os.environ.get(settings.api_key_env or self.key_env) or None

    def make(self, settings: ProviderSettings) -> Provider:
        return self.build(settings, self.key(settings))

    @property
    def install(self) -> str:
        """The command that installs the client: `pip install 'flow-kernel[EXTRA]'`."""
        return f"pip install 'flow-kernel[{self.extra}]'"

    def require_client(self) -> None:
        """Nothing when the client package imports; else the agent-invocation error that
        names the package and the command that installs it (details: provider, package,
        install), before any provider is built or any request is made."""
        try:
            __import__(self.package)
        except ImportError:
            package = self.distribution or self.package
            raise AgentInvocationError(
                f"the `{self.name}` provider needs the `{package}` package, which is not installed here: "
                f"{self.install}", details={"provider": self.name, "package": package, "install": self.install},
            ) from None

    def make_for(self, config: Any) -> Provider:
        """The provider for a run's configuration (a FlowConfig); `require_client` first."""
        self.require_client()
        if self.configured is not None:
            return self.configured(config)
        return self.make(config.provider(self.name))

    def doctor_line(self) -> str:
        """The client's version and whether its settings are in the environment (set or
        unset only: never a value)."""
        from importlib import metadata

        try:
            __import__(self.package)
            version = metadata.version(self.distribution or self.package)
        except (ImportError, metadata.PackageNotFoundError):
            return f"{self.name} not installed ({self.install})"
        url, key = self.url_env, self.key_env
        return (f"{self.name} {version} ({url} {'set' if os.environ.get(url) else 'unset'}, "
                f"{key} {'set' if os.environ.get(key) else 'unset'})")


def _openai(settings: ProviderSettings, key: str | None) -> Provider:
    from flow_kernel.runtime.providers.openai import OpenAIProvider

    return OpenAIProvider(api_key=key, max_tokens=settings.max_tokens, endpoint=PROVIDERS["openai"].endpoint(settings))


def _anthropic(settings: ProviderSettings, key: str | None) -> Provider:
    from flow_kernel.runtime.providers.anthropic import AnthropicProvider

    endpoint = PROVIDERS["anthropic"].endpoint(settings)
    if settings.max_tokens is not None:
        return AnthropicProvider(api_key=key, max_tokens=settings.max_tokens, endpoint=endpoint)
    return AnthropicProvider(api_key=key, endpoint=endpoint)


def _a2a(settings: ProviderSettings, key: str | None) -> Provider:
    """`a2a/NAME` without a configuration's [a2a.*] tables: only [providers.a2a] base_url."""
    from flow_kernel.runtime.remote.a2a import A2AProvider

    return A2AProvider({}, _a2a_default(settings), key)


def _a2a_configured(config: Any) -> Provider:
    """`a2a/NAME`: the agent [a2a.NAME] declares, else the one at [providers.a2a] base_url
    (or $A2A_BASE_URL); the bearer token of agents without their own `token_env` from
    [providers.a2a] api_key_env (or $A2A_TOKEN)."""
    from flow_kernel.runtime.remote.a2a import A2AProvider

    settings = config.provider("a2a")
    entry = PROVIDERS["a2a"]
    return A2AProvider(dict(config.a2a), _a2a_default(settings), entry.key(settings))


def _a2a_default(settings: ProviderSettings) -> Endpoint | None:
    """The agent at [providers.a2a] base_url, else $A2A_BASE_URL; None: there is no default agent."""
    endpoint = PROVIDERS["a2a"].endpoint(settings)
    return endpoint if endpoint.url else None


# The remote providers, by the prefix of `model: "provider/model"`, in the order they are listed.
PROVIDERS: dict[str, ProviderEntry] = {entry.name: entry for entry in (
    # `max_tokens` caps every request's output when set (as `max_completion_tokens` to OpenAI's
    # own API, as both names to any other endpoint: provider_openai.py), and is what a `cost`
    # limit reserves for each attempt's output (else DEFAULT_MAX_OUTPUT_TOKENS, lang/prices.py),
    # which a cost-limited request then carries as its cap.
    ProviderEntry("openai", _openai, "openai", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                  {"max_tokens": MAX_TOKENS, "stream": STREAM, **RESILIENCE}),
    ProviderEntry("anthropic", _anthropic, "anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
                  {"max_tokens": MAX_TOKENS, "stream": STREAM, **RESILIENCE}),
    # A remote A2A agent as the model (runtime/remote/a2a.py, docs/protocols.md).
    ProviderEntry("a2a", _a2a, "a2a", "A2A_TOKEN", "A2A_BASE_URL", extra="protocols", distribution="a2a-sdk",
                  configured=_a2a_configured),
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

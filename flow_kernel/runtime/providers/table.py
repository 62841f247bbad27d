"""The one table of model providers (runtime.md §4.1): everything that knows a provider by
name reads it here — building one (runtime/agents/), the `[providers.NAME]` keys of
`flow.toml` (runtime/config.py), the `flow doctor` line (runtime/doctor.py), `%provider`'s
check and its completion (frontend/magics.py, kernel/assist.py), the variables a client reads
its key and endpoint from.

Every provider is one `ProviderEntry` in `PROVIDERS`, the local ones (`mock`, `scripted`:
runtime/providers/local.py) like the remote ones; what sets a kind apart is a property of
its entry (`local`, `calls_tools`), never a check of its name. Adding a remote provider is
one entry (plus its client module in runtime/providers/ and its package in pyproject's
`providers` extra, which tests/runtime/test_provider_table.py checks).

The table imports no client: an entry names its builder (`module:function`, as entry points
do), imported only when its provider is built, and the client modules read the table (their
variables, `ProviderSetup`). So config.py can read the table without any client library.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flow_kernel.errors import AgentInvocationError
from flow_kernel.runtime.providers.base import Endpoint, Provider, resolve_endpoint

if TYPE_CHECKING:
    from flow_kernel.lang import ast

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
class ProviderSetup:
    """What a provider is built from: its entry, the run's configuration (a FlowConfig) and
    the program's agent declarations by name (the scripted provider reads their scripts)."""

    entry: ProviderEntry
    config: Any
    agents: Mapping[str, ast.AgentDecl] = field(default_factory=dict)

    @property
    def settings(self) -> ProviderSettings:
        """The entry's `[providers.NAME]` table of the configuration."""
        settings: ProviderSettings = self.config.provider(self.entry.name)
        return settings

    @property
    def key(self) -> str | None:
        return self.entry.key(self.settings)

    @property
    def endpoint(self) -> Endpoint:
        return self.entry.endpoint(self.settings)


@dataclass(frozen=True)
class ProviderEntry:
    name: str  # `model: "NAME/model"`; a local provider's model is its name alone
    # `module:function`, a (ProviderSetup) -> Provider; imported only when the provider is built
    builder: str
    package: str = ""  # the client package (`flow doctor` shows its version); "": it needs none
    key_env: str = ""  # the variable holding the key when `api_key_env` is not set
    url_env: str = ""  # the variable holding the endpoint when `base_url` is not set
    options: Mapping[str, Option] = field(default_factory=dict)
    extra: str = EXTRA  # the pip extra that installs its client
    distribution: str = ""  # the client's name on PyPI, when it is not `package`
    # Made from the program itself when a run starts: no client, key or network; free; no
    # resilience guard; its attempts stay in the task that awaits them.
    local: bool = False
    calls_tools: bool = True  # False: its replies never call tools (an agent's tools need no implementation)

    @property
    def config_keys(self) -> tuple[str, ...]:
        return ("base_url", "api_key_env", *self.options)

    def endpoint(self, settings: ProviderSettings) -> Endpoint:
        """Where the provider's requests go and which setting said so: `base_url` of the
        settings, else the environment variable `url_env`, else the client's default."""
        return resolve_endpoint(self.name, settings.base_url, settings.origin, self.url_env)

    def key(self, settings: ProviderSettings) -> str | None:
        """The key, from the variable the settings name, else the default one."""
        variable = settings.api_key_env or self.key_env
        return (os.environ.get(variable) or None) if variable else None

    @property
    def install(self) -> str:
        """The command that installs the client: `pip install 'flow-kernel[EXTRA]'`."""
        return f"pip install 'flow-kernel[{self.extra}]'"

    def require_client(self) -> None:
        """Nothing when the client package imports (or none is needed); else the
        agent-invocation error that names the package and the command that installs it
        (details: provider, package, install), before any provider is built or any request
        is made."""
        if not self.package:
            return
        try:
            __import__(self.package)
        except ImportError:
            package = self.distribution or self.package
            raise AgentInvocationError(
                f"the `{self.name}` provider needs the `{package}` package, which is not installed here: "
                f"{self.install}", details={"provider": self.name, "package": package, "install": self.install},
            ) from None

    def make_for(self, config: Any, agents: Mapping[str, ast.AgentDecl] | None = None) -> Provider:
        """The provider for a run's configuration (a FlowConfig) and program (its agent
        declarations by name); `require_client` first."""
        self.require_client()
        return self.build(ProviderSetup(self, config, agents or {}))

    @property
    def build(self) -> Callable[[ProviderSetup], Provider]:
        """The builder the entry names, imported."""
        module, _, function = self.builder.partition(":")
        built: Callable[[ProviderSetup], Provider] = getattr(importlib.import_module(module), function)
        return built

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


# Every provider, by the prefix of `model: "provider/model"` (a local one: its whole name),
# the local ones first, in the order they are listed.
PROVIDERS: dict[str, ProviderEntry] = {entry.name: entry for entry in (
    # Seeded schema-valid values; it calls each of a call's tools once (local.py).
    ProviderEntry("mock", "flow_kernel.runtime.providers.local:build_mock", local=True),
    # An agent's `script`; its replies never call tools.
    ProviderEntry("scripted", "flow_kernel.runtime.providers.local:build_scripted", local=True, calls_tools=False),
    # `max_tokens` caps every request's output when set (as `max_completion_tokens` to OpenAI's
    # own API, as both names to any other endpoint: openai.py), and is what a `cost` limit
    # reserves for each attempt's output (else DEFAULT_MAX_OUTPUT_TOKENS, lang/prices.py),
    # which a cost-limited request then carries as its cap.
    ProviderEntry("openai", "flow_kernel.runtime.providers.openai:build", "openai", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                  {"max_tokens": MAX_TOKENS, "stream": STREAM, **RESILIENCE}),
    ProviderEntry("anthropic", "flow_kernel.runtime.providers.anthropic:build", "anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
                  {"max_tokens": MAX_TOKENS, "stream": STREAM, **RESILIENCE}),
    # A remote A2A agent as the model (runtime/remote/a2a.py, docs/protocols.md).
    ProviderEntry("a2a", "flow_kernel.runtime.remote.a2a:build", "a2a", "A2A_TOKEN", "A2A_BASE_URL", extra="protocols", distribution="a2a-sdk"),
)}
# The providers a configuration may have a `[providers.NAME]` table for, and `flow doctor` checks.
REMOTE_PROVIDERS: dict[str, ProviderEntry] = {name: entry for name, entry in PROVIDERS.items() if not entry.local}
LOCAL_PROVIDERS: tuple[str, ...] = tuple(name for name, entry in PROVIDERS.items() if entry.local)


def is_local(name: str) -> bool:
    """Whether `name` is a local provider of the table (an unknown name is not)."""
    entry = PROVIDERS.get(name)
    return entry is not None and entry.local


def is_remote(name: str) -> bool:
    """Whether `name` is a remote provider of the table (an unknown name is not)."""
    entry = PROVIDERS.get(name)
    return entry is not None and not entry.local


def calls_tools(name: str) -> bool:
    """Whether the provider's replies may call tools (an unknown one, given by an embedder,
    may)."""
    entry = PROVIDERS.get(name)
    return entry is None or entry.calls_tools


def model_names() -> tuple[str, ...]:
    """What `%provider` and completion offer: the local providers, then `NAME/` per remote one."""
    return (*LOCAL_PROVIDERS, *(f"{name}/" for name in REMOTE_PROVIDERS))


def is_model(text: str) -> bool:
    """`mock`, `scripted` or `NAME/MODEL` of a provider in the table."""
    provider, slash, _ = text.partition("/")
    return is_local(text) or (bool(slash) and is_remote(provider))


def model_forms() -> tuple[str, ...]:
    """`mock`, `scripted`, `openai/MODEL`, `anthropic/MODEL`: how a model is written, for usage lines."""
    return (*LOCAL_PROVIDERS, *(f"{name}/MODEL" for name in REMOTE_PROVIDERS))

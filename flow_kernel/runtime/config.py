"""Session configuration (runtime.md §4.1): `flow.toml` beside the notebook or program
(or in a parent folder), else `[tool.flow]` in `pyproject.toml`, else the defaults.

```toml
default_model = "openai/gpt-4o-mini"   # what `model: "default"` means
operator = "auto-deny"                 # the operator policy when none is given
allow_run = ["wc", {git = ["status", "log *"]}]  # executables `run` may start (git: these arguments only)

[providers.openai]                     # any OpenAI-compatible endpoint
base_url = "http://localhost:11434/v1"
api_key_env = "OLLAMA_API_KEY"         # the variable holding the key (never the key itself)

[providers.anthropic]
max_tokens = 2048

[models]                               # what `model: "for:<purpose>"` means (lang/purposes.py)
deep-judgement = "anthropic/claude-sonnet-4-5"
high-volume-mechanical = "openai/gpt-4o-mini"
```
Keys live in the environment only: a config file that holds one is refused, so that a
committed `flow.toml` cannot leak it.

A discovered configuration is content, not the person: it can point a provider's
`base_url` at any server with `api_key_env` naming any variable (the key travels as a
bearer token), set `operator = "auto-approve"` and `allow_run = ["sh"]`. So it applies only
when the person granted it (runtime/policy/trust.py): the folder is trusted with `flow trust`
and the file is unchanged since, or `FLOW_ALLOW` grants `config:DIR`. Otherwise nothing of it
applies and `FlowConfig.ignored` names it, for the caller's warning. A path the person gives
(`Session(config=PATH)`, `flow run --config PATH`) is read with `load_config`: that is a grant.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flow_kernel.lang.prices import Price
from flow_kernel.lang.purposes import PURPOSES
from flow_kernel.runtime.policy.processes import entries_from_config
from flow_kernel.runtime.providers.table import (
    KEY_WORDS,
    LOCAL_PROVIDERS,
    REMOTE_PROVIDERS,
    ProviderSettings,
)
from flow_kernel.runtime.remote.config import (
    A2AAgentSettings,
    McpServerSettings,
    parse_a2a,
    parse_mcp,
)

if TYPE_CHECKING:
    from flow_kernel.runtime.policy.trust import Trust



class ConfigError(ValueError):
    """A configuration file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class FlowConfig:
    default_model: str | None = None
    operator: str | None = None
    allow_run: tuple[str, ...] = ()
    providers: dict[str, ProviderSettings] = field(default_factory=dict)
    path: Path | None = None  # where it was read from
    ignored: Path | None = None  # a configuration found but not applied: its folder is not trusted
    models: dict[str, str] = field(default_factory=dict)  # [models]: purpose -> "provider/model" (lang/purposes.py)
    mcp: dict[str, McpServerSettings] = field(default_factory=dict)  # [mcp.NAME]: servers lending tools
    a2a: dict[str, A2AAgentSettings] = field(default_factory=dict)  # [a2a.NAME]: remote agents, `a2a/NAME`
    prices: dict[str, Price] = field(default_factory=dict)  # [prices]: "provider/model" -> Price (lang/prices.py)

    def provider(self, name: str) -> ProviderSettings:
        return self.providers.get(name, ProviderSettings())

    def ignored_warning(self) -> str | None:
        """What to tell the person when a configuration was found and not applied."""
        if self.ignored is None:
            return None
        return (f"{self.ignored} is not trusted, so none of it applies (providers' endpoints and key variables, "
                f"operator, allow_run): run `flow trust {self.ignored.parent}` to apply it")


def config_folder(start: Path | str) -> Path:
    """The folder of a notebook or program given as a folder or a file, resolved."""
    folder = Path(start).resolve()
    return folder if folder.is_dir() else folder.parent


def find_config(start: Path | str, *, trust: Trust | None = None) -> FlowConfig:
    """The configuration that applies to a notebook or program in `start` (a folder or a file):
    the nearest `flow.toml`, else the nearest `pyproject.toml` with `[tool.flow]` — if the
    person granted it (`trust`, by default the person's store and `FLOW_ALLOW` for that
    folder); else the defaults, with `ignored` naming the file."""
    from flow_kernel.runtime.policy.trust import Capability, Trust, applied_config_file

    folder = config_folder(start)
    found = applied_config_file(folder)
    if found is None:
        return FlowConfig()
    path = found[0]
    if trust is None:
        trust = Trust(folder)
    if not trust.granted(Capability.of("config", str(path.parent), folder)):
        return FlowConfig(ignored=path)
    return load_config(path)


def load_config(path: Path | str) -> FlowConfig:
    """A `flow.toml`, or the `[tool.flow]` table of a file named `pyproject.toml`."""
    path = Path(path)
    table = _read(path)
    if path.name == "pyproject.toml":
        table = table.get("tool", {}).get("flow")
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: no [tool.flow] table")
    return parse_config(table, path)


def parse_config(table: dict[str, Any], path: Path | None = None) -> FlowConfig:
    where = f"{path}" if path is not None else "the configuration"
    known = {"default_model", "operator", "allow_run", "providers", "mcp", "a2a"}
    known.add("models")
    known.add("prices")
    for key in table:
        if key not in known:
            raise ConfigError(f"{where}: unknown key `{key}` (known: {', '.join(sorted(known))})")
    default_model = _opt_str(table, "default_model", where)
    if default_model is not None and "/" not in default_model and default_model not in LOCAL_PROVIDERS:
        raise ConfigError(f"{where}: `default_model` must be \"provider/model\", \"mock\" or \"scripted\", "
                          f"not {default_model!r}")
    try:  # names, or names with pinned argument patterns (runtime/policy/processes.py)
        allow = entries_from_config(table.get("allow_run", []), where)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    providers: dict[str, ProviderSettings] = {}
    raw_providers = table.get("providers", {})
    if not isinstance(raw_providers, dict):
        raise ConfigError(f"{where}: `providers` must be a table")
    for name, raw in raw_providers.items():
        if name not in REMOTE_PROVIDERS:  # the provider table (runtime/providers/table.py)
            raise ConfigError(f"{where}: unknown provider `{name}` (known: {', '.join(REMOTE_PROVIDERS)})")
        if not isinstance(raw, dict):
            raise ConfigError(f"{where}: `providers.{name}` must be a table")
        table_name = f"tool.flow.providers.{name}" if path is not None and path.name == "pyproject.toml" \
            else f"providers.{name}"
        providers[name] = _provider(name, raw, where, f"{where} [{table_name}]")
    try:  # other agents' doors (runtime/remote/config.py)
        mcp = parse_mcp(table.get("mcp", {}), where)
        a2a = parse_a2a(table.get("a2a", {}), where)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return FlowConfig(default_model, _opt_str(table, "operator", where), tuple(allow), providers, path=path,
                      mcp=mcp, a2a=a2a,
                      models=parse_models(table.get("models", {}), where),
                      prices=parse_prices(table.get("prices", {}), where))


def parse_prices(raw: Any, where: str) -> dict[str, Price]:
    """`[prices]`: `"provider/model" = { input = 0.15, output = 0.6 }`, per million tokens in
    the currency of the table; overrides or extends the built-in table (lang/prices.py)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: `prices` must be a table")
    prices: dict[str, Price] = {}
    for model, entry in raw.items():
        if not isinstance(entry, dict) or set(entry) != {"input", "output"} or not all(
                isinstance(entry[k], int | float) and not isinstance(entry[k], bool) and entry[k] >= 0
                for k in ("input", "output")):
            raise ConfigError(f"{where}: `prices.\"{model}\"` must be {{ input = N, output = N }}: prices per million "
                              "tokens, zero or more")
        prices[model] = Price(float(entry["input"]), float(entry["output"]))
    return prices


def parse_models(raw: Any, where: str) -> dict[str, str]:
    """`[models]`: one model for each purpose a program may ask for (`model: "for:…"`), each a
    "provider/model" of the one provider table, or "mock"/"scripted"."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: `models` must be a table")
    models: dict[str, str] = {}
    for purpose, model in raw.items():
        if purpose not in PURPOSES:
            raise ConfigError(f"{where}: unknown purpose `models.{purpose}` (known: {', '.join(PURPOSES)})")
        provider = model.partition("/")[0] if isinstance(model, str) else ""
        if not isinstance(model, str) or not (model in LOCAL_PROVIDERS or ("/" in model and provider in REMOTE_PROVIDERS)):
            raise ConfigError(f"{where}: `models.{purpose}` must be \"provider/model\" with a provider of "
                              f"{', '.join(REMOTE_PROVIDERS)}, or \"mock\" or \"scripted\"")
        models[purpose] = model
    return models


def _provider(name: str, raw: dict[str, Any], where: str, origin: str) -> ProviderSettings:
    entry = REMOTE_PROVIDERS[name]
    for key in raw:
        if key in KEY_WORDS:
            raise ConfigError(f"{where}: `providers.{name}.{key}`: keys are not read from files; put the key in "
                              f"an environment variable and name it with `api_key_env` (default {entry.key_env})")
        if key not in entry.config_keys:
            raise ConfigError(f"{where}: unknown key `providers.{name}.{key}` (known: {', '.join(entry.config_keys)})")
    options: dict[str, Any] = {}
    for key, option in entry.options.items():
        if raw.get(key) is not None:
            if not option.valid(raw[key]):
                raise ConfigError(f"{where}: `providers.{name}.{key}` must be {option.expected}")
            options[key] = raw[key]
    return ProviderSettings(_opt_str(raw, "base_url", where), _opt_str(raw, "api_key_env", where), options, origin)


def _opt_str(table: dict[str, Any], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{where}: `{key}` must be a string")
    return value


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None

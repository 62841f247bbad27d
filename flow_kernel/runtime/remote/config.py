"""The `[mcp.NAME]` and `[a2a.NAME]` tables of `flow.toml` (docs/protocols.md): other agents'
doors that a program may use, declared by the person.

```toml
[mcp.docs]                          # an MCP server started as a child over stdio
command = ["{python}", "docs_server.py"]  # {python}: the Python Flow runs in
timeout_ms = 10000                  # per tool call; past it the model gets {"error": …}
no_approval = ["search"]            # tools the person lets run unasked (see below)

[mcp.tickets]                       # an MCP server over streamable HTTP
url = "http://127.0.0.1:8765/mcp"
token_env = "TICKETS_TOKEN"         # the variable holding its bearer token (never the token)

[a2a.reviewer]                      # a remote A2A agent: `model: "a2a/reviewer"`
url = "http://127.0.0.1:9000"
token_env = "REVIEWER_TOKEN"
skill = "review"                    # which of its skills (sent as the message's metadata `skill`)
```

A server or agent declared here is a capability: it applies only when the configuration
does (a trusted folder, `FLOW_ALLOW=config:DIR`, or a path the person gave — config.py),
so a program or a cloned `flow.toml` never lends itself a server. `no_approval` is the one
way to run a tool unasked whose MCP annotations (untrusted hints from the server) say it
may be destructive or say nothing; the annotations themselves only ever add approvals.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# Words a config file may not use: secrets are read from the environment only.
_SECRET_WORDS = ("token", "api_key", "key", "secret", "password", "headers")
DEFAULT_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class McpServerSettings:
    name: str
    command: tuple[str, ...] = ()  # stdio: the executable and its arguments
    url: str | None = None  # streamable HTTP
    token_env: str | None = None
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    no_approval: frozenset[str] = frozenset()
    cwd: str | None = None  # stdio: the child's folder (default: the configuration's)

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"

    def describe(self) -> str:
        return " ".join(self.command) if self.command else str(self.url)


@dataclass(frozen=True)
class A2AAgentSettings:
    name: str
    url: str
    token_env: str | None = None
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    skill: str | None = None  # the skill to ask for (message metadata `skill`), when the agent has several
    origin: str = ""  # the setting its url came from, `/p/flow.toml [a2a.NAME] url`, for messages


def _tables(raw_tables: Any, section: str, what: str, known: tuple[str, ...],
            where: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Each `[section.NAME]` table as (NAME, "section.NAME", its keys), opened the same way for
    MCP servers and A2A agents: a table of tables (`what` names them in the error), no
    secret, only `known` keys."""
    if not isinstance(raw_tables, dict):
        raise ValueError(f"{where}: `{section}` must be a table of {what} ([{section}.NAME])")
    for name, raw in raw_tables.items():
        table = f"{section}.{name}"
        if not isinstance(raw, dict):
            raise ValueError(f"{where}: `{table}` must be a table")
        for key in raw:
            if key in _SECRET_WORDS:
                raise ValueError(f"{where}: `{table}.{key}`: secrets are not read from files; put it in an "
                                 "environment variable and name it with `token_env`")
        for key in raw:
            if key not in known:
                raise ValueError(f"{where}: unknown key `{table}.{key}` (known: {', '.join(known)})")
        yield name, table, raw


def _timeout(raw: dict[str, Any], where: str, table: str) -> int:
    value = raw.get("timeout_ms", DEFAULT_TIMEOUT_MS)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{where}: `{table}.timeout_ms` must be a positive integer")
    return value


def _opt_str(raw: dict[str, Any], key: str, where: str, table: str) -> str | None:
    value = raw.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError(f"{where}: `{table}.{key}` must be a non-empty string")
    return value


def _url(raw: dict[str, Any], where: str, table: str) -> str | None:
    url = _opt_str(raw, "url", where, table)
    if url is not None and not url.startswith(("http://", "https://")):
        raise ValueError(f"{where}: `{table}.url` must be an http:// or https:// URL")
    return url


def parse_mcp(raw_servers: Any, where: str) -> dict[str, McpServerSettings]:
    servers: dict[str, McpServerSettings] = {}
    known = ("command", "url", "token_env", "timeout_ms", "no_approval", "cwd")
    for name, table, raw in _tables(raw_servers, "mcp", "servers", known, where):
        command = raw.get("command", [])
        if not isinstance(command, list) or not all(isinstance(c, str) and c for c in command):
            raise ValueError(f"{where}: `{table}.command` must be a list of strings (the executable, then its arguments)")
        url = _url(raw, where, table)
        if bool(command) == bool(url):
            raise ValueError(f"{where}: `{table}` needs exactly one of `command` (stdio) and `url` (streamable HTTP)")
        no_approval = raw.get("no_approval", [])
        if not isinstance(no_approval, list) or not all(isinstance(t, str) for t in no_approval):
            raise ValueError(f"{where}: `{table}.no_approval` must be a list of tool names")
        servers[name] = McpServerSettings(name, tuple(command), url, _opt_str(raw, "token_env", where, table),
                                          _timeout(raw, where, table), frozenset(no_approval),
                                          _opt_str(raw, "cwd", where, table))
    return servers


def parse_a2a(raw_agents: Any, where: str) -> dict[str, A2AAgentSettings]:
    agents: dict[str, A2AAgentSettings] = {}
    for name, table, raw in _tables(raw_agents, "a2a", "agents", ("url", "token_env", "timeout_ms", "skill"), where):
        url = _url(raw, where, table)
        if url is None:
            raise ValueError(f"{where}: `{table}` needs `url` (the agent's base URL; its card is at "
                             "/.well-known/agent-card.json)")
        agents[name] = A2AAgentSettings(name, url, _opt_str(raw, "token_env", where, table), _timeout(raw, where, table),
                                        _opt_str(raw, "skill", where, table), f"{where} [{table}] url")
    return agents

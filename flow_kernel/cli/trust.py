"""`flow trust`: the person trusts a folder, lists what is trusted, revokes it.

`flow trust [DIR]` records DIR (default: the working directory) in the person's trust store
(runtime/policy/trust.py) with a hash of the configuration that applies there; from then on the
content in DIR and below — its flow.toml, its notebooks and `.flow` files — gets what it
asks for, until that configuration changes (any edit revokes it) or `flow trust --revoke DIR`.
Exit 0 on success, 1 when `--revoke` names something that was not trusted, 2 on a usage
error (not a folder, a configuration that cannot be read).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from flow_kernel.cli.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, print_error
from flow_kernel.terminal_text import terminal_safe  # folder and notebook names may hold anything


def add_command(commands: Any) -> None:
    trust = commands.add_parser(
        "trust", help="trust a folder: its flow.toml and content get what they ask for",
        description="Trust DIR (default: the working directory): the flow.toml or [tool.flow] that applies "
        "there is applied, and notebooks and Flow files in it get the capabilities they ask for "
        "(executables, tool files, operator policies, paths). Any edit of that configuration revokes it.")
    trust.add_argument("folder", metavar="DIR", nargs="?", help="the folder to trust (default: .)")
    trust.add_argument("--list", action="store_true", help="list trusted folders and notebooks' remembered grants")
    trust.add_argument("--revoke", metavar="PATH",
                       help="stop trusting folder PATH, or forget the remembered grants of notebook PATH")
    trust.set_defaults(handler=cmd_trust)


def cmd_trust(args: argparse.Namespace) -> int:
    from flow_kernel.runtime.policy.trust import TrustStore

    store = TrustStore()
    try:
        if args.list:
            if args.folder or args.revoke:
                raise ValueError("--list takes no folder")
            return _list(store)
        if args.revoke:
            if args.folder:
                raise ValueError("give the folder to --revoke only")
            return _revoke(store, Path(args.revoke))
        return _trust(store, Path(args.folder or "."))
    except ValueError as exc:
        print_error(str(exc), command="trust")
        return EXIT_USAGE


def _trust(store: Any, folder: Path) -> int:
    from flow_kernel.runtime.config import ConfigError, load_config
    from flow_kernel.runtime.policy.trust import applied_config_file

    if not folder.is_dir():
        raise ValueError(f"{folder}: not a folder")
    found = applied_config_file(folder.resolve())
    summary = "no flow.toml or [tool.flow] applies there"
    if found is not None:
        try:  # show what is being trusted, and refuse a file that would not load anyway
            config = load_config(found[0])
        except ConfigError as exc:
            raise ValueError(f"not trusted: {exc}") from None
        summary = f"configuration {found[0]}:\n" + "\n".join(f"  {line}" for line in _describe(config))
    entry = store.trust(folder)
    sys.stdout.write(terminal_safe(f"trusted {entry.folder}\n{summary}\n"
                                   "Notebooks and Flow files in it now get the capabilities they ask for. Any edit of "
                                   f"that configuration revokes this; `flow trust --revoke {entry.folder}` does too.\n"))
    return EXIT_OK


def _describe(config: Any) -> list[str]:
    lines = [f"default_model = {config.default_model!r}"] if config.default_model else []
    if config.operator:
        lines.append(f"operator = {config.operator!r}")
    if config.allow_run:
        lines.append(f"allow_run = {list(config.allow_run)!r}")
    for name, settings in sorted(config.providers.items()):
        if settings.base_url:
            lines.append(f"providers.{name}.base_url = {settings.base_url!r} (agent prompts are sent there)")
        if settings.api_key_env:
            lines.append(f"providers.{name}.api_key_env = {settings.api_key_env!r} (that variable is sent as the key)")
    for name, server in sorted(config.mcp.items()):  # runtime/remote/config.py
        how = f"starts {' '.join(server.command)}" if server.command else f"connects to {server.url}"
        lines.append(f"mcp.{name}: {how} (its tools are lent to agents)"
                     + (f"; {server.token_env!r} is sent as its token" if server.token_env else "")
                     + (f"; runs {', '.join(sorted(server.no_approval))} unasked" if server.no_approval else ""))
    for name, agent in sorted(config.a2a.items()):
        lines.append(f"a2a.{name}: {agent.url} (agent prompts are sent there)"
                     + (f"; {agent.token_env!r} is sent as its token" if agent.token_env else ""))
    return lines or ["(sets nothing)"]


def _list(store: Any) -> int:
    entries = store.entries()
    documents = store.documents()
    if not entries and not documents:
        sys.stdout.write(f"nothing is trusted ({store.path})\n")
        return EXIT_OK
    for entry in entries:
        state = "trusted" if entry.current() else "changed since trusted: not applied (run `flow trust` again)"
        config = entry.config if entry.config is not None else "no configuration"
        sys.stdout.write(terminal_safe(f"{entry.folder}  {state}  [{config}; {entry.trusted_at}]") + "\n")
    for document, words in sorted(documents.items()):
        sys.stdout.write(terminal_safe(f"{document}  allowed for this notebook: {' '.join(words)}") + "\n")
    return EXIT_OK


def _revoke(store: Any, path: Path) -> int:
    revoked = store.revoke(path)
    forgot = store.forget(path)
    if not revoked and not forgot:
        print_error(f"{path.resolve()} was not trusted", command="trust")
        return EXIT_FAILED
    what = "trust in" if revoked else "the remembered grants of"
    sys.stdout.write(terminal_safe(f"revoked {what} {path.resolve()}") + "\n")
    return EXIT_OK


__all__ = ["add_command", "cmd_trust"]

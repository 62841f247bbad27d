"""What every `flow` command shares: exit codes, `UsageError`, the error printer, colour,
file names as the user would write them, and the loader that checks a file named on the
command line (with the person's grants for what it `use`s).

Exit codes: 0 success (warnings and infos allowed), 1 the source has errors, a run failed,
or the thing asked for does not exist, 2 a usage error (bad arguments, a missing or
unreadable file; for `flow run`, compile errors too). Problems with the user's input are
messages, never tracebacks. Everything written to the terminal goes through terminal_text:
names and messages hold anything, never terminal commands.

The language is imported inside the functions, so `flow explain` works without it.
"""

from __future__ import annotations

import os
import sys
from argparse import Namespace
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from flow_kernel.terminal_text import terminal_safe

if TYPE_CHECKING:
    from flow_kernel.files import FileSystemLoader
    from flow_kernel.lang import CheckResult
    from flow_kernel.runtime.config import FlowConfig
    from flow_kernel.runtime.policy.trust import Trust

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Bad input to the CLI itself: printed as `flow: error: …`, exit 2."""


def print_error(message: str, *, command: str | None = None) -> None:
    """`flow COMMAND: error: MESSAGE` on stderr."""
    prog = f"flow {command}" if command else "flow"
    print(terminal_safe(f"{prog}: error: {message}"), file=sys.stderr)


def print_warning(message: str, *, command: str | None = None) -> None:
    """`flow COMMAND: warning: MESSAGE` on stderr: the command goes on."""
    prog = f"flow {command}" if command else "flow"
    print(terminal_safe(f"{prog}: warning: {message}"), file=sys.stderr)


def warn_unpinned(allow_run: Iterable[str], *, command: str) -> None:
    """A warning for each executable the run may start with any arguments (processes.py)."""
    from flow_kernel.runtime.policy.processes import unpinned, unpinned_warning

    for name in unpinned(allow_run):
        print_warning(unpinned_warning(name), command=command)


def wants_color(stream: TextIO) -> bool:
    if "NO_COLOR" in os.environ:
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def display_name(name: str) -> str:
    """A file name as the user would write it: relative to the working directory when
    the file is under it, absolute otherwise."""
    if not os.path.isabs(name):
        return name
    try:
        relative = os.path.relpath(name)
    except ValueError:  # another drive on Windows
        return name
    return name if relative.startswith(os.pardir) else relative


def load_file(loader: FileSystemLoader, path: str, models: Mapping[str, str] | None = None,
              mcp_servers: Iterable[str] | None = None) -> CheckResult:
    """Check one file named on the command line; `UsageError` if it cannot be read. `models`
    is the `[models]` table that applies (by default, of the configuration found for the
    file, if the person trusts it): a `model: "for:…"` it does not set is F4026. `mcp_servers`
    likewise: the `[mcp.NAME]` names that apply; a tool `from mcp` another server is F4021."""
    from flow_kernel.files import SourceReadError
    from flow_kernel.lang import check

    if os.path.isdir(path):
        raise UsageError(f"{path}: is a directory, not a Flow file")
    if models is None:
        models = _models_for(path)
    try:
        source = loader(path, None)
        if source is None:
            raise UsageError(f"{path}: no such file")
        servers = _mcp_servers_for(path) if mcp_servers is None else mcp_servers
        return check(source, loader=loader, models=models, mcp_servers=servers)
    except SourceReadError as e:  # the file itself, or a file it `use`s
        raise UsageError(f"{display_name(e.path)}: {e.reason}") from None


def _models_for(path: str) -> Mapping[str, str]:
    from flow_kernel.runtime.config import ConfigError, config_folder, find_config

    try:
        return find_config(config_folder(path)).models
    except ConfigError:  # a broken flow.toml is `flow run`'s to report; here it sets no model
        return {}


def _mcp_servers_for(path: str) -> list[str]:
    """The `[mcp.NAME]` servers of the configuration that applies to the file (F4021)."""
    from flow_kernel.runtime.config import ConfigError, config_folder, find_config

    try:
        return list(find_config(config_folder(path)).mcp)
    except ConfigError:  # a broken flow.toml is `flow run`'s to report; here it declares no server
        return []


def flag_trust(args: Namespace, folder: Path, *, document: Path | None = None, asker: str = "This file") -> Trust:
    """The grants of one command: its flags (runtime/policy/grants.py; paths as typed, relative
    to the working directory: `--allow-run`, `--allow-path`, `--record`, `--replay`,
    `--operator`, `--config`, those the command has), `FLOW_ALLOW`, and `flow trust`;
    `folder` (the file's) needs none."""
    from flow_kernel.runtime.policy.grants import flag_grants
    from flow_kernel.runtime.policy.trust import Trust

    paths = [*getattr(args, "allow_path", []), getattr(args, "record", None), getattr(args, "replay", None)]
    grants = flag_grants(Path.cwd(), allow_run=getattr(args, "allow_run", []), paths=paths,
                         operator=getattr(args, "operator", None), config=getattr(args, "config", None))
    return Trust(folder, grants=grants, document=document, asker=asker)


def flag_config(args: Namespace, folder: Path, trust: Trust) -> FlowConfig:
    """The configuration of one command: the file `--config` names (granted by the flag), else
    the one found for `folder`, applied only where the person trusts it (runtime/config.py)."""
    from flow_kernel.runtime.config import find_config, load_config

    return load_config(args.config) if getattr(args, "config", None) else find_config(folder, trust=trust)


def guarded_loader(path: str, allow_paths: Sequence[str] = ()) -> FileSystemLoader:
    """A loader for FILE's `use`s: files outside FILE's folder need a grant (runtime/policy/trust.py:
    `--allow-path`, `FLOW_ALLOW`, `flow trust`), else F2011 says how to grant them."""
    from flow_kernel.files import FileSystemLoader
    from flow_kernel.runtime.config import config_folder

    trust = flag_trust(Namespace(allow_path=list(allow_paths)), config_folder(path))
    return FileSystemLoader(guard=trust.use_guard())


__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "UsageError", "display_name", "flag_config", "flag_trust", "guarded_loader", "load_file",
           "print_error", "wants_color", "warn_unpinned"]

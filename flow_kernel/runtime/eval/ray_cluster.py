"""The local Ray cluster that `--executor ray` starts, private to the person who starts it
(docs/security.md, "Ray"):

- **Loopback only.** Ray binds its servers (GCS, raylet, workers, the runtime-env agent)
  to every interface unless the node's address is 127.0.0.1, and `ray.init` turns a
  127.0.0.1 it is given into the machine's network address. It keeps the loopback
  address only where it does not support clusters (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER
  off): with that switch off while the cluster starts (`_loopback`), the node is
  127.0.0.1 and every server binds it. No dashboard.
- **Private files.** Ray's `_temp_dir` (sessions, logs, sockets, spilled objects) is
  `ray` in a folder Flow makes 0700 and Ray never changes: Ray sets its own folders
  0777 (again in each worker that starts), and nobody else can reach them. Its processes
  start with umask 077, and what Ray made is set to 0700/0600 once it has started and
  again once the eval's actors have (`keep_private`). The token (token auth on) is a
  0600 file of Flow's folder named by RAY_AUTH_TOKEN_PATH, never ~/.ray/auth_token.
- **No credentials in the cluster's environment.** The raylet's environment is what its
  workers inherit, and it is the driver's at the start: the cluster starts without every
  variable whose name says it holds a secret and every variable a provider reads its key
  from (`cluster_environ`). The keys the eval's own models read go to its actors alone,
  as their runtime_env (`actor_options`, from `key_names`).

A cluster this process joined (`--ray-address`, or one started here by other code) is
not this one: nothing of the above holds there, and no key is sent to it. One that listens
on loopback only is joined in Ray's single-node mode (`join`).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import ipaddress
import os
import re
import secrets
import shutil
import socket
import stat
import tempfile
import threading
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flow_kernel.lang import ast
from flow_kernel.lang.compiler import Compiled
from flow_kernel.lang.literals import NOT_LITERAL, literal_value
from flow_kernel.lang.purposes import by_purpose, purpose_of
from flow_kernel.runtime.config import FlowConfig
from flow_kernel.runtime.providers.table import LOCAL_PROVIDERS, REMOTE_PROVIDERS

# A variable whose name says it holds a secret (OPENAI_API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, …).
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE", re.IGNORECASE)
# Ray's switch that keeps a single node on the loopback address (read when `ray` is imported).
LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
TOKEN_FILE = "auth_token"


@dataclass(frozen=True)
class PrivateCluster:
    folder: Path  # 0700: Ray's temp dir and the token

    @property
    def token(self) -> Path:
        return self.folder / TOKEN_FILE

    @property
    def temp_dir(self) -> Path:
        return self.folder / "ray"


_started: PrivateCluster | None = None  # the cluster this process started, while it lives
_starting = threading.Lock()


def private_cluster() -> PrivateCluster | None:
    """The private cluster this process started and is connected to, else None."""
    import ray

    return _started if _started is not None and ray.is_initialized() else None


def key_names(compiled: Compiled, config: FlowConfig) -> set[str]:
    """The variables the program's agents read their keys from, through `config`: each
    agent's provider's (`api_key_env`, else the provider's own variable) and an A2A
    agent's `token_env`. An agent whose model is not a literal may use any provider: all
    of theirs."""
    names: set[str] = set()
    for entry in compiled.check.decls.values():
        if entry.kind == "agent":
            names |= _keys_of(_model_of(entry.node), config)
    return names


def _model_of(node: ast.Decl) -> str | None:
    assert isinstance(node, ast.AgentDecl)
    for f in node.fields:
        if f.name.name == "model":
            value = literal_value(f.value) if isinstance(f.value, ast.Expr) else NOT_LITERAL
            return value if isinstance(value, str) else None
    return "default"


def _keys_of(model: str | None, config: FlowConfig) -> set[str]:
    if model is None:
        return {name for provider in REMOTE_PROVIDERS for name in _provider_keys(provider, "", config)}
    if purpose_of(model) is not None:
        model = by_purpose(model, config.models, config.default_model)[0]
    elif model == "default":
        model = config.default_model
    if model is None or model in LOCAL_PROVIDERS:
        return set()
    provider, _, name = model.partition("/")
    return _provider_keys(provider, name, config)


def _provider_keys(provider: str, name: str, config: FlowConfig) -> set[str]:
    entry = REMOTE_PROVIDERS.get(provider)
    if entry is None:
        return set()
    names = {config.provider(provider).api_key_env or entry.key_env}
    agent = config.a2a.get(name) if provider == "a2a" else None
    if agent is not None and agent.token_env:
        names.add(agent.token_env)
    return names


def secret_names(environ: Mapping[str, str], config: FlowConfig | None = None) -> set[str]:
    """The variables of `environ` that hold credentials: a name that says so, a provider's
    key variable, one the configuration names as a key or token."""
    named = {entry.key_env for entry in REMOTE_PROVIDERS.values()}
    if config is not None:
        named |= {s.api_key_env for s in config.providers.values() if s.api_key_env}
        named |= {a.token_env for a in config.a2a.values() if a.token_env}
        named |= {m.token_env for m in config.mcp.values() if m.token_env}
    return {name for name in environ if name in named or SECRET_NAME.search(name)}


def cluster_environ(environ: Mapping[str, str], config: FlowConfig | None = None) -> dict[str, str]:
    """The environment the cluster's processes start with: `environ` without its credentials."""
    drop = secret_names(environ, config)
    return {name: value for name, value in environ.items() if name not in drop}


def actor_options(names: Collection[str]) -> dict[str, Any]:
    """What an eval's actor on the private cluster is given beyond the cluster's
    environment: the driver's values of `names` (the keys its models read), as its
    runtime_env. Nothing on a cluster that is not the private one."""
    if private_cluster() is None:
        return {}
    env = {name: os.environ[name] for name in sorted(names) if name in os.environ}
    return {"runtime_env": {"env_vars": env}} if env else {}


def start_private(ray: Any, config: FlowConfig | None = None, **options: Any) -> PrivateCluster:
    """`ray.init` a local cluster on loopback, in a folder of its own, with token auth and
    an environment without credentials (the module's text). Raises what `ray.init` raises."""
    global _started
    with _starting:
        cluster = _started = _started if _started is not None else _new_cluster()  # a retry reuses it
        overlay = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(cluster.token)}
        os.environ.update(overlay)  # the driver's own connection reads them as long as it lives
        raylet: Any = importlib.import_module("ray._raylet")
        raylet.Config.initialize("")  # this process's Ray settings read RAY_AUTH_MODE again
        raylet.AuthenticationTokenLoader.instance().reset_cache()
        with _environment({**cluster_environ(os.environ, config), **overlay}), _umask(0o077), _loopback(ray):
            ray.init(_temp_dir=str(cluster.temp_dir), include_dashboard=False, **options)
        keep_private()
        return cluster


def _new_cluster() -> PrivateCluster:
    cluster = PrivateCluster(Path(tempfile.mkdtemp(prefix="flow-ray-")))  # made 0700
    fd = os.open(cluster.token, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_hex(32))  # Ray's own token form: 256 bits, hex
    atexit.register(_remove, cluster)
    return cluster


def _remove(cluster: PrivateCluster) -> None:
    """At exit: the cluster stopped (this runs before Ray's own exit hook), its folder removed."""
    with contextlib.suppress(Exception):
        import ray

        ray.shutdown()
    shutil.rmtree(cluster.folder, ignore_errors=True)


@contextlib.contextmanager
def _environment(environ: Mapping[str, str]) -> Iterator[None]:
    """`os.environ` is `environ` while the cluster's processes start (they copy it); then
    the driver's again."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _umask(mask: int) -> Iterator[None]:
    """Files the cluster's processes make are the person's alone (they inherit the mask)."""
    saved = os.umask(mask)
    try:
        yield
    finally:
        os.umask(saved)


@contextlib.contextmanager
def _loopback(ray: Any) -> Iterator[None]:
    """Ray's single-node mode while the cluster starts or is joined: a node at 127.0.0.1,
    for this process (the constant it read) and the processes it starts (the variable)."""
    constants = ray._private.ray_constants
    saved, variable = constants.ENABLE_RAY_CLUSTER, os.environ.get(LOOPBACK_SWITCH)
    constants.ENABLE_RAY_CLUSTER = False
    os.environ[LOOPBACK_SWITCH] = "0"
    try:
        yield
    finally:
        constants.ENABLE_RAY_CLUSTER = saved
        if variable is None:
            os.environ.pop(LOOPBACK_SWITCH, None)
        else:
            os.environ[LOOPBACK_SWITCH] = variable


def join(ray: Any, address: str, **options: Any) -> None:
    """`ray.init` at `address`. Ray turns a loopback address into the machine's network
    address before it connects, which a cluster on loopback only (the private one of
    another Flow process) does not answer there: such a cluster is joined in Ray's
    single-node mode, which keeps 127.0.0.1. Any other is joined as Ray joins it."""
    host, _, port = address.rpartition(":")
    if _is_loopback(host) and port.isdigit() and not _answers(ray.util.get_node_ip_address(), int(port)):
        with _loopback(ray):
            ray.init(address=address, **options)
        return
    ray.init(address=address, **options)


def _is_loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _answers(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=2):
        return True
    return False


def keep_private() -> None:
    """Everything in the private cluster's folder is 0700 (folders) or its owner's bits
    only (files); links are left alone (they point into the folder). Nothing without one."""
    if _started is None:
        return
    for root, dirs, files in os.walk(_started.folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            with contextlib.suppress(FileNotFoundError):
                mode = os.lstat(path).st_mode
                if not stat.S_ISLNK(mode):
                    os.chmod(path, 0o700 if stat.S_ISDIR(mode) else mode & 0o700)


__all__ = [
    "LOOPBACK_SWITCH",
    "SECRET_NAME",
    "PrivateCluster",
    "actor_options",
    "cluster_environ",
    "join",
    "keep_private",
    "key_names",
    "private_cluster",
    "secret_names",
    "start_private",
]

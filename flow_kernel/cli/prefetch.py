"""Importing a run's provider clients while its sandbox starts.

A `flow run` (or `flow resume`) that calls a remote provider imports its client package
(`openai`, `anthropic`, `a2a`) when the first call is made: ~0.3–0.5 s of CPU, after the
sandbox is ready and on the run's critical path. Once the program is checked, the
command knows which providers its agents name; `prefetch_clients` starts importing those
clients in a background thread, which runs while the main thread waits for the sandbox's
snapshot restore (the main thread is idle then, so the thread has the interpreter). The
first call then finds the module imported (Python's import locks make a call that comes
sooner wait for the import under way, never see half a module).

What is imported is only what the program's own agents and the configuration's models
name: a run whose agents are all local (`scripted`, `mock`) imports nothing, as before.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Iterable, Mapping
from typing import Any


def client_packages(models: Iterable[str]) -> list[str]:
    """The client packages of the remote providers that `models` (model strings,
    `provider/model`) name, each once, in order; unknown providers and local models
    name none."""
    from flow_kernel.runtime.providers.table import REMOTE_PROVIDERS

    packages: list[str] = []
    for model in models:
        provider, slash, _name = model.partition("/")
        entry = REMOTE_PROVIDERS.get(provider) if slash else None
        if entry is not None and entry.package and entry.package not in packages:
            packages.append(entry.package)
    return packages


def program_models(decls: Mapping[str, Any], config: Any) -> list[str]:
    """The model strings a run of a program with these declarations (a check's `decls`)
    may call: its agents' `model` fields, the configuration's default and its purposes'
    models (`model: "for:…"` and `"default"` resolve to those)."""
    from flow_kernel.lang import ast
    from flow_kernel.runtime.agents.calls import agent_spec

    models = [agent_spec(entry.node, []).model for entry in decls.values()
              if entry.kind == "agent" and isinstance(entry.node, ast.AgentDecl)]
    if config.default_model:
        models.append(config.default_model)
    return models + list(config.models.values())


def prefetch_clients(models: Iterable[str]) -> threading.Thread | None:
    """Start importing the client packages `models` need in a daemon thread (None when
    they need none). An import that fails is left for the run's own import, which reports
    it (the provider table's `require_client`)."""
    packages = client_packages(models)
    if not packages:
        return None
    thread = threading.Thread(target=_import_all, args=(packages,), name="flow-client-prefetch", daemon=True)
    thread.start()
    return thread


def _import_all(packages: list[str]) -> None:
    for package in packages:
        with contextlib.suppress(Exception):  # not installed, or broken: the run's own import says so
            importlib.import_module(package)


__all__ = ["client_packages", "prefetch_clients", "program_models"]

"""Run as `python -m tests.security.ray_door_probe [--reopened]` (tests/security/test_ray_door.py):
starts the local cluster of `--executor ray` as an eval does, runs one item on it, and
prints what a stranger could reach, as JSON: every listening socket of the cluster's
processes, the files under its folder that anyone else may read, where the token is, and
the environment its workers see. `--reopened` switches the cluster's guards off first
(loopback, the environment without credentials, the private files), for the twins."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import psutil

from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.eval import ray_cluster, ray_executor
from flow_kernel.runtime.eval.data import Case
from flow_kernel.source import SourceFile

# One agent on `anthropic/…` (never called): its eval needs ANTHROPIC_API_KEY and no other key.
PROGRAM = """agent writer {
  model: "anthropic/claude-test"
  instructions: "Write."
  output: { text: string }
}

workflow square(n: int) -> int {
  return n * n
}
"""
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN")


def reopen() -> None:
    """The cluster as Ray starts it by itself: every interface, the whole environment,
    Ray's own folder modes."""
    ray_cluster._loopback = lambda ray: contextlib.nullcontext()  # type: ignore[assignment,return-value]
    ray_cluster.cluster_environ = lambda environ, config=None: dict(environ)
    ray_cluster.keep_private = lambda: None
    ray_executor.keep_private = lambda: None  # type: ignore[attr-defined]


def listening() -> list[dict[str, Any]]:
    """Every TCP socket listening and every UDP socket bound, of this process and all it started."""
    me = psutil.Process()
    found = []
    for process in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            for c in process.net_connections("inet"):
                if c.status == psutil.CONN_LISTEN or (c.type == socket.SOCK_DGRAM and c.laddr):
                    found.append({"process": process.name(), "ip": c.laddr.ip, "port": c.laddr.port})
    return found


def open_to_others(folder: Path) -> list[str]:
    shown = []
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            with contextlib.suppress(FileNotFoundError):
                mode = os.lstat(path).st_mode
                if not os.path.islink(path) and mode & 0o077:
                    shown.append(f"{oct(mode & 0o777)} {os.path.relpath(path, folder)}")
    return shown


async def main(reopened: bool) -> dict[str, Any]:
    if reopened:
        reopen()
    import ray

    compiled = compile_source(SourceFile("door.flow", PROGRAM))
    items = ray_executor.RayItems(compiled, "square", [], RunContext(), concurrency=1, workers=1, sandbox=False,
                                  keep_events=False, collect=False)
    done: list[Any] = []
    await items.map([(Case("n3", 3, {"n": 3}, has_expected=False), 1)], done.append)

    def seen(_: Any = None) -> dict[str, str | None]:
        return {key: os.environ.get(key) for key in KEYS}

    actor_env = await items.actors[0].__ray_call__.remote(seen)
    task_env = await ray.remote(seen).remote()
    cluster = ray_cluster.private_cluster()
    assert cluster is not None
    folder = cluster.folder
    token_path = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")
    report = {
        "output": [item.result.output for item in done],
        "listening": listening(),
        "open_to_others": open_to_others(folder),
        "folder_mode": oct(os.stat(folder).st_mode & 0o777),
        "token": str(token_path), "token_mode": oct(os.stat(token_path).st_mode & 0o777),
        "home_token": (Path.home() / ".ray" / "auth_token").exists(),
        "actor_env": actor_env, "task_env": task_env,
    }
    await items.close()
    return report


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main("--reopened" in sys.argv))))

"""The local Ray cluster of `flow eval --executor ray` is the person's alone (docs/security.md,
"Ray"): every socket it listens on is loopback, its folder and token are 0700/0600 (none at
~/.ray), and its workers get no credential the eval does not use — an actor gets the key its
models read, nothing else. Each is read off a real cluster that ran an item
(ray_door_probe.py, in a process of its own with fake keys in its environment), and each
has its reopened twin: the same cluster with the guards switched off listens on every
interface, leaves its folders open and hands every worker every key."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")
# alone: each probe starts a cluster, whose processes get a fixed time to come up (tests/workers.py)
pytestmark = [pytest.mark.ray, pytest.mark.alone]

ROOT = Path(__file__).resolve().parents[2]
FAKE = {"OPENAI_API_KEY": "sk-unused-by-the-eval", "ANTHROPIC_API_KEY": "ant-used-by-the-eval",
        "GITHUB_TOKEN": "gh-unused"}


def probe(home: Path, *flags: str) -> dict[str, Any]:
    env = {**os.environ, **FAKE, "HOME": str(home)}
    env.pop("RAY_AUTH_TOKEN_PATH", None)
    env.pop("RAY_AUTH_MODE", None)
    done = subprocess.run([sys.executable, "-m", "tests.security.ray_door_probe", *flags], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["output"] == [9]  # the item ran on the cluster
    return report


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return probe(tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def reopened(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return probe(tmp_path_factory.mktemp("home"), "--reopened")


def off_loopback(report: dict[str, Any]) -> list[tuple[str, str]]:
    def loopback(text: str) -> bool:
        ip = ipaddress.ip_address(text)
        mapped = getattr(ip, "ipv4_mapped", None)
        return (mapped or ip).is_loopback

    return [(s["process"], s["ip"]) for s in report["listening"] if not loopback(s["ip"])]


def test_every_socket_of_the_cluster_is_on_loopback(guarded: dict[str, Any]) -> None:
    processes = {s["process"] for s in guarded["listening"]}
    assert {"gcs_server", "raylet", "ray::EvalWorker"} <= processes  # the servers were found
    assert off_loopback(guarded) == []


def test_reopened_the_cluster_listens_on_every_interface(reopened: dict[str, Any]) -> None:
    assert {"gcs_server", "raylet"} <= {process for process, _ in off_loopback(reopened)}


def test_the_cluster_folder_and_token_are_the_persons_alone(guarded: dict[str, Any]) -> None:
    assert guarded["folder_mode"] == "0o700" and guarded["token_mode"] == "0o600"
    assert guarded["open_to_others"] == []
    assert not guarded["home_token"] and not guarded["token"].endswith(".ray/auth_token")


def test_reopened_rays_folders_are_open_to_everyone(reopened: dict[str, Any]) -> None:
    assert any(line.startswith("0o777 ray/session_") for line in reopened["open_to_others"])


def test_workers_get_only_the_key_the_eval_uses(guarded: dict[str, Any]) -> None:
    assert guarded["task_env"] == {"OPENAI_API_KEY": None, "ANTHROPIC_API_KEY": None, "GITHUB_TOKEN": None}
    assert guarded["actor_env"] == {"OPENAI_API_KEY": None, "ANTHROPIC_API_KEY": FAKE["ANTHROPIC_API_KEY"],
                                    "GITHUB_TOKEN": None}


def test_reopened_every_worker_gets_every_key(reopened: dict[str, Any]) -> None:
    assert reopened["task_env"] == FAKE and reopened["actor_env"] == FAKE

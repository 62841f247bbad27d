"""`run` hardening (issue 15, item 6; docs/security.md, "Host ceilings, processes and `run`").

Allowed executables are bigger than their names: `sort --compress-program=sh` runs a
shell, `git -c alias.x=!…` too, `cat /proc/<host>/environ` prints the host's keys. Pinned
argument patterns refuse the first two; a minimal environment, a user namespace and a
non-dumpable host keep the keys; a network namespace keeps the host's loopback services
out of reach; a child and everything it started die on its timeout, the run's deadline
and a cancel, and a timeout keeps what it had printed. Each door is also reopened inside
its test (the guard patched back to the old behaviour) to show the same attack get out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

from flow_kernel.runtime.policy import processes
from flow_kernel.runtime.run import RunOutcome
from flow_kernel.runtime.session import Session
from flow_kernel.sandbox.lifetime import child_namespace
from flow_kernel.sandbox.node import network_namespace
from tests.security.door_helpers import Listener, listener

__all__ = ["listener"]  # the shared loopback listener fixture

ROOT = Path(__file__).resolve().parents[2]


def run(session: Session, source: str, *, cancel_after: float | None = None) -> RunOutcome | None:
    async def go() -> RunOutcome | None:
        async with session:
            task = asyncio.ensure_future(session.run_async(source))
            if cancel_after is None:
                return await task
            await asyncio.sleep(cancel_after)
            task.cancel()
            try:
                return await task
            except asyncio.CancelledError:
                return None
    return asyncio.run(go())


def flow_string(text: str) -> str:
    return json.dumps(text)


def survivors(token: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        cmdline = p.info.get("cmdline") or []
        if any(token in part for part in cmdline) and p.pid != os.getpid():
            found.append(p)
    return found


def gone_within(token: str, seconds: float) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not survivors(token):
            return True
        time.sleep(0.1)
    return False


def kill(token: str) -> None:
    for p in survivors(token):
        p.kill()


# -- pinned arguments -------------------------------------------------------------------------
def sort_attack(marker: Path) -> str:
    lines = f"touch {marker}\\n" * 20000
    return f'let r = run "sort" ["-S", "1K", "-T", "/tmp", "--compress-program=sh"] stdin "{lines}"\nr.exit_code'


def test_sort_with_pinned_arguments_refuses_compress_program(tmp_path: Path) -> None:
    marker = tmp_path / "sorted-shell"
    outcome = run(Session(journal_dir=None, allow_run=["sort -n", "sort -r *"]), sort_attack(marker))
    assert outcome is not None and outcome.error is not None and outcome.error.code == "capability-violation"
    assert "may run only as sort -n | sort -r *" in outcome.error.message
    assert not marker.exists()
    ok = run(Session(journal_dir=None, allow_run=["sort -n", "sort -r *"]),
             'let r = run "sort" ["-r", "-n"] stdin "1\\n3\\n2\\n"\nr.stdout')
    assert ok is not None and ok.result == "3\n2\n1\n"


def test_reopened_any_argument_lets_sort_run_a_shell(tmp_path: Path) -> None:
    marker = tmp_path / "sorted-shell"
    outcome = run(Session(journal_dir=None, allow_run=["sort"]), sort_attack(marker))  # the name alone, as before
    assert outcome is not None and marker.exists(), outcome.error


def git_attack(marker: Path) -> str:
    return f'let r = run "git" ["-c", {flow_string(f"alias.x=!touch {marker}")}, "x"]\nr.exit_code'


def test_git_with_pinned_arguments_refuses_a_shell_alias(tmp_path: Path) -> None:
    marker = tmp_path / "git-shell"
    outcome = run(Session(journal_dir=None, allow_run=["git status", "git log *"]), git_attack(marker))
    assert outcome is not None and outcome.error is not None and outcome.error.code == "capability-violation"
    assert not marker.exists()


def test_reopened_git_by_name_runs_the_alias(tmp_path: Path) -> None:
    marker = tmp_path / "git-shell"
    outcome = run(Session(journal_dir=None, allow_run=["git"]), git_attack(marker))
    assert outcome is not None and marker.exists(), outcome.error


def test_patterns_match_the_argument_list() -> None:
    policy = processes.RunPolicy(["git status", "git log *", "wc"])
    policy.check("git", ["status"])
    policy.check("git", ["log"])
    policy.check("git", ["log", "--oneline", "-5"])
    policy.check("wc", ["-l", "anything"])
    for args in (["status", "--porcelain"], ["-c", "alias.x=!sh", "log"], ["lo", "g"], []):
        with pytest.raises(Exception, match="may run only as"):
            policy.check("git", args)
    with pytest.raises(ValueError, match="not a path"):
        processes.RunPolicy(["/bin/sh"])


# -- the host's environment ----------------------------------------------------------------------
HOST = """
import asyncio, json, os, sys
from flow_kernel.runtime.policy import processes
from flow_kernel.runtime.session import Session
from flow_kernel.sandbox.lifetime import make_undumpable
if sys.argv[1] == "reopened":  # as before: no namespace, the host's whole environment, dumpable
    processes.isolation_prefix = lambda: []
    processes.child_env = lambda: dict(os.environ)
else:
    make_undumpable()  # what the kernel and the CLI do when they start
source = 'let a = run "cat" ["/proc/%d/environ"]\\nlet b = run "env" []\\n[a.stdout, b.stdout]' % os.getpid()
outcome = Session(journal_dir=None, allow_run=["cat", "env"]).run(source)
print(json.dumps({"result": outcome.result, "error": outcome.error and outcome.error.message}))
"""


def host_run(mode: str) -> dict[str, Any]:
    env = {**os.environ, "FLOW_TEST_API_KEY": "sk-canary-4711"}
    done = subprocess.run([sys.executable, "-c", HOST, mode], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_child_cannot_read_the_hosts_keys() -> None:
    outcome = host_run("hardened")
    print(f"\nenviron: uid {os.getuid()}, namespace {' '.join(child_namespace() or []) or 'none'}: {outcome}"[:400])
    assert "sk-canary-4711" not in json.dumps(outcome)
    # `cat` fails (no such process in its PID namespace, or permission denied): a process error
    assert outcome["error"] is not None or "sk-canary" not in str(outcome["result"])


def test_reopened_the_child_reads_the_hosts_keys() -> None:
    outcome = host_run("reopened")
    assert "sk-canary-4711" in json.dumps(outcome)


# -- network ---------------------------------------------------------------------------------------
CONNECT = 'let r = run "python3" ["-c", "import socket; socket.create_connection((\\"127.0.0.1\\", {port}), 2)"]\nr.exit_code'


@pytest.mark.skipif(child_namespace() is None and network_namespace() is None,
                    reason="this OS gives no network namespace to a child (unshare is missing or refused)")
def test_a_child_cannot_reach_a_loopback_listener_of_the_host(listener: Listener) -> None:
    outcome = run(Session(journal_dir=None, allow_run=["python3"]), CONNECT.format(port=listener.port))
    assert outcome is not None and outcome.error is not None and outcome.error.code == "process"
    assert listener.settle() == []


def test_reopened_without_a_namespace_the_child_connects(listener: Listener,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "isolation_prefix", lambda: [])
    outcome = run(Session(journal_dir=None, allow_run=["python3"]), CONNECT.format(port=listener.port))
    assert outcome is not None and outcome.result == 0, outcome.error
    assert len(listener.settle()) == 1


# -- lifetime: timeout, deadline, cancel -------------------------------------------------------------
def stubborn(token: str, timeout: str = "1s") -> str:
    """A child that ignores SIGTERM, prints, and leaves a grandchild that would outlive it."""
    script = f'trap "" TERM; echo partial-output; sleep 9{token} & wait'
    return f'let r = run "sh" ["-c", {flow_string(script)}] timeout {timeout}\nr'


def test_a_child_that_ignores_sigterm_is_gone_after_its_timeout_with_its_partial_output() -> None:
    token = str(uuid.uuid4().int)[:7]
    try:
        started = time.perf_counter()
        outcome = run(Session(journal_dir=None, allow_run=["sh"]), stubborn(token))
        seconds = time.perf_counter() - started
        assert outcome is not None and outcome.error is not None and outcome.error.code == "process"
        assert outcome.error.details["stdout"] == "partial-output\n" and outcome.error.details["exit_code"] is None
        assert gone_within(token, 3), survivors(token)
        print(f"\ntimeout: the child and its grandchild gone; the run ended after {seconds:.1f}s (timeout 1s)")
    finally:
        kill(token)


def test_reopened_without_the_group_kill_the_grandchild_survives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "isolation_prefix", lambda: [])
    monkeypatch.setattr(processes, "_kill_group", lambda group: None)
    token = str(uuid.uuid4().int)[:7]
    try:
        run(Session(journal_dir=None, allow_run=["sh"]), stubborn(token))
        assert not gone_within(token, 1.5)
    finally:
        kill(token)


DEADLINE = '''
workflow w() -> string {{
  limits {{ duration: 1s }}
  let r = run "sh" ["-c", {script}] timeout 60s
  return r.stdout
}}
w()
'''


def test_a_child_is_gone_after_the_runs_deadline() -> None:
    token = str(uuid.uuid4().int)[:7]
    source = DEADLINE.format(script=flow_string(f'trap "" TERM; sleep 9{token} & wait'))
    try:
        outcome = run(Session(journal_dir=None, allow_run=["sh"]), source)
        assert outcome is not None and outcome.error is not None, outcome
        assert gone_within(token, 3), survivors(token)
    finally:
        kill(token)


def test_reopened_a_child_outlives_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    original = processes.Children.run

    async def as_before(self: Any, path: str, arguments: list[str], stdin: str | None, timeout: float,
                        label: str) -> dict[str, Any]:
        return await original(self, path, arguments, stdin, 60.0, label)  # its own timeout only

    monkeypatch.setattr(processes.Children, "run", as_before)
    monkeypatch.setattr(processes.Children, "kill_all", lambda self: None)
    monkeypatch.setattr(processes, "isolation_prefix", lambda: [])
    monkeypatch.setattr(processes, "_kill_group", lambda group: None)
    token = str(uuid.uuid4().int)[:7]
    source = DEADLINE.format(script=flow_string(f'trap "" TERM; sleep 9{token} & wait'))
    try:
        run(Session(journal_dir=None, allow_run=["sh"]), source)
        assert not gone_within(token, 1.5)
    finally:
        kill(token)


def test_a_child_is_gone_after_a_cancel() -> None:
    token = str(uuid.uuid4().int)[:7]
    try:
        outcome = run(Session(journal_dir=None, allow_run=["sh"]), stubborn(token, "60s"), cancel_after=3)
        assert outcome is None or (outcome.error is not None and outcome.error.code == "cancelled")
        assert gone_within(token, 3), survivors(token)
    finally:
        kill(token)


def test_reopened_a_child_outlives_a_cancel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes.Children, "kill_all", lambda self: None)
    monkeypatch.setattr(processes, "isolation_prefix", lambda: [])
    monkeypatch.setattr(processes, "_kill_group", lambda group: None)
    token = str(uuid.uuid4().int)[:7]
    try:
        run(Session(journal_dir=None, allow_run=["sh"]), stubborn(token, "60s"), cancel_after=3)
        assert not gone_within(token, 1.5)
    finally:
        kill(token)


# -- non-dumpable, where it is what holds: an unprivileged host, no namespace -------------------------
UNPRIVILEGED_HOST = """
import os, sys
from flow_kernel.runtime.policy import processes
from flow_kernel.sandbox import lifetime
processes.isolation_prefix = lambda: []  # no namespace: non-dumpable alone has to hold
if sys.argv[1] != "reopened":
    lifetime.make_undumpable()
from flow_kernel.runtime.session import Session
outcome = Session(journal_dir=None, allow_run=["cat"]).run('let a = run "cat" ["/proc/%d/environ"]\\na.stdout' % os.getpid())
print("LEAK" if outcome.result and "sk-canary-4711" in outcome.result else "refused")
"""


def unprivileged_host(mode: str) -> str:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="flow-unprivileged-") as folder:  # under /tmp: the user can reach it
        home = Path(folder)
        home.chmod(0o777)
        return _as_nobody(mode, home)


def _as_nobody(mode: str, home: Path) -> str:
    import shutil

    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "FLOW_TEST_API_KEY": "sk-canary-4711",
           "FLOW_CONFIG_HOME": str(home)}
    command = [shutil.which("setpriv") or "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
               sys.executable, "-c", UNPRIVILEGED_HOST, mode]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


needs_root_to_drop = pytest.mark.skipif(os.getuid() != 0 or sys.platform != "linux",
                                        reason="starts the host as an unprivileged user (setpriv), which needs root")


@needs_root_to_drop
def test_an_unprivileged_non_dumpable_host_keeps_its_keys_without_a_namespace() -> None:
    assert unprivileged_host("hardened") == "refused"


@needs_root_to_drop
def test_reopened_a_dumpable_unprivileged_host_leaks_its_keys() -> None:
    assert unprivileged_host("reopened") == "LEAK"


# -- a bypassed sandbox asking for many children at once --------------------------------------------
def many_children(count: int, token: str, seconds: int = 1, enough: int | None = None) -> int:
    """`count` concurrent `process` requests straight to the host (what a bypassed sandbox can
    send; the generated code awaits each `run`), each child sleeping `seconds`; the most
    children alive at once. With `enough`, the requests are cancelled as soon as more than
    that many are alive at once (long sleeps: on a loaded machine, starting 40 children can
    take longer than one child's second)."""
    from flow_kernel.lang.compiler import compile_source
    from flow_kernel.runtime.context import RunContext
    from flow_kernel.runtime.host import HostServices
    from flow_kernel.source import SourceFile

    compiled = compile_source(SourceFile("h.flow", "1"))
    most = 0
    duration = f"{seconds}.{token}"

    def alive() -> list[psutil.Process]:
        return [p for p in psutil.process_iter(["cmdline"])
                if (p.info.get("cmdline") or [""])[0].endswith("/sleep") and duration in (p.info.get("cmdline") or [])]

    async def go() -> None:
        nonlocal most
        host = HostServices(compiled.check, RunContext(run_id="r-bypassed", allow_run=frozenset({"sleep"})))
        requests = [host.handle("process", {"executable": "sleep", "arguments": [duration], "timeout_ms": 120_000})
                    for _ in range(count)]
        work = asyncio.ensure_future(asyncio.gather(*requests, return_exceptions=True))
        while not work.done():
            most = max(most, len(alive()))
            if enough is not None and most > enough:
                work.cancel()
                break
            await asyncio.sleep(0.05)
        with contextlib.suppress(asyncio.CancelledError):
            await work
        host.release()
    try:
        asyncio.run(go())
    finally:
        for child in alive():  # what a cancelled request left (not this test's concern)
            with contextlib.suppress(psutil.Error):
                child.kill()
    return most


def test_a_bypassed_sandbox_gets_at_most_16_children_at_once() -> None:
    most = many_children(40, str(uuid.uuid4().int)[:6])
    print(f"\nchildren: 40 concurrent `run` requests, at most {most} children alive at once")
    assert 0 < most <= processes.CHILDREN_AT_ONCE


def test_reopened_every_request_gets_its_child_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    hardened = processes.CHILDREN_AT_ONCE
    monkeypatch.setattr(processes, "CHILDREN_AT_ONCE", 1000)
    assert many_children(40, str(uuid.uuid4().int)[:6], seconds=60, enough=hardened) > hardened

"""Host ceilings the content cannot raise (issue 15, item 5; docs/security.md, "Host
ceilings, processes and `run`").

A program that asks for a billion steps, 500 hours, a million agent runs or a thousand
concurrent calls gets the person's ceiling, and the error names it; a flood of 8 MB logs
stops at the output budget with the journal and the host's memory bounded; a session
refuses a run past its sandbox cap. Each test also reopens its door (the ceiling turned
off inside the test) and sees the same program get past where the ceiling stopped it.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.policy.ceilings import CeilingError, Ceilings
from flow_kernel.runtime.providers.base import ProviderReply, ProviderRequest
from flow_kernel.runtime.run import RunOutcome
from flow_kernel.runtime.session import Session

SPIN = '''
workflow spin() -> int {
  limits { steps: 1000000000, duration: 500h }
  var i = 0
  while true { i = i + 1 }
  return i
}
'''


def run(session: Session, source: str, workflow: str | None = None) -> tuple[RunOutcome, float]:
    async def go() -> tuple[RunOutcome, float]:
        async with session:
            if workflow is not None:
                await session.run_async(source)  # declare it
            started = time.perf_counter()
            outcome = await session.run_async("1" if workflow else source, workflow=workflow,
                                              input={} if workflow else None)
            return outcome, time.perf_counter() - started
    return asyncio.run(go())


def no_ceilings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The door reopened: the program's own limits, whatever they are, as before."""
    monkeypatch.setattr(Ceilings, "clamp", lambda self, limits: dict(limits))
    monkeypatch.setattr(Ceilings, "for_limits", lambda self: {})


# -- settings ---------------------------------------------------------------------------------
def test_ceilings_come_from_the_environment_and_bad_values_are_refused() -> None:
    c = Ceilings.from_env({"FLOW_MAX_STEPS": "5_000", "FLOW_MAX_DURATION": "90m", "FLOW_MAX_OUTPUT": "8MB",
                           "FLOW_MAX_SANDBOXES": "2", "FLOW_MAX_AGENT_RUNS": "7", "FLOW_MAX_CONCURRENCY": "3"})
    assert (c.steps, c.duration_ms, c.output_bytes, c.sandboxes, c.agent_runs, c.concurrency) == \
        (5000, 90 * 60_000, 8 * 1024 * 1024, 2, 7, 3)
    assert Ceilings.from_env({}) == Ceilings()
    for bad in ({"FLOW_MAX_STEPS": "-1"}, {"FLOW_MAX_DURATION": "soon"}, {"FLOW_MAX_OUTPUT": "0"}):
        with pytest.raises(CeilingError, match=next(iter(bad))):
            Ceilings.from_env(bad)


def test_a_flow_toml_cannot_set_a_ceiling(tmp_path: Path) -> None:
    from flow_kernel.runtime.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match="unknown key `ceilings`"):
        parse_config({"ceilings": {"steps": 10**12}}, tmp_path / "flow.toml")


# -- steps, duration ----------------------------------------------------------------------------
def test_a_billion_steps_get_the_step_ceiling() -> None:
    outcome, seconds = run(Session(journal_dir=None, context=RunContext(ceilings=Ceilings(steps=200_000))), SPIN, "spin")
    print(f"\nsteps: stopped after {outcome.steps:,} steps in {seconds:.2f}s "
          f"(~{outcome.steps / seconds / 1e6:.1f} M steps/s in the sandbox)")
    assert outcome.error is not None and outcome.error.code == "limit-exceeded", outcome.error
    assert "host ceiling on `steps` (200,000)" in outcome.error.message and "FLOW_MAX_STEPS" in outcome.error.message
    assert "1,000,000,000" in outcome.error.message
    assert outcome.steps <= 200_001


def test_reopened_the_step_ceiling_lets_the_program_choose(monkeypatch: pytest.MonkeyPatch) -> None:
    no_ceilings(monkeypatch)
    source = SPIN.replace("1000000000", "600000")
    outcome, _ = run(Session(journal_dir=None, context=RunContext(ceilings=Ceilings(steps=200_000))), source, "spin")
    assert outcome.error is not None and outcome.error.code == "limit-exceeded"
    assert outcome.steps > 200_001 and "host ceiling" not in outcome.error.message  # the door was open


def test_500_hours_get_the_duration_ceiling_enforced_by_the_host() -> None:
    outcome, seconds = run(Session(journal_dir=None, context=RunContext(ceilings=Ceilings(duration_ms=1500))), SPIN, "spin")
    print(f"\nduration: a program asking for 500h stopped after {seconds:.2f}s (ceiling 1.5s)")
    assert outcome.error is not None and outcome.error.code == "limit-exceeded", outcome.error
    assert "host ceiling on `duration` (1500ms)" in outcome.error.message and "500h" in outcome.error.message
    assert "FLOW_MAX_DURATION" in outcome.error.message
    assert seconds < 15


def test_reopened_the_duration_ceiling_lets_the_run_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    no_ceilings(monkeypatch)
    source = SPIN.replace("1000000000", "40000000")  # ends by its own steps, seconds after the ceiling
    outcome, seconds = run(Session(journal_dir=None, context=RunContext(ceilings=Ceilings(duration_ms=1500))), source, "spin")
    assert outcome.error is not None and outcome.error.code == "limit-exceeded"
    # The door was open: the run used its own step budget, past the 1.5 s ceiling (~2-6 M
    # steps/s here), and what stopped it was not a host ceiling.
    assert outcome.steps >= 40_000_000 and seconds > 1.5 and "host ceiling" not in outcome.error.message


def test_a_duration_up_to_the_host_maximum_works() -> None:
    """1000 h is past Node's 2^31 ms timer; the ceiling (24 h) is what the run gets, and it runs."""
    source = 'workflow long() -> int {\n  limits { duration: 1000h }\n  return 42\n}\n'
    outcome, _ = run(Session(journal_dir=None), source, "long")
    assert outcome.error is None and outcome.result == 42, outcome.error
    started = next(e for e in outcome.events if e["type"] == "workflow.started")
    assert started["data"]["limits"]["duration"] == Ceilings().duration_ms


def test_reopened_the_duration_is_not_clamped(monkeypatch: pytest.MonkeyPatch) -> None:
    no_ceilings(monkeypatch)
    source = 'workflow long() -> int {\n  limits { duration: 1000h }\n  return 42\n}\n'
    outcome, _ = run(Session(journal_dir=None), source, "long")
    started = next(e for e in outcome.events if e["type"] == "workflow.started")
    assert started["data"]["limits"]["duration"] == 1000 * 3_600_000


# -- agent_runs, concurrency ----------------------------------------------------------------------
class Slow:
    """A provider that takes a moment per call and counts how many run at once."""

    def __init__(self) -> None:
        self.now = self.most = self.calls = 0

    async def attempt(self, request: ProviderRequest) -> ProviderReply:
        self.calls += 1
        self.now += 1
        self.most = max(self.most, self.now)
        await asyncio.sleep(0.05)
        self.now -= 1
        return ProviderReply("ok")


AGENTS = '''
agent bot { model: "slow/m", output: string }
workflow many() -> string[] {
  limits { agent_runs: 1000000, concurrency: 1000, duration: 500h }
  return parallelMap(range(24), i => bot("go ${i}"))
}
'''


def test_a_million_agent_runs_get_the_agent_runs_ceiling() -> None:
    slow = Slow()
    outcome, _ = run(Session(journal_dir=None, context=RunContext(providers={"slow": slow}, ceilings=Ceilings(agent_runs=5))),
                     AGENTS, "many")
    print(f"\nagent_runs: {slow.calls} provider calls before the ceiling of 5 stopped the run")
    assert outcome.error is not None and outcome.error.code == "limit-exceeded", outcome.error
    assert "host ceiling on `agent_runs` (5)" in outcome.error.message and "FLOW_MAX_AGENT_RUNS" in outcome.error.message
    assert slow.calls <= 5


def test_reopened_the_agent_runs_ceiling_spends_what_the_program_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    no_ceilings(monkeypatch)
    slow = Slow()
    outcome, _ = run(Session(journal_dir=None, context=RunContext(providers={"slow": slow}, ceilings=Ceilings(agent_runs=5))),
                     AGENTS, "many")
    assert outcome.error is None and slow.calls == 24


def test_a_thousand_concurrent_calls_get_the_concurrency_ceiling() -> None:
    slow = Slow()
    outcome, _ = run(Session(journal_dir=None, context=RunContext(providers={"slow": slow}, ceilings=Ceilings(concurrency=3))),
                     AGENTS, "many")
    print(f"\nconcurrency: at most {slow.most} calls at once under a ceiling of 3 (the program asks for 1000)")
    assert outcome.error is None and slow.calls == 24
    assert slow.most <= 3


def test_reopened_the_concurrency_ceiling_runs_more_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    no_ceilings(monkeypatch)
    slow = Slow()
    outcome, _ = run(Session(journal_dir=None, context=RunContext(providers={"slow": slow}, ceilings=Ceilings(concurrency=3))),
                     AGENTS, "many")
    assert outcome.error is None and slow.most > 3


# -- the output budget ------------------------------------------------------------------------------
def flood(logs: int, megabytes: int) -> str:
    doublings = (megabytes * 1024 * 1024).bit_length() - 1
    return (f'var s = "x"\nfor i in range({doublings}) {{ s = s + s }}\n'
            f'for i in range({logs}) {{ log s }}\n"done"')


def rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class Peak:
    """The host's resident memory, sampled while a run goes on."""

    def __init__(self) -> None:
        self.base = rss()
        self.most = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.most = max(self.most, rss())

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def journal_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "runs"


def test_a_flood_of_8_MB_logs_stops_at_the_output_budget(journal_dir: Path) -> None:
    session = Session(directory=journal_dir.parent, journal_dir="runs")
    with Peak() as peak:
        outcome, seconds = run(session, flood(80, 8))
    journal = max(journal_dir.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    size = journal.stat().st_size
    print(f"\nflood: 80 logs of 8 MB asked; stopped after {seconds:.1f}s with {outcome.error and outcome.error.code}; "
          f"journal {size / 2**20:.1f} MiB; host RSS {peak.base / 2**20:.0f} -> peak {peak.most / 2**20:.0f} MiB "
          f"(+{(peak.most - peak.base) / 2**20:.0f} MiB)")
    assert outcome.error is not None and outcome.error.code == "limit-exceeded", outcome.error
    assert "FLOW_MAX_OUTPUT" in outcome.error.message and "64 MiB" in outcome.error.message
    assert size < 64 * 2**20 + 2**20  # the budget and the run's last lines
    assert sum(1 for e in outcome.events if e["type"] == "log") <= 8
    assert outcome.events[-1]["type"] == "workflow.failed"
    assert peak.most - peak.base < 640 * 2**20  # generous: the run kept ~64 MiB of events (the flood was 640 MiB)


def test_reopened_the_output_budget_lets_the_flood_through(journal_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flow_kernel.runtime import host

    monkeypatch.setattr(host, "_data_text", lambda data: "")  # nothing is counted
    session = Session(directory=journal_dir.parent, journal_dir="runs",
                      context=RunContext(ceilings=Ceilings(output_bytes=8 * 2**20)))
    outcome, _ = run(session, flood(6, 4))
    journal = next(journal_dir.glob("*.jsonl"))
    assert outcome.error is None and journal.stat().st_size > 16 * 2**20  # 24 MiB past an 8 MiB budget


def runs_kept(session: Session, cells: int) -> list[RunOutcome]:
    async def go() -> list[RunOutcome]:
        async with session:
            for _ in range(cells):
                outcome = await session.run_async(flood(2, 1))  # 2 MiB of logs each, under the budget
                assert outcome.error is None, outcome.error
            return list(session.history)
    return asyncio.run(go())


def test_a_session_keeps_at_most_twice_the_output_budget_of_old_runs_in_memory() -> None:
    kept = runs_kept(Session(journal_dir=None, context=RunContext(ceilings=Ceilings(output_bytes=4 * 2**20))), 6)
    held = sum(o.output_bytes for o in kept)
    print(f"\nhistory: 6 runs of 2 MiB of logs, {len(kept)} kept in memory ({held / 2**20:.1f} MiB; budget 2 x 4 MiB)")
    assert held <= 8 * 2**20 and len(kept) < 6


def test_reopened_the_history_keeps_every_flood(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Session, "_bound_history", lambda self: None)
    kept = runs_kept(Session(journal_dir=None, context=RunContext(ceilings=Ceilings(output_bytes=4 * 2**20))), 6)
    assert len(kept) == 6 and sum(o.output_bytes for o in kept) > 8 * 2**20


# -- sandboxes per session ----------------------------------------------------------------------------
def test_runs_past_the_sandbox_cap_are_refused_clearly() -> None:
    source = 'agent slow { model: "scripted", script: [slow(2s, "late")] }\nslow("x")'

    async def go() -> list[RunOutcome]:
        async with Session(journal_dir=None, context=RunContext(ceilings=Ceilings(sandboxes=2))) as session:
            session.compile(source)
            runs = [asyncio.ensure_future(session.run_async(source)) for _ in range(3)]
            outcomes = await asyncio.gather(*runs)
            pool = session._executor.pool  # type: ignore[union-attr]
            assert pool.started <= 2, pool.started
            return outcomes

    outcomes = asyncio.run(go())
    refused = [o for o in outcomes if o.error is not None]
    print(f"\nsandboxes: 3 runs at once under a cap of 2: {len(refused)} refused: "
          f"{refused[0].error.message if refused and refused[0].error else ''}")
    assert len(refused) == 1 and refused[0].error is not None and refused[0].error.code == "limit-exceeded"
    assert "FLOW_MAX_SANDBOXES" in refused[0].error.message
    assert sum(o.result == "late" for o in outcomes) == 2


def test_reopened_the_sandbox_cap_starts_a_process_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from flow_kernel.sandbox import pool as pool_module
    from flow_kernel.sandbox.pool import SandboxPool

    monkeypatch.setattr(SandboxPool, "_refuse_past_the_cap", lambda self: None)
    monkeypatch.setattr(SandboxPool, "_room", lambda self: True)
    monkeypatch.setattr(pool_module, "SPAWN_AFTER_BOUNDS", (0.0, 0.0))  # a waiting run starts one at once
    source = 'agent slow { model: "scripted", script: [slow(5s, "late")] }\nslow("x")'

    async def go() -> int:
        async with Session(journal_dir=None, context=RunContext(ceilings=Ceilings(sandboxes=2))) as session:
            session.compile(source)
            outcomes = await asyncio.gather(*[session.run_async(source) for _ in range(3)])
            assert all(o.result == "late" for o in outcomes)
            return int(session._executor.pool.started)  # type: ignore[union-attr]

    assert asyncio.run(go()) > 2


# -- through the real kernel: a trivial cell answers during a flood; nothing outlives a killed kernel ------
def kernel_tree(pid: int) -> list[int]:
    import psutil

    return [p.pid for p in psutil.Process(pid).children(recursive=True)]


def alive(pids: list[int]) -> list[int]:
    import psutil

    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Any]:
    from tests.reliability.fault_helpers import start_kernel

    km, kc = start_kernel(tmp_path, FLOW_ALLOW="run:sh")
    yield km, kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def test_a_trivial_cell_answers_within_a_second_while_a_flood_runs_in_the_background(kernel: Any) -> None:
    from tests.kernel.kernel_helpers import execute

    km, kc = kernel
    assert execute(kc, "1 + 1").result == "2"
    import psutil

    base_rss = psutil.Process(km.provisioner.pid).memory_info().rss
    reply = execute(kc, "%background\n" + flood(80, 8))
    assert reply.status == "ok", reply.content
    run_id = next(w for w in str(reply.outputs).split() if w.startswith("r") and len(w) == 13)
    kernel_process = psutil.Process(km.provisioner.pid)
    time.sleep(2)  # the spare sandbox the background run took is replaced (a cold start is not the flood's doing)
    latencies, rss = [], [kernel_process.memory_info().rss]
    for i in range(5):
        started = time.perf_counter()
        answer = execute(kc, f"{i} + 40")
        latencies.append(time.perf_counter() - started)
        rss.append(kernel_process.memory_info().rss)
        assert answer.result == str(i + 40)
        time.sleep(0.2)
    waited = execute(kc, f"%wait {run_id}")
    rss.append(kernel_process.memory_info().rss)
    status = next((o["content"]["data"]["text/plain"] for o in waited.outputs if o["msg_type"] == "display_data"), "")
    print(f"\nkernel: trivial cells answered in {', '.join(f'{t * 1000:.0f}' for t in latencies)} ms "
          f"during a background flood of 80 x 8 MB logs; then {status}; kernel RSS {base_rss / 2**20:.0f} MiB "
          f"before, at most {max(rss) / 2**20:.0f} MiB during")
    assert "failed: limit-exceeded" in status
    assert max(latencies) < 5  # generous: measured well under 1 s
    assert max(rss) - base_rss < 640 * 2**20  # generous: the flood asked for 640 MiB of logs


def test_sandboxes_and_run_children_die_with_a_killed_kernel(kernel: Any) -> None:
    import signal as signals

    from tests.kernel.kernel_helpers import execute

    km, kc = kernel
    token = str(uuid4_int())[:7]
    cell = f'%background\nlet r = run "sh" ["-c", "trap \\"\\" TERM; sleep 9{token} & wait"] timeout 300s\nr'
    assert execute(kc, cell).status == "ok"
    assert execute(kc, BUSY).status == "ok"  # a second sandbox, busy: it reads no EOF from a dead kernel
    pid = km.provisioner.pid
    deadline = time.time() + 30
    while time.time() < deadline and not any(f"9{token}" in " ".join(_cmdline(p)) for p in kernel_tree(pid)):
        time.sleep(0.2)
    children = kernel_tree(pid)
    assert any(f"9{token}" in " ".join(_cmdline(p)) for p in children), "the run child did not start"
    assert any("node" in " ".join(_cmdline(p)) for p in children), "no sandbox"
    os.kill(pid, signals.SIGKILL)
    started = time.perf_counter()
    while alive(children) and time.perf_counter() - started < 10:
        time.sleep(0.1)
    print(f"\norphans: {len(children)} processes under the kernel (sandboxes, unshare, sh, sleep); "
          f"{len(alive(children))} left {time.perf_counter() - started:.1f}s after SIGKILL")
    assert alive(children) == []


def test_an_interrupt_ends_a_run_child_that_ignores_sigterm(kernel: Any) -> None:
    from tests.kernel.kernel_helpers import collect, execute

    km, kc = kernel
    assert execute(kc, "1").status == "ok"
    token = str(uuid4_int())[:7]
    started = time.perf_counter()
    msg_id = kc.execute(f'let r = run "sh" ["-c", "trap \\"\\" TERM; sleep 9{token} & wait"] timeout 300s\nr')
    deadline = time.time() + 30
    while time.time() < deadline and not any(f"9{token}" in " ".join(_cmdline(p)) for p in kernel_tree(km.provisioner.pid)):
        time.sleep(0.1)
    km.interrupt_kernel()
    reply = collect(kc, msg_id, started)
    assert reply.status == "error" and reply.content["ename"] == "cancelled", reply.content
    gone = time.perf_counter()
    while any(f"9{token}" in " ".join(_cmdline(p)) for p in kernel_tree(km.provisioner.pid)) and time.perf_counter() - gone < 5:
        time.sleep(0.1)
    assert not any(f"9{token}" in " ".join(_cmdline(p)) for p in kernel_tree(km.provisioner.pid))
    assert execute(kc, "2 + 2").result == "4"


def test_background_runs_past_the_sandbox_cap_are_refused_in_the_kernel(tmp_path: Path) -> None:
    from tests.kernel.kernel_helpers import execute
    from tests.reliability.fault_helpers import start_kernel

    km, kc = start_kernel(tmp_path, FLOW_MAX_SANDBOXES="2")
    try:
        assert execute(kc, 'agent slow { model: "scripted", script: [slow(3s, "late")] }').status == "ok"
        ids = []
        for _ in range(3):
            reply = execute(kc, '%background\nslow("x")')
            assert reply.status == "ok"
            ids.append(next(w for w in str(reply.outputs).split() if w.startswith("r") and len(w) == 13))
        statuses = []
        for run_id in ids:
            waited = execute(kc, f"%wait {run_id}")
            statuses.append(next(o["content"]["data"]["text/plain"] for o in waited.outputs
                                 if o["msg_type"] == "display_data"))
        print(f"\nkernel, FLOW_MAX_SANDBOXES=2, three background runs: {statuses}")
        assert sum("completed" in s for s in statuses) == 2
        assert sum("failed: limit-exceeded" in s for s in statuses) == 1
        assert execute(kc, "5 + 5").result == "10"  # and the kernel goes on
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _cmdline(pid: int) -> list[str]:
    import psutil

    try:
        return list(psutil.Process(pid).cmdline())
    except psutil.Error:
        return []


def uuid4_int() -> int:
    import uuid

    return uuid.uuid4().int


BUSY = "%background\nlimits { steps: 1000000000 }\nwhile true { }"

ORPHAN_HOST = """
import asyncio, sys, time
from flow_kernel.runtime.session import Session
from flow_kernel.sandbox import lifetime
if sys.argv[1] == "reopened":
    lifetime.preexec = lambda: None  # no parent-death signal, as before
async def main():
    session = Session(journal_dir=None)
    run = asyncio.ensure_future(session.run_async("limits { steps: 1000000000 }\\nwhile true { }"))
    while not session.sandbox_pids():
        await asyncio.sleep(0.05)
    await asyncio.sleep(1)  # the sandbox is in its busy loop: it reads no EOF
    print(" ".join(map(str, session.sandbox_pids())), flush=True)
    await run
asyncio.run(main())
"""


@pytest.mark.parametrize("mode", ["hardened", "reopened"])
def test_a_sandbox_dies_with_its_host(mode: str) -> None:
    """A host killed while its sandbox is busy: the sandbox reads no EOF from its stdin, so only
    the parent-death signal ends it; reopened (no signal), it runs on without its host."""
    import signal as signals
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    host = subprocess.Popen([sys.executable, "-c", ORPHAN_HOST, mode], stdout=subprocess.PIPE, text=True, cwd=root)
    try:
        assert host.stdout is not None
        pids = [int(p) for p in host.stdout.readline().split()]
        assert pids, "no sandbox started"
        os.kill(host.pid, signals.SIGKILL)
        host.wait()
        started = time.perf_counter()
        while alive(pids) and time.perf_counter() - started < 5:
            time.sleep(0.1)
        left = alive(pids)
        if mode == "hardened":
            assert left == [], left
        else:
            assert pids[0] in left  # the door reopened: the busy sandbox lives on without its host (an idle spare exits on EOF)
    finally:
        for pid in alive(pids if "pids" in dir() else []):
            os.kill(pid, signals.SIGKILL)
        host.kill()

"""Linear-time patterns (issue 15, item 4).

The door: every regex a program supplies ran on Python's backtracking `re`. With
`string(pattern: "^(a+)+$")`, 30 characters held `flow check`, output validation (past the
run's `duration`) and the kernel's loop (an interrupt did nothing) for tens of seconds;
completion and inspection run the same checker; `when("/re/")` too.

What shuts it: they all run on RE2 (flow_kernel/lang/patterns.py, the one seam:
`compile_pattern`), whose time is linear in the text; a pattern RE2 cannot run is refused (F3013/F3016/F4017);
completion and inspection run off the kernel's loop within a budget (assist_budget.py).

Each attack below is made with 30 characters and finishes at once. Each reopened door puts
`re` back behind the same seam and shows super-linear time with fewer characters (every
two more characters take about four times as long), measured, never waited out."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import start_new_kernel

from flow_kernel.kernel import assist_budget
from flow_kernel.lang import check, patterns
from flow_kernel.lang.session_scope import SessionScope
from flow_kernel.runtime.run import RunOutcome
from flow_kernel.runtime.session import Session
from flow_kernel.source import SourceFile
from tests.kernel.kernel_helpers import TIMEOUT, collect

ROOT = Path(__file__).resolve().parents[2]
ATTACK = "^(a+)+$"
N = 30  # tens of seconds on `re`; microseconds on RE2
# The reopened doors use `lengths()`: a length that takes about a second a match on this
# machine (measured), and one 8 characters shorter, about 250 times quicker.

# The reopened door in another process (the CLI, the kernel): `re` back behind the seam.
REOPEN = "import functools, re\nimport flow_kernel.lang.patterns as p\np.compile_pattern = functools.lru_cache(None)(re.compile)\n"


def attack(n: int) -> str:
    return "a" * n + "!"


def reopen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patterns, "compile_pattern", functools.lru_cache(None)(re.compile))


def seconds(work: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = work()
    return time.perf_counter() - started, result


def super_linear(small: float, bigger: float) -> bool:
    """8 more characters on a backtracking engine: ~250 times as long; allow for a busy machine."""
    return bigger > 0.3 and bigger > 10 * small


def backtracking_length(target: float) -> int:
    """The length at which one `re` match of the attack takes about `target` seconds on this
    machine (each character doubles it), measured with 18 characters; at most 28."""
    n, took = 18, seconds(lambda: re.search(ATTACK, attack(18)))[0]
    while took < target and n < 28:
        n, took = n + 1, took * 2
    return n


@functools.cache
def lengths() -> tuple[int, int]:
    bigger = backtracking_length(1.0)
    return bigger - 8, bigger


# -- flow check ------------------------------------------------------------------------------

def program(n: int) -> str:
    return f'type Slow = string(pattern: "{ATTACK}")\nlet text: Slow = "{attack(n)}"\nprint text\n'


def check_seconds(n: int) -> tuple[float, list[str]]:
    took, result = seconds(lambda: check(SourceFile("slow.flow", program(n))))
    return took, [d.code for d in result.diagnostics]


def test_flow_check_of_the_attack_finishes_at_once(tmp_path: Path) -> None:
    path = tmp_path / "slow.flow"
    path.write_text(program(N), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FLOW_CONFIG_HOME": str(tmp_path / "config")}
    took, proc = seconds(lambda: subprocess.run([sys.executable, "-m", "flow_kernel.cli", "check", str(path)],
                                                env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300))
    print(f"flow check, {N} characters against {ATTACK}: {took:.2f} s (with interpreter start)")
    assert proc.returncode == 1 and "[F3014]" in proc.stdout, proc.stdout + proc.stderr  # does not match: an error
    assert took < 15  # `re` takes ~60 s for this
    in_process, codes = check_seconds(N)
    print(f"the checker alone: {in_process * 1000:.1f} ms")
    assert codes == ["F3014"] and in_process < 1


def test_flow_check_on_the_reopened_door_is_super_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    reopen(monkeypatch)
    n_small, n_bigger = lengths()
    small, codes = check_seconds(n_small)
    bigger, _ = check_seconds(n_bigger)
    print(f"flow check on `re`: {n_small} characters {small * 1000:.0f} ms, {n_bigger} characters {bigger * 1000:.0f} ms")
    assert codes == ["F3014"]
    assert super_linear(small, bigger)


# -- output validation and `when` routing, in real runs -----------------------------------------

class Runner:
    def __init__(self, directory: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.session = Session(directory=directory, journal_dir=None)

    def run(self, source: str) -> tuple[float, RunOutcome]:
        return seconds(lambda: self.loop.run_until_complete(self.session.run_async(source)))


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    r = Runner(tmp_path_factory.mktemp("regex"))
    r.run("1")  # the sandbox is started before anything is timed
    yield r
    r.loop.run_until_complete(r.session.aclose())
    r.loop.close()


def validated(n: int) -> str:
    """An agent whose reply must match the pattern; the scripted reply is the attack."""
    return (f'type Slow = string(pattern: "{ATTACK}")\n'
            f'agent a {{ model: "scripted", output: Slow, repair: 0, script: ["{attack(n)}"] }}\n'
            'limits { duration: 5s }\na("go")\n')


def routed(n: int) -> str:
    """A scripted agent routing on a regex, asked with the attack as the prompt."""
    return ('agent r { model: "scripted", output: string, script: [when("/(a+)+$/", "matched"), "plain"] }\n'
            f'r("{attack(n)}")\n')


def test_output_validation_of_the_attack_finishes_at_once(runner: Runner) -> None:
    took, outcome = runner.run(validated(N))
    print(f"a run validating a {N}-character reply against {ATTACK}: {took:.2f} s")
    assert outcome.error is not None and outcome.error.code == "output-validation", outcome.to_json()
    assert took < 5  # well inside the run's 5 s duration; `re` takes ~60 s, past it


def test_when_routing_on_the_attack_finishes_at_once(runner: Runner) -> None:
    took, outcome = runner.run(routed(N))
    print(f"a run routing a {N}-character prompt with when(\"/(a+)+$/\"): {took:.2f} s")
    assert outcome.error is None and outcome.result == "plain", outcome.to_json()  # `!` ends it: no match
    assert took < 5


def test_the_reopened_door_is_super_linear_in_runs(runner: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    reopen(monkeypatch)
    for name, make in (("output validation", validated), ("when routing", routed)):
        n_small, n_bigger = lengths()
        small, first = runner.run(make(n_small))
        bigger, second = runner.run(make(n_bigger))
        print(f"{name} on `re`: {n_small} characters {small:.2f} s, {n_bigger} characters {bigger:.2f} s")
        assert (first.error is None) == (second.error is None), (first.to_json(), second.to_json())
        assert bigger - small > 0.3 and bigger > 2 * small, name


# -- the kernel: completion and inspection never hold the loop ---------------------------------

BOUND_S = 1.5  # the target is 1 s; generous for a busy machine, far below the reopened door's


def cell(n: int) -> str:
    return f'type Slow = string(pattern: "{ATTACK}")\nlet attack: Slow = "{attack(n)}"\nprint att'


def _kernel(cwd: Path, reopened: bool) -> tuple[Any, Any]:
    env = {**os.environ, "FLOW_LIVE_VIEW": "off"}
    if reopened:
        (cwd / "site").mkdir()
        (cwd / "site" / "sitecustomize.py").write_text(REOPEN, encoding="utf-8")
        env["PYTHONPATH"] = os.pathsep.join([str(cwd / "site"), str(ROOT)])
    return start_new_kernel(kernel_name="flow", cwd=str(cwd), startup_timeout=TIMEOUT, env=env)


def trivial_cell_seconds(kc: Any, request: Callable[[], str]) -> float:
    """How long `1 + 1` takes to answer when sent right behind `request` (a completion or
    an inspection of the attack). ipykernel handles shell requests one at a time."""
    request()
    started = time.perf_counter()
    reply = collect(kc, kc.execute("1 + 1"), started)  # (skips the assist reply on the way)
    assert reply.status == "ok" and reply.result == "2", reply.content
    return reply.seconds


def _measure(kc: Any, code: str) -> dict[str, float]:
    kc.execute_interactive("1", timeout=TIMEOUT, output_hook=lambda msg: None)  # the sandbox is started before anything is timed
    figures = {}
    figures["complete"] = trivial_cell_seconds(kc, lambda: kc.complete(code, len(code)))
    figures["inspect"] = trivial_cell_seconds(kc, lambda: kc.inspect(code, code.index("attack") + 2))
    return figures


def test_a_trivial_cell_answers_while_completion_and_inspection_check_the_attack(tmp_path: Path) -> None:
    km, kc = _kernel(tmp_path, reopened=False)
    try:
        figures = _measure(kc, cell(N))
        reply = kc.complete(cell(N), len(cell(N)), reply=True, timeout=TIMEOUT)["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    print("a trivial cell sent behind a request checking the attack answered in "
          + ", ".join(f"{k} {v:.2f} s" for k, v in figures.items()))
    assert reply["status"] == "ok" and "attack" in reply["matches"], reply  # the completion itself works
    assert max(figures.values()) < BOUND_S


def test_on_the_reopened_door_the_trivial_cell_waits(tmp_path: Path) -> None:
    km, kc = _kernel(tmp_path, reopened=True)
    try:
        n = backtracking_length(3.5)  # per check; the bound is 1.5 s
        figures = _measure(kc, cell(n))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    print(f"on `re`, with {n} characters, the trivial cell answered in "
          + ", ".join(f"{k} {v:.2f} s" for k, v in figures.items()))
    assert min(figures.values()) > BOUND_S


# -- the budget itself, without a kernel ---------------------------------------------------------

def test_a_slow_check_gives_an_empty_reply_within_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    def slow_complete(*args: Any) -> dict[str, Any]:
        time.sleep(3)  # a check that takes long, whatever the reason
        return {"matches": ["late"], "cursor_start": 0, "cursor_end": 0, "metadata": {}}

    monkeypatch.setattr(assist_budget, "complete", slow_complete)

    async def main() -> tuple[dict[str, Any], int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        task = asyncio.create_task(ticker())
        reply = await assist_budget.complete_within("print x", 7, SessionScope(), budget=0.5)
        task.cancel()
        return reply, ticks

    took, (reply, ticks) = seconds(lambda: asyncio.run(main()))
    print(f"a 3 s check: empty reply after {took:.2f} s, the loop ticked {ticks} times meanwhile")
    assert reply["matches"] == [] and took < 2.5 and ticks >= 5
    assert json.dumps(reply)  # a valid reply body

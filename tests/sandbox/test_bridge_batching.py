"""The runner writes the bridge lines of one turn of Node's loop in one write (runner.mjs
`writeLine`), except that a turn's 1st, 2nd, 4th … line has them written at once
(flowbox/bridge.py `_send`); Python that runs long without a wait has them written every
STEP_CLOCK_EVERY steps (flowbox/runtime.py `_check_step`), so an event never waits for a
long computation."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.executors import SandboxExecutor
from flow_kernel.runtime.run import run_compiled
from flow_kernel.sandbox import install

# A print, then ~1.5 M steps of loop without a wait (1-3 s in the sandbox).
PROGRAM = """limits { steps: 10000000 }
print("before the loop")
var n = 0
for i in range(1500000) { n = n + 1 }
n
"""


def run_timed(monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[float, float, Any]:
    compiled = compile_source(SourceFile("a.flow", PROGRAM))
    assert compiled.ok, [d.message for d in compiled.check.errors]
    arrived: list[float] = []

    def sink(event: dict[str, Any]) -> None:
        if event["type"] == "print":
            arrived.append(time.monotonic())

    async def go() -> tuple[float, float, Any]:
        executor = SandboxExecutor(warm=0)
        try:
            outcome = await run_compiled(compiled, executor, RunContext(sinks=[sink]))
            assert outcome.error is None, outcome.error
            return arrived[0], time.monotonic(), outcome.result
        finally:
            await executor.close()

    return asyncio.run(go())


def test_an_event_before_a_long_computation_reaches_the_host_during_it() -> None:
    printed, ended, result = run_timed()
    print(f"print event {ended - printed:.2f} s before the run's end")
    assert result == 1500000
    assert ended - printed > 0.15


# The flushes a reopened bootstrap leaves out: (file, the test that decides it).
FLUSHES = {"step": ("runtime.py", "if self.bridge.unflushed:"),
           "early": ("bridge.py", "if self.turn_lines >= self.early:")}


@pytest.mark.parametrize(("without", "held"), [(("early",), False), (("early", "step"), True)])
def test_without_the_step_flush_it_would_wait_for_the_end(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                                          without: tuple[str, ...], held: bool) -> None:
    # The doors reopened: a bootstrap that never writes a turn's first lines early (the print
    # would be one), and one whose steps never flush either. The step flush alone gets the
    # print out during the loop; without both, the runner holds it until Python waits again,
    # at the run's end.
    bootstrap = tmp_path / "bootstrap"
    flowbox = bootstrap / "flowbox"
    flowbox.mkdir(parents=True)
    for path in (install.BOOTSTRAP_DIR / "flowbox").glob("*.py"):
        text = path.read_text()
        for name in without:
            file, test = FLUSHES[name]
            if path.name == file:
                assert test in text
                text = text.replace(test, "if False:")
        (flowbox / path.name).write_text(text)
    from flow_kernel.sandbox import process as process_module

    monkeypatch.setattr(process_module, "BOOTSTRAP_DIR", bootstrap)
    original = process_module.sandbox_command
    monkeypatch.setattr(process_module, "sandbox_command",
                        lambda node, **kw: original(node, **{**kw, "snapshot": None}))
    printed, ended, result = run_timed()
    print(f"print event {ended - printed:.2f} s before the run's end")
    assert result == 1500000
    assert (ended - printed < 0.15) is held


def test_the_in_process_executor_holds_nothing_back() -> None:
    # The same runtime on the host (benchmarks, fast tests): its bridge has nothing to flush.
    from flow_kernel.sandbox.inprocess import InProcessExecutor

    compiled = compile_source(SourceFile("a.flow", PROGRAM.replace("1500000", "1000")))
    outcome = asyncio.run(run_compiled(compiled, InProcessExecutor()))
    assert outcome.error is None and outcome.result == 1000
    assert [e["data"]["text"] for e in outcome.events if e["type"] == "print"] == ["before the loop"]

"""Several runs in ONE sandbox process at once, each with its own deadline (flowbox/deadlines.py,
docs/sandbox.md "Inside Pyodide"): the watchdog is armed for the earliest deadline of the
runs still running, a deadline that passes while Python is idle cancels only the overdue
runs, and the interrupt a deadline sends into busy Python stops only the run it belongs to.

Every test starts a real sandbox and sends two `run` requests on it without waiting for
the first; the test's host handler answers the host requests of both (each names its run).
A busy loop here is an `unrestricted` module that counts no steps, so only the watchdog can
stop it; its bound (`BOUND_S`) is far past every deadline, so a loop nothing stopped returns
"not stopped" instead of failing."""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import textwrap
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import tests.sandbox.bootstrap_import  # noqa: F401 - makes `flowbox` importable
from flow_kernel import SourceFile
from flow_kernel.errors import FlowError
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.policy.ceilings import Ceilings
from flow_kernel.sandbox.install import ensure_snapshot
from flow_kernel.sandbox.node import find_node
from flow_kernel.sandbox.process import SandboxProcess

deadlines = importlib.import_module("flowbox.deadlines")

BOUND_S = 8  # a busy loop that nothing stops ends after this and returns "not stopped"
LONG_MS = 120_000  # a deadline no test reaches

BUSY = f"""
import time
started = time.monotonic()
while time.monotonic() - started < {BOUND_S}:
    pass
return "not stopped"
"""


def raw(body: str) -> str:
    """A module whose `main(rt, args)` is `body`, with full Python (the door tests' bypass).
    `await host("op")` is a host request that names the run."""
    return ("async def main(rt, args):\n"
            "    def host(op):\n"
            "        return rt.bridge.invoke(op, {'run': rt.run_id})\n"
            + textwrap.indent(textwrap.dedent(body), "    "))


def run_payload(run: str, module: str, deadline_ms: int | None, *, unrestricted: bool = True) -> dict[str, Any]:
    return {"run": run, "module": module, "filename": "<flow>", "unrestricted": unrestricted,
            "args": {"workflow": None, "input": {}, "session": {}}, "deadline_ms": deadline_ms,
            "ceilings": Ceilings().for_limits()}


class Host:
    """The host side of one sandbox process: each host request waits until the test opens
    the gate named by its run and op (`open`); `seen` holds the requests in arrival order."""

    def __init__(self, process: SandboxProcess) -> None:
        self.process = process
        self.seen: list[tuple[str, str]] = []
        self.payloads: list[dict[str, Any]] = []
        self.answer: Callable[[str, dict[str, Any]], Any] | None = None  # set: answer at once, no gate
        self.events: list[dict[str, Any]] = []
        self.gates: dict[tuple[str, str], asyncio.Future[Any]] = {}
        self.arrived: dict[tuple[str, str], asyncio.Event] = {}
        process.handler = self.handle
        process.on_notify = lambda op, payload: self.events.append(payload) if op == "event" else None

    def _gate(self, key: tuple[str, str]) -> asyncio.Future[Any]:
        if key not in self.gates:
            self.gates[key] = asyncio.get_running_loop().create_future()
        return self.gates[key]

    def _arrival(self, key: tuple[str, str]) -> asyncio.Event:
        return self.arrived.setdefault(key, asyncio.Event())

    async def handle(self, op: str, payload: dict[str, Any]) -> Any:
        key = (str(payload.get("run")), op)
        self.seen.append(key)
        self.payloads.append(payload)
        if self.answer is not None:
            await asyncio.sleep(0)  # the other run's requests interleave with this one's
            return self.answer(op, payload)
        self._arrival(key).set()
        return await self._gate(key)

    async def until(self, run: str, op: str) -> None:
        await asyncio.wait_for(self._arrival((run, op)).wait(), 30)

    def open(self, run: str, op: str, value: Any = None) -> None:
        gate = self._gate((run, op))
        if not gate.done():
            gate.set_result(value)


async def outcome(request: Awaitable[Any]) -> Any:
    """The run's result, or the code of its FlowError (within 30 s: a hang fails the test)."""
    try:
        reply = await asyncio.wait_for(request, 30)
    except FlowError as exc:
        return exc.code
    return reply["result"]


def in_sandbox(test: Callable[[Host], Awaitable[Any]]) -> Any:
    async def go() -> Any:
        process = await SandboxProcess.start(snapshot=ensure_snapshot(find_node()))
        try:
            result = await test(Host(process))
            assert process.alive, "the sandbox died"
            assert (await process.request("run", run_payload("after", raw("return 1 + 1"), None)))["result"] == 2
            return result
        finally:
            await process.close()

    return asyncio.run(go())


# -- a busy run and a waiting run ------------------------------------------------------------

def test_a_busy_run_past_its_deadline_stops_and_the_waiting_run_completes() -> None:
    # A arms first, B second (B's later deadline replaced A's in the one-deadline watchdog,
    # and A's busy loop ran on to its bound).
    async def test(host: Host) -> tuple[Any, Any]:
        a = host.process.send("run", run_payload("A", raw(f'await host("gate")\n{BUSY}'), 1000))
        await host.until("A", "gate")
        b = host.process.send("run", run_payload("B", raw('return await host("wait")'), LONG_MS))
        await host.until("B", "wait")
        host.open("A", "gate")
        a_outcome = await outcome(a)
        host.open("B", "wait", "answered")
        return a_outcome, await outcome(b)

    assert in_sandbox(test) == ("workflow-timeout", "answered")


@pytest.mark.parametrize("first", ["waiting", "busy"])
def test_a_waiting_run_past_its_deadline_stops_and_the_busy_run_goes_on(first: str) -> None:
    # B is busy when A's deadline passes: the watchdog's interrupt goes off in B's code, which
    # is not overdue; it cancels A, and B goes on. The one-deadline watchdog held the deadline
    # armed last: with A first, B's, so A waited until the test answered it; with B first
    # (B waits at a gate until A has started), A's, whose interrupt stopped B instead.
    busy_for = 1.5  # past A's deadline, well inside B's
    b_module = raw(f"""
        {'await host("gate")' if first == "busy" else ''}
        import time
        started = time.monotonic()
        n = 0
        while time.monotonic() - started < {busy_for}:
            n += 1
        return "done" if n > 0 else "no loop"
    """)

    async def test(host: Host) -> tuple[Any, Any, list[tuple[str, str]]]:
        if first == "busy":
            b = host.process.send("run", run_payload("B", b_module, LONG_MS))
            await host.until("B", "gate")
        a = host.process.send("run", run_payload("A", raw('return await host("wait")'), 300))
        await host.until("A", "wait")
        if first == "busy":
            host.open("B", "gate")
        else:
            b = host.process.send("run", run_payload("B", b_module, LONG_MS))
        b_outcome = await outcome(b)
        host.open("A", "wait", "answered after B")
        return await outcome(a), b_outcome, [key for key in host.seen if key[0] == "A"]

    a_outcome, b_outcome, seen = in_sandbox(test)
    assert (a_outcome, b_outcome) == ("workflow-timeout", "done")
    assert seen == [("A", "wait")]


def test_when_one_run_ends_the_other_runs_deadline_still_holds() -> None:
    # A (the earlier deadline) ends; the watchdog is armed for B's, and B, busy past it, stops.
    # The one-deadline watchdog was disarmed by A's end, and B's loop ran on to its bound.
    async def test(host: Host) -> tuple[Any, Any]:
        a = host.process.send("run", run_payload("A", raw('return await host("gate")'), 1000))
        await host.until("A", "gate")
        b = host.process.send("run", run_payload("B", raw(f'await host("gate")\n{BUSY}'), 1500))
        await host.until("B", "gate")
        host.open("A", "gate", "A done")
        a_outcome = await outcome(a)
        host.open("B", "gate")
        return a_outcome, await outcome(b)

    assert in_sandbox(test) == ("A done", "workflow-timeout")


def test_runs_overdue_while_idle_stop_and_the_others_wait_on() -> None:
    # Three runs wait on the host: the watchdog's timer stops A at its deadline and is armed
    # again for B's, which stops B; C, far from its own, is answered and completes.
    async def test(host: Host) -> tuple[Any, Any, Any]:
        a = host.process.send("run", run_payload("A", raw('return await host("wait")'), 200))
        b = host.process.send("run", run_payload("B", raw('return await host("wait")'), 400))
        c = host.process.send("run", run_payload("C", raw('return await host("wait")'), LONG_MS))
        results = await outcome(a), await outcome(b)
        host.open("C", "wait", "C answered")
        return (*results, await outcome(c))

    assert in_sandbox(test) == ("workflow-timeout", "workflow-timeout", "C answered")


# -- cancel and expect, per run ----------------------------------------------------------------

def test_a_host_cancel_stops_only_its_run() -> None:
    async def test(host: Host) -> tuple[Any, Any]:
        a = host.process.send("run", run_payload("A", raw('return await host("wait")'), LONG_MS))
        b = host.process.send("run", run_payload("B", raw('return await host("wait")'), LONG_MS))
        await host.until("A", "wait")
        await host.until("B", "wait")
        host.process.notify("cancel", {"run": "A", "reason": "cancelled"})
        a_outcome = await outcome(a)
        host.open("B", "wait", "B answered")
        return a_outcome, await outcome(b)

    assert in_sandbox(test) == ("cancelled", "B answered")


EXPECTING = """agent a {{ model: "scripted" }}
let s = a("summarise") expect len(it) <= {most} : "at most {most} characters"
s
"""


def test_expect_answers_for_the_run_it_names() -> None:
    # Both runs wait on an agent call with an `expect` clause; the host asks each run about
    # the same candidate output, and each answers with its own clause.
    candidate = "seven ch"

    async def test(host: Host) -> tuple[Any, ...]:
        runs = {}
        for run, most in (("A", 10), ("B", 3)):
            compiled = compile_source(SourceFile(f"{run}.flow", EXPECTING.format(most=most)))
            assert compiled.ok and compiled.python is not None
            runs[run] = host.process.send("run", run_payload(run, compiled.python, LONG_MS, unrestricted=False))
        asked = {}
        for run in ("A", "B"):
            await host.until(run, "agent")
        for run in ("A", "B"):
            call = next(p["call"] for p in host.payloads if p["run"] == run)
            asked[run] = await host.process.request("expect", {"run": run, "call": call, "output": candidate})
        host.open("A", "agent", "short")
        host.open("B", "agent", "ok")
        return asked["A"], asked["B"], await outcome(runs["A"]), await outcome(runs["B"])

    assert in_sandbox(test) == ([], ["at most 3 characters"], "short", "ok")


HEAVY_EXPECT = """agent a { model: "scripted" }
fn heavy(n: int) -> bool {
  var i = 0
  while i < n {
    i = i + 1
  }
  return true
}
workflow w() -> string {
  limits { steps: 100000000, duration: 10m }
  let s = a("x") expect heavy(50000000) : "heavy"
  return s
}
"""


def test_a_deadline_that_passes_in_a_runs_expect_check_stops_that_run_only() -> None:
    # A's clauses run long (steps, but far inside the workflow's own `duration`) when the host
    # asks about a candidate; A's deadline passes meanwhile and its interrupt goes off in the
    # check. The check's task took it as an ordinary error, and A fails `workflow-timeout`
    # (the check's task used not to catch it: the interrupt left the task and ended the process).
    compiled = compile_source(SourceFile("heavy.flow", HEAVY_EXPECT))
    assert compiled.ok and compiled.python is not None, [d.message for d in compiled.check.errors]
    a_payload = {**run_payload("A", compiled.python, 300, unrestricted=False),
                 "args": {"workflow": "w", "input": {}, "session": {}}}

    async def test(host: Host) -> tuple[Any, Any, Any]:
        a = host.process.send("run", a_payload)
        b = host.process.send("run", run_payload("B", raw('return await host("wait")'), LONG_MS))
        await host.until("A", "agent")
        await host.until("B", "wait")
        call = next(p["call"] for p in host.payloads if p["run"] == "A")
        try:
            asked: Any = await asyncio.wait_for(host.process.request("expect", {"run": "A", "call": call,
                                                                                 "output": "o"}), 30)
        except FlowError as exc:
            asked = exc.code
        host.open("B", "wait", "B answered")
        return asked, await outcome(a), await outcome(b)

    assert in_sandbox(test) == ("workflow-timeout", "workflow-timeout", "B answered")


# -- neither overdue -------------------------------------------------------------------------

PROGRAMS = {
    "A": """agent w { model: "scripted" }
workflow total(n: int) -> int {
  var acc = 0
  for i in range(n) {
    acc = acc + i
  }
  return acc
}
let xs = parallelMap(range(4), i => w("item ${i}"))
print "got ${len(xs)}: ${join(xs, ", ")}"
total(200) + len(xs)
""",
    "B": """agent v { model: "scripted" }
stage "ask" {
  let one = v("first")
  emit progress { done: 1, total: 2 }
  let two = v("second after ${one}")
}
log "asked twice"
[one, two]
""",
}


def test_two_runs_neither_overdue_give_what_each_gives_alone() -> None:
    modules = {}
    for run, source in PROGRAMS.items():
        compiled = compile_source(SourceFile(f"{run}.flow", source))
        assert compiled.ok and compiled.python is not None, [d.message for d in compiled.check.errors]
        modules[run] = compiled.python

    def answer(op: str, payload: dict[str, Any]) -> Any:
        return f"<{payload['prompt']}>" if op == "agent" else None

    def seen_by(host: Host, run: str, reply: Any) -> tuple[Any, ...]:
        events = [e for e in host.events if e.get("run") == run]
        requests = [(p.get("order"), p.get("prompt")) for p in host.payloads if p.get("run") == run]
        kept = {k: v for k, v in reply.items() if k != "memory"} if isinstance(reply, dict) else reply
        return kept, events, sorted(map(repr, requests))

    async def test(host: Host) -> tuple[dict[str, Any], dict[str, Any]]:
        host.answer = answer
        alone = {}
        for run in PROGRAMS:
            reply = await asyncio.wait_for(host.process.request("run", run_payload(run, modules[run], 60_000,
                                                                                    unrestricted=False)), 30)
            alone[run] = seen_by(host, run, reply)
        host.events.clear()
        host.payloads.clear()
        sent = {run: host.process.send("run", run_payload(run, modules[run], 60_000 + 1000 * i, unrestricted=False))
                for i, run in enumerate(PROGRAMS)}
        replies = {run: await asyncio.wait_for(request, 30) for run, request in sent.items()}
        together = {run: seen_by(host, run, replies[run]) for run in PROGRAMS}
        return alone, together

    alone, together = in_sandbox(test)
    assert together == alone
    assert alone["A"][0]["result"] == sum(range(200)) + 4
    assert alone["B"][0]["result"] == ["<first>", "<second after <first>>"]


# -- the table alone, on the host's CPython with a recording watchdog and a clock set by hand ----

class Watchdog:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def arm(self, ms: float) -> None:
        self.calls.append(("arm", round(ms)))

    def disarm(self) -> None:
        self.calls.append(("disarm",))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


def table(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Watchdog, Clock, list[tuple[str, str]]]:
    clock, dog, cancelled = Clock(), Watchdog(), []
    monkeypatch.setattr(deadlines, "time", clock)
    return deadlines.Deadlines(dog, lambda run, reason: cancelled.append((run, reason))), dog, clock, cancelled


def in_run(run: Any, fn: Callable[[], Any], *, in_task: bool = True) -> Any:
    """`fn()` as code of `run` runs it (`current_run` set, as the bridge sets it): in a
    task's step, as a run's code runs, or (`in_task=False`) in a plain callback."""
    context = contextvars.copy_context()
    context.run(deadlines.current_run.set, run)
    if not in_task:
        return context.run(fn)

    async def step() -> Any:
        return fn()

    async def go() -> Any:
        return await asyncio.get_running_loop().create_task(step(), context=context)

    return asyncio.run(go())


def test_one_run_arms_and_disarms_the_watchdog_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    table_, dog, _clock, cancelled = table(monkeypatch)
    table_.add("A", 300)
    table_.remove("A")
    table_.remove("A")  # again: nothing
    assert dog.calls == [("arm", 300), ("disarm",)] and cancelled == []


def test_the_watchdog_holds_the_earliest_deadline_of_the_runs_left(monkeypatch: pytest.MonkeyPatch) -> None:
    table_, dog, clock, _cancelled = table(monkeypatch)
    table_.add("A", 1000)
    table_.add("B", 2000)  # later: the watchdog keeps A's
    table_.add("C", 500)  # earlier: it takes C's
    clock.now += 0.1
    table_.remove("B")  # not the one it holds: nothing
    table_.remove("C")  # the one it holds: A's, 900 ms from now
    table_.remove("A")
    assert dog.calls == [("arm", 1000), ("arm", 500), ("arm", 900), ("disarm",)]


def test_the_timer_cancels_the_overdue_runs_and_arms_for_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    table_, dog, clock, cancelled = table(monkeypatch)
    table_.add("A", 100)
    table_.add("B", 150)
    table_.add("C", 5000)
    clock.now += 0.1  # A's deadline, which fired: A only (B's is 50 ms away)
    table_.on_timer()
    assert cancelled == [("A", "workflow-timeout")] and dog.calls[-1] == ("arm", 50)
    clock.now += 0.2  # past B's: the timer fired for it
    table_.on_timer()
    assert cancelled[1:] == [("B", "workflow-timeout")] and dog.calls[-1] == ("arm", 4700)
    assert list(table_.due) == ["C"]


def test_the_interrupt_raises_only_in_the_code_of_the_run_it_is_for(monkeypatch: pytest.MonkeyPatch) -> None:
    table_, dog, clock, cancelled = table(monkeypatch)
    table_.add("A", 100)
    table_.add("B", 5000)
    clock.now += 0.15  # busy 50 ms past A's deadline
    in_run("B", lambda: table_.on_interrupt(2, None))  # B's code: A is cancelled, B goes on
    assert cancelled == [("A", "workflow-timeout")] and dog.calls[-1] == ("arm", 4850)
    table_.add("D", 100)
    clock.now += 0.15
    with pytest.raises(KeyboardInterrupt):
        in_run("D", lambda: table_.on_interrupt(2, None))  # D's own deadline: D's code stops
    assert cancelled == [("A", "workflow-timeout")] and list(table_.due) == ["B"]
    clock.now += 5
    table_.on_interrupt(2, None)  # code of no run: B is cancelled, nothing raised
    assert cancelled[1:] == [("B", "workflow-timeout")] and dog.calls[-1:] == [("disarm",)]
    table_.add("E", 100)
    clock.now += 0.15
    in_run("E", lambda: table_.on_interrupt(2, None), in_task=False)  # E's callback: cancelled, not raised
    assert cancelled[2:] == [("E", "workflow-timeout")] and not table_.due


def test_an_interrupt_in_a_callback_of_the_overdue_run_cancels_it_and_the_process_lives() -> None:
    # A's deadline passes while a plain callback of A's (a timer, as `Frame._expire` is; not a
    # task) keeps Python busy: a KeyboardInterrupt raised there would leave the callback into
    # the event loop and end the process, with B in it. The handler cancels A instead; the
    # callback ends by itself, A stops with `workflow-timeout`, and B completes.
    busy_for = 1.0  # past A's deadline (300 ms), well inside B's
    a_module = raw(f"""
        import asyncio, time
        def spin():
            started = time.monotonic()
            while time.monotonic() - started < {busy_for}:
                pass
        asyncio.get_running_loop().call_later(0.05, spin)
        return await host("wait")
    """)

    async def test(host: Host) -> tuple[Any, Any]:
        b = host.process.send("run", run_payload("B", raw('return await host("wait")'), LONG_MS))
        await host.until("B", "wait")
        a = host.process.send("run", run_payload("A", a_module, 300))
        await host.until("A", "wait")
        a_outcome = await outcome(a)
        host.open("B", "wait", "answered")
        return a_outcome, await outcome(b)

    assert in_sandbox(test) == ("workflow-timeout", "answered")

"""The bridge through a real sandbox process: many requests in flight, both
directions, JSON-only values, size limits, and death."""

from __future__ import annotations

import asyncio
import shutil
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flow_kernel.errors import (
    CapabilityViolationError,
    FlowError,
    FlowIsolateError,
    FlowWorkerCrashedError,
)
from flow_kernel.sandbox import install
from flow_kernel.sandbox import process as process_module
from flow_kernel.sandbox.node import NodeInfo, find_node
from flow_kernel.sandbox.process import SandboxProcess, sandbox_command
from tests.sandbox.sandbox_helpers import Sandbox, sandbox

__all__ = ["sandbox"]


def test_ping_round_trip(sandbox: Sandbox) -> None:
    value = {"a": [1, 2.5, "ü", None, True], "b": {"c": "x" * 1000}}
    assert sandbox.loop.run_until_complete(sandbox.process.request("ping", value)) == value
    assert sandbox.process.ready["abi"] == 1 and sandbox.process.ready["python"].startswith("3.")


# JSON leaves U+2028 and U+2029 unescaped inside strings (the host encodes with
# ensure_ascii=False), so they travel raw inside a bridge line; an agent's answer may hold one.
SEPARATORS = {"text": "a\u2028b\u2029c", "list": ["\u2028", "\u2029", "\u2028\n\u2029"]}


async def _separators_then_a_ping(process: SandboxProcess) -> list[Any]:
    return [await asyncio.wait_for(process.request("ping", SEPARATORS), 10),
            await asyncio.wait_for(process.request("ping", {"after": 1}), 10)]


def test_line_and_paragraph_separators_stay_inside_a_bridge_line(sandbox: Sandbox) -> None:
    assert sandbox.loop.run_until_complete(_separators_then_a_ping(sandbox.ensure_alive())) == [SEPARATORS, {"after": 1}]


def test_a_runner_reading_with_node_readline_loses_such_a_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The reader put back to node:readline, which ends lines at U+2028/U+2029 too from Node 24
    # on (nodejs/node#57591): the request arrives as two halves of a line, is dropped, and
    # never answered.
    node = find_node()
    if node.version[0] < 24:
        pytest.skip(f"Node {node.version[0]}'s readline ends lines at \\n only")
    reader = 'input.listen(lineReader((text) => onLines(text)), () => process.exit(0));'
    text = install.RUNNER.read_text()
    assert reader in text
    old = tmp_path / "runner.mjs"
    old.write_text(text.replace(reader, 'const through = new (await import("node:stream")).PassThrough(); '
                                        '(await import("node:readline")).default.createInterface({ input: through, '
                                        'crlfDelay: Infinity }).on("line", (line) => { if (line) onLines(line); }); '
                                        'input.listen((bytes, count) => { through.write(Buffer.from(bytes.subarray(0, count))); }, '
                                        '() => process.exit(0));'))
    monkeypatch.setattr(process_module, "RUNNER", old)

    async def attempt() -> None:
        process = await SandboxProcess.start(command=sandbox_command(node, snapshot=None, memory_mb=512))
        try:
            with pytest.raises(TimeoutError):
                await _separators_then_a_ping(process)
        finally:
            await process.kill()

    asyncio.run(attempt())


def test_a_thousand_requests_in_flight(sandbox: Sandbox) -> None:
    async def many() -> list[Any]:
        return await asyncio.gather(*[sandbox.process.request("ping", {"i": i}) for i in range(1000)])

    assert sandbox.loop.run_until_complete(many()) == [{"i": i} for i in range(1000)]


def test_sandbox_initiated_requests(sandbox: Sandbox) -> None:
    seen: list[dict[str, Any]] = []

    async def handler(op: str, payload: dict[str, Any]) -> Any:
        seen.append(payload)
        return payload

    sandbox.process.handler = handler
    try:
        for concurrent in (False, True):
            reply = sandbox.loop.run_until_complete(sandbox.process.request("echo_bench", {"n": 200, "concurrent": concurrent}))
            assert reply["n"] == 200 and reply["seconds"] > 0
        assert len(seen) == 400
    finally:
        sandbox.process.handler = None


def test_host_errors_arrive_typed_inside(sandbox: Sandbox) -> None:
    async def handler(op: str, payload: dict[str, Any]) -> Any:
        raise CapabilityViolationError("not for you", details={"op": op})

    sandbox.process.handler = handler
    try:
        result = sandbox.raw("""
            import flowbox.bridge as b
            from flowbox.errors import FlowError
            try:
                await b._bridge.invoke("secret", {})
            except FlowError as exc:
                return [exc.code, exc.message, exc.details]
        """)
    finally:
        sandbox.process.handler = None
    assert result == ["capability-violation", "not for you", {"op": "secret"}]


def test_unknown_op_is_a_clear_error(sandbox: Sandbox) -> None:
    with pytest.raises(CapabilityViolationError, match="unknown sandbox operation"):
        sandbox.loop.run_until_complete(sandbox.process.request("format_disk", {}))


def test_python_stdout_does_not_touch_the_protocol(sandbox: Sandbox) -> None:
    assert sandbox.raw('print("{not json")\nprint("}")\nreturn "fine"') == "fine"
    assert any("{not json" in line for line in sandbox.process.stderr_tail)


def test_non_json_values_are_refused_on_both_sides(sandbox: Sandbox) -> None:
    with pytest.raises(FlowIsolateError, match="non-JSON"):
        sandbox.loop.run_until_complete(sandbox.process.request("ping", {"x": float("nan")}))
    result = sandbox.raw("return {1, 2}")
    assert isinstance(result, FlowError) and result.code == "isolate"
    assert sandbox.process.alive


def test_a_non_json_line_kills_the_sandbox(sandbox: Sandbox) -> None:
    result = sandbox.raw("""
        import flowbox.bridge as b, asyncio
        b._bridge.io.write("this is not json")
        await asyncio.sleep(5)
        return "survived"
    """)
    assert isinstance(result, FlowWorkerCrashedError), result
    assert "not a JSON object" in result.message
    assert not sandbox.process.alive
    assert sandbox.raw("return 7") == 7  # a fresh process


def test_an_oversized_line_kills_the_sandbox(sandbox: Sandbox) -> None:
    result = sandbox.raw("""
        import flowbox.bridge as b, asyncio
        b._bridge.io.write('"' + "x" * (17 * 1024 * 1024) + '"')
        await asyncio.sleep(5)
        return "survived"
    """)
    assert isinstance(result, FlowWorkerCrashedError), result
    assert "longer than" in result.message
    assert sandbox.raw("return 8") == 8


def test_killing_the_process_rejects_every_pending_request(sandbox: Sandbox) -> None:
    process = sandbox.ensure_alive()

    async def scenario() -> list[BaseException | Any]:
        sleepers = [asyncio.ensure_future(process.request("run", {
            "run": f"s{i}", "unrestricted": True, "args": {},
            "module": "async def main(rt, args):\n    import asyncio\n    await asyncio.sleep(30)\n"})) for i in range(5)]
        await asyncio.sleep(0.3)
        assert process.proc is not None
        process.proc.kill()
        return await asyncio.gather(*sleepers, return_exceptions=True)

    results = sandbox.loop.run_until_complete(scenario())
    assert all(isinstance(r, FlowWorkerCrashedError) for r in results), results
    assert sandbox.raw("return 9") == 9


def test_snapshot_key_follows_the_bootstrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    node = find_node()
    copy = tmp_path / "bootstrap"
    shutil.copytree(install.BOOTSTRAP_DIR, copy)
    monkeypatch.setattr(install, "BOOTSTRAP_DIR", copy)
    before = install.snapshot_key(node)
    assert install.snapshot_key(node) == before
    (copy / "flowbox" / "values.py").write_text((copy / "flowbox" / "values.py").read_text() + "\n# changed\n")
    assert install.snapshot_key(node) != before


# -- the fresh heap, stdin and stdout that only the bridge owns ------------------------------

UNGUARD = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_Blocker"]
"""


def test_ready_reports_versions_and_the_fresh_heap(sandbox: Sandbox) -> None:
    process = sandbox.ensure_alive()
    ready = process.ready
    assert ready["pyodide"] == install.installed_version()
    assert ready["snapshot"] is (sandbox.snapshot is not None)
    # The heap is read where Emscripten keeps it: right after a snapshot restore nothing
    # has grown yet, and a reading taken from the grow hook alone was 0 (which made the
    # pool's "grew by more than 64 MiB" baseline meaningless).
    assert ready["memory"] > 16 * 1024 * 1024
    reply = sandbox.loop.run_until_complete(process.request("run", {
        "run": "m", "unrestricted": True, "args": {}, "module": "async def main(rt, args):\n    return 1\n"}))
    assert reply["memory"] >= ready["memory"]


def test_python_stdin_is_empty_and_does_not_consume_bridge_lines(sandbox: Sandbox) -> None:
    result = sandbox.raw("""
        import os, sys
        out = [sys.stdin.read(), os.read(0, 100).decode()]
        try:
            input()
        except EOFError:
            out.append("EOFError")
        return out
    """)
    assert result == ["", "", "EOFError"]
    assert sandbox.loop.run_until_complete(sandbox.process.request("ping", {"after": "stdin"})) == {"after": "stdin"}


def test_no_python_route_to_fd_1_reaches_the_protocol(sandbox: Sandbox) -> None:
    # A process of its own: `setStdout()` below changes it for good.
    process = sandbox.start()
    try:
        reply = sandbox.loop.run_until_complete(process.request("run", {
            "run": "junk", "unrestricted": True, "args": {}, "module": "async def main(rt, args):\n" + textwrap.indent(
                UNGUARD + textwrap.dedent("""
                import os
                os.write(1, b"junk-1 on fd 1\\n")
                sys.__stdout__.write("junk-2 on __stdout__\\n")
                sys.__stdout__.flush()
                # Pyodide's own Node writer (what a reset `setStdout()` installs) writes to
                # fd 1 with fs.writeSync, around process.stdout.
                import pyodide_js
                pyodide_js.setStdout()
                print("junk-3 after setStdout()")
                os.write(1, b"junk-4 on fd 1 after setStdout()\\n")
                return "printed"
            """), "    ")}))
        assert reply["result"] == "printed"
        assert sandbox.loop.run_until_complete(process.request("ping", {"still": "speaking"})) == {"still": "speaking"}
        sandbox.loop.run_until_complete(asyncio.sleep(0.2))  # the stderr reader catches up
        stderr = "\n".join(process.stderr_tail)
        for n in range(1, 5):
            assert f"junk-{n}" in stderr, (n, stderr[-2000:])
    finally:
        sandbox.loop.run_until_complete(process.close())


# -- the watchdog: busy Python gets KeyboardInterrupt, idle Python a cancellation ------------

@pytest.mark.alone  # measures the deadline's lateness: the other test worker waits (tests/workers.py)
def test_a_deadline_passing_while_the_run_awaits_the_host_is_a_timeout(sandbox: Sandbox) -> None:
    # The watchdog fires while Python is idle: the run is cancelled like a host `cancel`.
    # A KeyboardInterrupt left pending instead went off in the next Python that ran (the
    # late reply below), outside any task, and ended the process.
    replied = asyncio.Event()

    async def slow(op: str, payload: dict[str, Any]) -> Any:
        await asyncio.sleep(0.8)
        replied.set()
        return "late"

    sandbox.ensure_alive().handler = slow
    try:
        started = time.monotonic()
        result = sandbox.raw("import flowbox.bridge as b\nreturn await b._bridge.invoke('agent', {})", deadline_ms=200)
        elapsed = time.monotonic() - started
        sandbox.loop.run_until_complete(asyncio.wait_for(replied.wait(), 5))
        sandbox.loop.run_until_complete(asyncio.sleep(0.1))  # the late reply reaches the sandbox
    finally:
        sandbox.process.handler = None
    assert isinstance(result, FlowError) and result.code == "workflow-timeout", result
    assert elapsed < 0.7
    assert sandbox.process.alive
    assert sandbox.raw("return 40 + 2") == 42


def test_runs_that_end_at_their_deadline_leave_no_interrupt_behind(sandbox: Sandbox) -> None:
    # Each run busy-waits until just before its deadline, so the watchdog's timer races the
    # run's disarm(). A lost race used to leave SIGINT in the interrupt buffer, and the next
    # Python to run raised KeyboardInterrupt outside any task and ended the process (a few
    # percent of such runs). The race is timing-dependent, so this tries many offsets.
    process = sandbox.ensure_alive()
    finished = 0
    for i in range(36):
        early_ms = (i % 6) * 0.25
        result = sandbox.raw(f"""
            import time
            t = time.perf_counter()
            while time.perf_counter() - t < (50 - {early_ms}) / 1000:
                pass
            return "done"
        """, deadline_ms=50)
        if result == "done":
            finished += 1
        else:
            assert isinstance(result, FlowError) and result.code == "workflow-timeout", result
        assert sandbox.raw("return sum(range(10000))") == 49995000
        assert sandbox.process is process, "the process died"
    assert finished > 0


# -- the host side against fake sandboxes: nothing on stdout is trusted ----------------------

def fake(tmp_path: Path, body: str) -> list[str]:
    """A stand-in for the runner: says ready, then runs `body` for each stdin line."""
    script = tmp_path / "fake_sandbox.py"
    script.write_text('import sys\nprint(\'{"op": "ready", "payload": {"abi": 1}}\', flush=True)\n'
                      "for line in sys.stdin:\n" + textwrap.indent(textwrap.dedent(body), "    ") + "\n")
    return [sys.executable, str(script)]


def two_pings(command: list[str]) -> tuple[SandboxProcess, list[BaseException | Any]]:
    async def go() -> tuple[SandboxProcess, list[BaseException | Any]]:
        process = await SandboxProcess.start(command=command, timeout=20)
        results = await asyncio.gather(process.request("ping", {}), process.request("ping", {}),
                                       return_exceptions=True)
        await process.close()
        return process, results

    return asyncio.run(go())


@pytest.mark.parametrize(("body", "reason"), [
    ('print("Traceback (most recent call last):", flush=True)', "not a JSON object"),
    ('print("[1, 2, 3]", flush=True)', "not a JSON object"),
    ("sys.exit(3)", "exited"),
], ids=["not-json", "json-but-not-an-object", "exit"])
def test_a_bad_stdout_or_death_fails_every_pending_request(tmp_path: Path, body: str, reason: str) -> None:
    process, results = two_pings(fake(tmp_path, body))
    assert all(isinstance(r, FlowWorkerCrashedError) for r in results), results
    assert reason in str(results[0])
    assert not process.alive


def test_a_start_failure_is_a_clear_error() -> None:
    command = sandbox_command(find_node(), snapshot=None, memory_mb=512)
    command[command.index("--pyodide") + 1] = "/nonexistent/pyodide"
    with pytest.raises(FlowIsolateError) as caught:
        asyncio.run(SandboxProcess.start(command=command, timeout=20))
    assert "did not start" in caught.value.message
    assert "flow sandbox:" in caught.value.message  # the runner's own diagnostic, from stderr


def test_a_start_without_ready_times_out(tmp_path: Path) -> None:
    script = tmp_path / "silent.py"
    script.write_text("import time\ntime.sleep(30)\n")
    started = time.monotonic()
    with pytest.raises(FlowIsolateError, match="did not start"):
        asyncio.run(SandboxProcess.start(command=[sys.executable, str(script)], timeout=0.5))
    assert time.monotonic() - started < 5


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=JSON)
def test_json_values_round_trip_through_the_bridge(sandbox: Sandbox, value: Any) -> None:
    back = sandbox.loop.run_until_complete(sandbox.ensure_alive().request("ping", {"v": value}))
    assert back == {"v": value}


def test_a_failed_snapshot_build_falls_back_to_cold_and_is_remembered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOW_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(install, "snapshot_failures", {})
    broken = NodeInfo(sys.executable, find_node().version, "test")  # not Node: the build fails
    assert install.ensure_snapshot(broken) is None
    (reason,) = install.snapshot_failures.values()
    assert "exited with" in reason
    runs = 0

    def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal runs
        runs += 1
        raise AssertionError("the builder ran again")

    monkeypatch.setattr(install.subprocess, "run", counting)
    assert install.ensure_snapshot(broken) is None  # remembered: no second build
    assert runs == 0

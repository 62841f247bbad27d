"""The bridge through a real sandbox process: many requests in flight, both
directions, JSON-only values, size limits, and death."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from flow_kernel.errors import CapabilityViolationError, FlowError, FlowIsolateError, FlowWorkerCrashedError
from flow_kernel.sandbox import install
from flow_kernel.sandbox.node import find_node
from tests.sandbox.sandbox_helpers import Sandbox, sandbox

__all__ = ["sandbox"]


def test_ping_round_trip(sandbox: Sandbox) -> None:
    value = {"a": [1, 2.5, "ü", None, True], "b": {"c": "x" * 1000}}
    assert sandbox.loop.run_until_complete(sandbox.process.request("ping", value)) == value
    assert sandbox.process.ready["abi"] == 1 and sandbox.process.ready["python"].startswith("3.")


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

"""The JSON-lines bridge under abuse, both directions, through a real Node + Pyodide
process: malformed JSON, messages that are JSON but not protocol, unknown operations,
replies to ids nobody asked, non-JSON values, oversized messages and floods. Each gives
a clear error (or is ignored, where the protocol says a line has no effect), and the
host — and, where the fault is the host's input, the sandbox — goes on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flow_kernel import SourceFile
from flow_kernel.errors import FlowError, FlowIsolateError, FlowWorkerCrashedError
from flow_kernel.lang.compiler import compile_source
from flow_kernel.runtime.context import RunContext
from flow_kernel.runtime.host import HostServices
from tests.sandbox.sandbox_helpers import Sandbox, sandbox
from tests.security.door_helpers import attempt

__all__ = ["sandbox"]


def write_raw(box: Sandbox, *lines: bytes) -> None:
    process = box.ensure_alive()
    assert process.proc is not None and process.proc.stdin is not None
    for line in lines:
        process.proc.stdin.write(line + b"\n")
    box.loop.run_until_complete(process.proc.stdin.drain())


def ping(box: Sandbox, value: Any) -> Any:
    return box.loop.run_until_complete(box.process.request("ping", value))


HOST_GARBAGE = [
    b"not json", b"{", b"[1, 2, 3]", b'"a string"', b"null", b"12", b"\xff\xfe\x00 not utf-8",
    b'{"id": 99999, "ok": true, "value": "a reply to nothing"}',
    b'{"id": [1], "ok": true}', b'{"id": {"a": 1}, "ok": false, "error": "x"}', b'{"ok": true}',
    b'{"id": 1.5, "ok": false, "error": null}', b'{"op": "run"}', b'{"op": "cancel", "payload": {"run": 7}}',
    b'{"op": ["ping"], "payload": {}}', b'{"id": 1000000003, "op": "run", "payload": "not an object"}',
    b'{"id": 1000000004, "op": "expect", "payload": {"run": "nobody", "call": "c", "output": 1}}',
    b'{"id": 1000000005, "op": "ping", "payload": {"x": NaN}}', b'{"id": 1000000006, "op": "cancel", "payload": null}',
    b"{" + b'"a":' * 0 + b'"deep": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    # Deep enough to overflow V8's stack in json's parser under either tier (flowbox/bridge.py
    # MAX_DEPTH): a fatal error of Pyodide's, the sandbox's exit, unless it is never parsed.
    b'{"deeper": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    # A request the sandbox would answer with an id the host cannot look up (a reply it drops
    # the sandbox for): not a request.
    b'{"id": [2], "op": "ping", "payload": {}}',
]


def test_garbage_from_the_host_is_ignored_and_the_sandbox_goes_on(sandbox: Sandbox) -> None:
    process = sandbox.ensure_alive()
    for number, line in enumerate(HOST_GARBAGE):
        write_raw(sandbox, line)
        assert ping(sandbox, {"after": number}) == {"after": number}, line
    assert sandbox.process is process and process.alive
    assert sandbox.raw("return 6 * 7") == 42


def test_bad_replies_while_the_sandbox_waits_for_one_leave_it_running(sandbox: Sandbox) -> None:
    # Unhashable ids only reach a lookup when the sandbox has a call of its own pending, and a
    # reply too deep to parse must fail the call it names instead of leaving it to wait.
    process = sandbox.ensure_alive()

    async def answer(op: str, payload: dict[str, Any]) -> Any:
        assert process.proc is not None and process.proc.stdin is not None
        deep = b"[" * 100_000 + b"]" * 100_000
        for line in (b'{"id": [1], "ok": true}', b'{"id": {"a": 1}, "ok": false, "error": "x"}',
                     b'{"id":%d,"ok":true,"value":%s}' % (payload["rid"], deep)):
            process.proc.stdin.write(line + b"\n")  # before this call's own reply, which is then late
        return "the reply"

    process.handler = answer
    try:
        result = sandbox.raw("""
            import flowbox.bridge as b
            try:
                await b._bridge.invoke("answer", {"rid": b._bridge.next_id + 1})
            except Exception as exc:
                return [exc.code, exc.message, len(b._bridge.pending)]
        """)
    finally:
        process.handler = None
    assert result == ["isolate", "a message from the host nests deeper than 1000 levels", 0]
    assert sandbox.process is process and process.alive
    assert ping(sandbox, "after") == "after"


def test_a_request_too_deep_to_parse_is_answered_with_an_isolate_error(sandbox: Sandbox) -> None:
    process = sandbox.ensure_alive()
    assert process.proc is not None and process.proc.stdin is not None
    stdin = process.proc.stdin

    async def deep_request() -> Any:  # as a host that can encode it would send it
        process.next_id += 1
        future: asyncio.Future[Any] = sandbox.loop.create_future()
        process.pending[process.next_id] = future
        nested = b"[" * 1001 + b"]" * 1001  # the host's own encoder stops before this
        stdin.write(b'{"id":%d,"op":"ping","payload":{"x":%s}}\n' % (process.next_id, nested))
        return await future

    with pytest.raises(FlowIsolateError, match="nests deeper than 1000 levels"):
        sandbox.loop.run_until_complete(deep_request())
    assert sandbox.process is process and process.alive


def nest(levels: int, inner: str = "1") -> str:
    return "[" * levels + inner + "]" * levels


# (a host line, whether it nests deeper than flowbox/bridge.py MAX_DEPTH: 1000 levels)
DEPTHS = [
    (nest(1000), False), (nest(1001), True),
    ('{"a": ' + nest(998, '{"b": 2}') + "}", False), ('{"a": ' + nest(999, '{"b": 2}') + "}", True),
    ('["' + "[" * 5000 + '", 1]', False),  # brackets inside a string
    ('["\\\\", ' + nest(1000) + "]", True),  # a string that ends in an escaped backslash
    ('["\\"' + "[" * 5000 + '"]', False),  # an escaped quote does not end a string
    ("[" * 5000 + '"unterminated', True),
]


def test_the_depth_of_a_host_line_is_counted_outside_strings(sandbox: Sandbox) -> None:
    result = sandbox.raw("""
        import flowbox.bridge as b
        return [b.too_deep(line) for line in args["lines"]]
    """, args={"lines": [line for line, _ in DEPTHS]})
    assert result == [deep for _, deep in DEPTHS]


def test_an_unknown_operation_either_way_is_a_clear_error(sandbox: Sandbox) -> None:
    with pytest.raises(FlowError, match="unknown sandbox operation 'format_disk'"):
        sandbox.loop.run_until_complete(sandbox.process.request("format_disk", {}))
    host = _host()
    result = _with_host(sandbox, host, """
        import flowbox.bridge as b
        try:
            await b._bridge.invoke("format_disk", {})
        except Exception as exc:
            return [exc.code, exc.message]
    """)
    assert result == ["capability-violation", "unknown host operation 'format_disk'"]


SANDBOX_GARBAGE = [
    '{"id": 424242, "ok": true, "value": "a reply to nothing"}',
    '{"id": 424243, "ok": false, "error": {"code": "isolate"}}',
    '{"id": "abc", "ok": true}', '{"id": null, "ok": true}', '{"ok": true}', '{}',
    '{"op": "event", "payload": [1, 2]}', '{"op": "event", "payload": "text"}', '{"op": "event"}',
    '{"op": "event", "payload": {"type": "workflow.started", "data": {"limits": {"agent_runs": "many"}}}}',
    '{"op": "unknown-notification", "payload": {}}',
    '{"id": 900001, "op": "now"}', '{"id": "str-id", "op": "uuid", "payload": {}}',
    '{"id": 900002, "op": "agent", "payload": [1]}', '{"id": 900003, "op": "process", "payload": {"arguments": 5}}',
    '{"id": 900004, "op": ["x"], "payload": {}}',
]


def test_garbage_from_the_sandbox_is_refused_and_the_host_goes_on(sandbox: Sandbox) -> None:
    host = _host()
    result = _with_host(sandbox, host, """
        import flowbox.bridge as b, asyncio
        for line in args["lines"]:
            b._bridge.io.write(line)
        await asyncio.sleep(0.3)   # the host's replies to the requests among them come back
        return await b._bridge.invoke("echo", {"still": "here"})
    """, lines=SANDBOX_GARBAGE)
    assert result == {"still": "here"}
    assert sandbox.process.alive
    assert ping(sandbox, {"host": "alive"}) == {"host": "alive"}


@pytest.mark.parametrize("line", ['{"id": [1], "ok": true}', '{"id": {"a": 1}, "op": "now"}'],
                         ids=["reply-with-a-list-id", "request-with-an-object-id"])
def test_an_unhashable_id_from_the_sandbox_is_a_clear_crash(sandbox: Sandbox, line: str) -> None:
    result = sandbox.raw(f"""
        import flowbox.bridge as b, asyncio
        b._bridge.io.write({line!r})
        await asyncio.sleep(5)
        return "survived"
    """)
    if result != "survived":  # the host may drop the sandbox, but must say why
        assert isinstance(result, FlowWorkerCrashedError), result
        assert "not a valid" in result.message or "malformed" in result.message, result.message
    assert sandbox.raw("return 1") == 1


def test_json_nested_too_deeply_from_the_sandbox_is_a_clear_crash(sandbox: Sandbox) -> None:
    # Found here: the host's json.loads raised RecursionError, which escaped the reader, and
    # the sandbox was reported as "the sandbox process exited".
    result = sandbox.raw("""
        import flowbox.bridge as b, asyncio
        b._bridge.io.write('{"op": "event", "payload": ' + "[" * 100000 + "]" * 100000 + "}")
        await asyncio.sleep(5)
        return "survived"
    """)
    assert isinstance(result, FlowWorkerCrashedError), result
    assert "nested too deeply" in result.message, result.message
    assert sandbox.raw("return 4") == 4


def test_json_nested_deeply_from_the_host_is_refused_by_the_sandbox(sandbox: Sandbox) -> None:
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(FlowIsolateError, match="non-JSON"):  # was a bare RecursionError, the request left pending
        sandbox.loop.run_until_complete(sandbox.ensure_alive().request("ping", {"deep": deep}))
    assert sandbox.process.pending == {}
    assert sandbox.raw("return 5") == 5


def test_non_json_values_give_isolate_errors_and_nothing_dies(sandbox: Sandbox) -> None:
    with pytest.raises(FlowIsolateError, match="non-JSON"):
        sandbox.loop.run_until_complete(sandbox.process.request("ping", {"x": {1, 2}}))
    with pytest.raises(FlowIsolateError, match="non-JSON"):
        sandbox.loop.run_until_complete(sandbox.process.request("ping", {"x": float("inf")}))

    async def odd(op: str, payload: dict[str, Any]) -> Any:
        return {"value": object()} if op == "object" else float("nan")

    sandbox.process.handler = odd
    try:
        result = sandbox.raw("""
            import flowbox.bridge as b
            out = []
            for op in ("object", "nan"):
                try:
                    out.append(await b._bridge.invoke(op, {}))
                except Exception as exc:
                    out.append([exc.code, exc.message[:40]])
            for value in (float("nan"), b"bytes", object()):
                try:
                    b._bridge.notify("event", {"v": value})
                    out.append("sent")
                except Exception as exc:
                    out.append(exc.code)
            return out
        """)
    finally:
        sandbox.process.handler = None
    assert [r[0] for r in result[:2]] == ["isolate", "isolate"], result
    assert result[2:] == ["isolate"] * 3, result
    assert sandbox.process.alive


def test_an_oversized_message_from_the_host_gets_through_and_its_echo_is_refused(sandbox: Sandbox) -> None:
    big = "x" * (17 * 1024 * 1024)
    with pytest.raises(FlowWorkerCrashedError, match="longer than"):
        sandbox.loop.run_until_complete(sandbox.ensure_alive().request("ping", {"big": big}))
    assert sandbox.raw("return 2") == 2  # a new process
    assert ping(sandbox, {"medium": "y" * (4 * 1024 * 1024)}) == {"medium": "y" * (4 * 1024 * 1024)}


def test_a_flood_of_requests_and_events_from_the_sandbox_loses_nothing(sandbox: Sandbox) -> None:
    host = _host()
    n_events, n_requests = 20_000, 5_000
    result = _with_host(sandbox, host, """
        import flowbox.bridge as b, asyncio
        for i in range(args["events"]):
            b._bridge.notify("event", {"type": "log", "data": {"i": i}})
        replies = await asyncio.gather(*[b._bridge.invoke("echo", {"i": i}) for i in range(args["requests"])])
        return sum(r["i"] for r in replies)
    """, events=n_events, requests=n_requests)
    assert result == sum(range(n_requests))
    flood = [e for e in host.events if e["type"] == "log"]
    assert [e["data"]["i"] for e in flood] == list(range(n_events))  # every one, in order
    assert [e["seq"] for e in host.events] == list(range(1, len(host.events) + 1))


def test_a_flood_of_requests_and_garbage_from_the_host_is_answered(sandbox: Sandbox) -> None:
    async def flood() -> list[Any]:
        process = sandbox.ensure_alive()
        assert process.proc is not None and process.proc.stdin is not None
        tasks = []
        for i in range(10_000):
            tasks.append(asyncio.ensure_future(process.request("ping", {"i": i})))
            if i % 100 == 0:
                process.proc.stdin.write(HOST_GARBAGE[(i // 100) % len(HOST_GARBAGE)] + b"\n")
        return await asyncio.gather(*tasks)

    replies = sandbox.loop.run_until_complete(flood())
    assert replies == [{"i": i} for i in range(10_000)]


# -- helpers --------------------------------------------------------------------------------

def _host() -> HostServices:
    compiled = compile_source(SourceFile("b.flow", "1"))
    return HostServices(compiled.check, RunContext(run_id="r-bridge"))


def _with_host(box: Sandbox, host: HostServices, body: str, **args: Any) -> Any:
    box.ensure_alive().handler = host.handle
    box.process.on_notify = host.on_notify
    try:
        return attempt(box, body, args=args)
    finally:
        box.process.handler = box.process.on_notify = None


"""What one client can make `flow serve` hold (docs/security.md, "Serving workflows": bounds):
a body over the cap is refused with 413 before it is read, connections left half-way are
closed and never keep a real client out, an input that is too large or does not match its
schema leaves no journal, and a caller parked on a question holds up no other caller's run.
Each is tried for real against the command (a child process, or `main` in a thread so that
a guard can be taken away) and gets through once its guard is gone (the reopened door)."""

from __future__ import annotations

import asyncio
import dataclasses
import http.client
import select
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from a2a.helpers.proto_helpers import new_message, new_text_part
from a2a.types import Role, SendMessageRequest, TaskState

from flow_kernel.cli import build_parser
from flow_kernel.cli.serve import _workflow_host
from flow_kernel.serve import common as serve_common
from flow_kernel.serve import limits as serve_limits
from flow_kernel.serve.limits import MIB
from tests.protocols.helpers import HERE
from tests.protocols.serving import (
    AUTH,
    InProcess,
    a2a,
    a2a_send,
    a2a_until,
    flow_serve_child,
    journals,
)

ENDED = {TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED}
# A JSON-RPC request padded with whitespace to 2 MiB: valid JSON, twice the default cap.
BIG = b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}'.ljust(2 * MIB)


@pytest.fixture
def waiting(tmp_path: Path) -> Path:
    shutil.copy(HERE / "waiting.flow", tmp_path / "waiting.flow")
    return tmp_path / "waiting.flow"


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch, waiting: Path) -> Iterator[Any]:
    servers: list[InProcess] = []

    def start(mode: str = "a2a", *more: str) -> InProcess:
        servers.append(InProcess(monkeypatch, waiting, mode, *more))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def _address(url: str) -> tuple[str, int]:
    host, port = url.split("//", 1)[1].split("/", 1)[0].split(":")
    return host, int(port)


def _declared_big(url: str) -> int:
    """POST headers declaring a 2 MiB body, and the status answered before any of it is sent."""
    connection = http.client.HTTPConnection(*_address(url), timeout=30)
    try:
        connection.putrequest("POST", "/")
        for name, value in {**AUTH, "Content-Type": "application/json", "Content-Length": str(len(BIG))}.items():
            connection.putheader(name, value)
        connection.endheaders()
        return connection.getresponse().status
    finally:
        connection.close()


def _sent_big(url: str, chunked: bool = False) -> int:
    """POST the 2 MiB body (with its length, or chunked with none), piece by piece until the
    server answers, and the status it answered."""
    host, port = _address(url)
    with socket.create_connection((host, port), timeout=30) as sock:
        framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(BIG)}"
        sock.sendall(f"POST / HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: {AUTH['Authorization']}\r\n"
                     f"Content-Type: application/json\r\n{framing}\r\n\r\n".encode())
        for start in range(0, len(BIG), 65536):
            if select.select([sock], [], [], 0)[0]:
                break  # answered before the whole body was sent
            piece = BIG[start:start + 65536]
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
        else:
            if chunked:
                sock.sendall(b"0\r\n\r\n")
        status_line = sock.makefile("rb").readline()
        return int(status_line.split()[1])


def _quick_run_completes(url: str) -> bool:
    async def go() -> Any:
        async with a2a(url) as client:
            return await a2a_send(client, "quick", {})

    task = asyncio.run(go())
    return bool(task.status.state == TaskState.TASK_STATE_COMPLETED and task.status.message.parts[0].text == '"done"')


# -- bodies ----------------------------------------------------------------------------------------
def test_a_body_over_the_cap_is_refused_before_it_is_read_and_the_server_goes_on(waiting: Path) -> None:
    with flow_serve_child(waiting, "a2a") as child:
        assert _declared_big(child.url) == 413  # answered from the headers: none of the body was sent
        assert _sent_big(child.url, chunked=True) == 413  # no length said: refused once 1 MiB was passed
        assert _quick_run_completes(child.url)  # and the server serves on
        assert child.process.poll() is None


def test_max_body_sets_the_cap(waiting: Path) -> None:
    with flow_serve_child(waiting, "a2a", "--max-body", str(4 * MIB)) as child:
        assert _sent_big(child.url) == 200  # 2 MiB under a 4 MiB cap: read, and answered by the A2A server


def test_reopened_door_without_the_cap_the_whole_body_is_read(in_process: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    guarded = in_process()
    assert _declared_big(guarded.url) == 413
    monkeypatch.setattr(serve_limits, "body_cap", lambda app, bounds: app)  # the cap as if never built
    open_server = in_process()
    assert _sent_big(open_server.url) == 200  # all 2 MiB taken in and parsed


def _sent_whole_then_read(url: str, size: int = 4 * MIB) -> int | str:
    """POST headers declaring `size` bytes and then all of them without looking for an answer,
    as a plain client does; then the status line, or "reset" when the connection was reset."""
    host, port = _address(url)
    body = BIG.ljust(size)
    with socket.create_connection((host, port), timeout=30) as sock:
        try:
            sock.sendall(f"POST / HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: {AUTH['Authorization']}\r\n"
                         f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
            status_line = sock.makefile("rb").readline()
        except (ConnectionResetError, BrokenPipeError):
            return "reset"
        return int(status_line.split()[1]) if status_line else "reset"


def test_a_client_that_sends_its_whole_refused_body_still_reads_the_413(in_process: Any) -> None:
    server = in_process()
    assert _sent_whole_then_read(server.url) == 413  # the server stopped writing, then dropped the rest
    assert _quick_run_completes(server.url)


def test_reopened_door_closing_at_once_resets_the_413_away(in_process: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_limits, "LINGER_SECONDS", 0.0)  # close as soon as the answer is written
    server = in_process()
    # 64 MiB: more than both sockets' buffers can hold (loopback autotuning took a 4 MiB body
    # whole on one CI machine, and the client then read the 413 before the reset arrived), so
    # the client is still sending when the server closes with the rest unread.
    assert _sent_whole_then_read(server.url, 64 * MIB) == "reset"


# -- connections -----------------------------------------------------------------------------------
def _half_open(url: str, count: int) -> list[socket.socket]:
    """Connections that start a request and never finish its headers."""
    host, port = _address(url)
    opened = []
    for _ in range(count):
        sock = socket.create_connection((host, port), timeout=10)
        sock.sendall(f"POST / HTTP/1.1\r\nHost: {host}:{port}\r\nX-Slow: ".encode())
        opened.append(sock)
    return opened


def _closed_by_the_server(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:  # reset
        return True


def _small_bounds(monkeypatch: pytest.MonkeyPatch, protocol: Any) -> None:
    """Test-sized bounds: 32 connections, headers within 1 s."""
    monkeypatch.setattr(serve_limits, "bounded_protocol",
                        lambda bounds: protocol(dataclasses.replace(bounds, max_connections=32, header_timeout=1.0)))


def test_half_open_connections_do_not_keep_a_real_client_out(waiting: Path) -> None:
    with flow_serve_child(waiting, "a2a") as child:
        opened = _half_open(child.url, 400)  # past the 256 held: the oldest idle ones are closed
        try:
            assert _quick_run_completes(child.url)
            assert sum(_closed_by_the_server(s) for s in opened) >= 400 - 256
        finally:
            for sock in opened:
                sock.close()


def test_half_open_connections_are_bounded_and_closed_at_their_deadline(in_process: Any,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _small_bounds(monkeypatch, serve_limits.bounded_protocol)
    server = in_process()
    opened = _half_open(server.url, 100)
    try:
        assert _quick_run_completes(server.url)
        assert len(server.uvicorn.server_state.connections) <= 33
        deadline = time.monotonic() + 60  # generous: the server closes them after 1 s
        while not all(_closed_by_the_server(s) for s in opened) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert all(_closed_by_the_server(s) for s in opened)
    finally:
        for sock in opened:
            sock.close()


def test_reopened_door_without_the_bound_every_half_open_connection_is_held(in_process: Any,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    _small_bounds(monkeypatch, lambda bounds: H11Protocol)  # uvicorn as it comes: no deadline, no cap
    server = in_process()
    opened = _half_open(server.url, 100)
    try:
        time.sleep(3)  # three times the deadline the bound would have set
        assert len(server.uvicorn.server_state.connections) >= 100
        assert not any(_closed_by_the_server(s) for s in opened)
    finally:
        for sock in opened:
            sock.close()


# -- inputs ----------------------------------------------------------------------------------------
class _Silent:
    """A channel that sees nothing and cannot answer."""

    def event(self, event: Any) -> None:
        pass

    async def approve(self, question: str, details: Any) -> bool | None:
        return None

    async def ask(self, question: str, choice: list[str] | None) -> str | None:
        return None


def _run_inputs(waiting: Path, inputs: list[dict[str, Any]]) -> list[Any]:
    host = _workflow_host(build_parser().parse_args(["serve", str(waiting), "--mcp"]))

    async def go() -> list[Any]:
        try:
            return [await host.run("words", given, _Silent()) for given in inputs]
        finally:
            await host.aclose()

    return asyncio.run(go())


HUGE = {"text": "word " * (MIB // 4)}  # 1.25 MiB of JSON


def test_a_bad_or_oversized_input_leaves_no_journal(waiting: Path) -> None:
    bad, huge, fine = _run_inputs(waiting, [{"text": 5}, HUGE, {"text": "a b c"}])
    assert bad.error.code == "workflow-input-validation" and "is not of type" in bad.error.message
    assert huge.error.code == "workflow-input-validation" and "--max-body" in huge.error.message
    assert fine.result == 3
    assert [p.stem for p in journals(waiting.parent)] == [fine.run_id]  # only the run that ran


def test_over_mcp_stdio_an_oversized_input_is_refused_without_a_journal(waiting: Path) -> None:
    from mcp import Client, StdioServerParameters

    from tests.protocols.serving import FLOW

    async def go() -> Any:
        params = StdioServerParameters(command=FLOW, args=["serve", str(waiting), "--mcp"], cwd=str(waiting.parent))
        async with Client(params) as client:
            return await client.call_tool("words", HUGE)

    result = asyncio.run(go())
    assert result.is_error and result.content[0].text.startswith("workflow-input-validation")
    assert journals(waiting.parent) == []


def test_reopened_door_without_the_input_check_the_journal_is_written(waiting: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_common.WorkflowHost, "_refused_input", lambda self, name, arguments: None)
    bad, huge = _run_inputs(waiting, [{"text": 5}, HUGE])
    assert bad.error.code == "workflow-input-validation"  # still refused, by the run, once its journal is open
    assert huge.error is None
    written = {p.stem: p.stat().st_size for p in journals(waiting.parent)}
    assert set(written) == {bad.run_id, huge.run_id} and written[huge.run_id] > MIB


# -- parking ---------------------------------------------------------------------------------------
async def _parked_then_another(url: str, patience: float) -> tuple[Any, Any, Any]:
    """Caller A's run asks a question nobody answers; caller B runs `quick`. B's task after at
    most `patience` seconds (None if its send had not returned), then A answered and B's end."""
    async with a2a(url) as first, a2a(url) as second:
        parked = await a2a_send(first, "remove", {"item": "x"})
        other = asyncio.ensure_future(a2a_send(second, "quick", {}))
        done, _ = await asyncio.wait({other}, timeout=patience)
        early = other.result() if done else None
        reply = SendMessageRequest(message=new_message([new_text_part("no")], role=Role.ROLE_USER,
                                                       task_id=parked.id, context_id=parked.context_id))
        [r async for r in first.send_message(reply)]
        late = await other
        return parked, early, await a2a_until(second, late.id, ENDED)


def test_a_caller_parked_on_a_question_holds_up_no_other_caller(in_process: Any) -> None:
    server = in_process()
    parked, early, _ = asyncio.run(_parked_then_another(server.url, patience=60))
    assert parked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert early is not None and early.status.state == TaskState.TASK_STATE_COMPLETED  # while A still waited


def test_mcp_a_client_that_never_answers_holds_up_no_other_client(waiting: Path) -> None:
    from tests.protocols.serving import NeverAnswers, mcp

    never = NeverAnswers()

    async def go(url: str) -> Any:
        async with mcp(url, elicitation_callback=never, mode="legacy") as first, mcp(url) as second:
            parked = asyncio.ensure_future(first.call_tool("remove", {"item": "x"}))
            await asyncio.wait_for(never.asked.wait(), 60)
            counted = await asyncio.wait_for(second.call_tool("words", {"text": "a b"}), 60)
            assert not parked.done()
            parked.cancel()
            return counted

    with flow_serve_child(waiting, "mcp") as child:
        counted = asyncio.run(go(child.url))
    assert counted.structured_content == {"result": 2}


def test_reopened_door_one_turn_for_all_lets_a_parked_caller_hold_up_the_next(in_process: Any,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    real_init = serve_common.WorkflowHost.__init__

    def one_turn(self: Any, *args: Any, **kw: Any) -> None:
        real_init(self, *args, **kw)
        self._turns = asyncio.Semaphore(1)  # runs take turns, as with one lock for all

    monkeypatch.setattr(serve_common.WorkflowHost, "__init__", one_turn)
    server = in_process()
    parked, early, late = asyncio.run(_parked_then_another(server.url, patience=5))
    assert parked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert early is None  # B waited on A's question...
    assert late.status.state == TaskState.TASK_STATE_COMPLETED  # ...and ran once A answered


# -- runs waiting for a turn -----------------------------------------------------------------------
class _Holds(_Silent):
    """A caller who answers its question only when told to."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.answer = asyncio.Event()

    async def approve(self, question: str, details: Any) -> bool | None:
        self.asked.set()
        await self.answer.wait()
        return True


def _flood(waiting: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, Any, bool]:
    """One turn (FLOW_MAX_SANDBOXES=1) held by a parked run, one run waiting for it, and a third
    run with room for one waiting: the third's outcome if it came at once, and the others'."""
    monkeypatch.setenv("FLOW_MAX_SANDBOXES", "1")
    host = _workflow_host(build_parser().parse_args(["serve", str(waiting), "--mcp"]))
    host.bounds = dataclasses.replace(host.bounds, max_waiting=1)

    async def go() -> tuple[Any, Any, Any, bool]:
        try:
            holder = _Holds()
            parked = asyncio.ensure_future(host.run("remove", {"item": "x"}, holder))
            await holder.asked.wait()
            queued = asyncio.ensure_future(host.run("quick", {}, _Silent()))
            third = asyncio.ensure_future(host.run("quick", {}, _Silent()))
            done, _ = await asyncio.wait({third}, timeout=5)
            holder.answer.set()
            return await parked, await queued, await third, bool(done)
        finally:
            await host.aclose()

    return asyncio.run(go())


def test_past_the_runs_waiting_for_a_turn_one_more_is_refused_at_once(waiting: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    parked, queued, third, at_once = _flood(waiting, monkeypatch)
    assert at_once and third.error.code == "limit-exceeded" and "waiting for a turn" in third.error.message
    assert parked.result == "deleted x" and queued.result == "done"  # the others went on
    assert third.run_id not in {p.stem for p in journals(waiting.parent)}


def test_reopened_door_without_the_bound_every_run_waits_holding_its_input(waiting: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_common.WorkflowHost, "_refused_turn", lambda self: None)
    _, _, third, at_once = _flood(waiting, monkeypatch)
    assert not at_once and third.result == "done"  # it waited behind the parked run, as every flooded run would

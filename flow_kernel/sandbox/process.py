"""One sandbox: a Node.js process running Pyodide, spoken to in JSON lines (docs/sandbox.md).

`SandboxProcess` owns the process and the bridge: requests in flight in both
directions, notifications, size limits, and death. When the process dies or sends
something that is not a JSON object, every pending request fails with
`FlowWorkerCrashedError` and the process is gone for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import json.scanner
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Generator
from pathlib import Path
from typing import Any

from flow_kernel.errors import FlowError, FlowIsolateError, FlowWorkerCrashedError
from flow_kernel.json_text import encoder
from flow_kernel.sandbox import early, stack
from flow_kernel.sandbox.install import (
    BOOTSTRAP_DIR,
    JS_DIR,
    RUNNER,
    SandboxInstallError,
    ensure_pyodide,
    runtime_paths,
    snapshot_path,
    usable_snapshot,
)
from flow_kernel.sandbox.node import NodeInfo, NodeNotFound, find_node, network_namespace
from flow_kernel.sandbox.procfs import status_bytes

MAX_LINE = 16 * 1024 * 1024
READ_SIZE = 256 * 1024  # bytes asked of the sandbox's stdout at a time (what is there comes at once)
START_TIMEOUT = 60.0
EXITED = "the sandbox process exited"  # the reader's reason when the process ends by itself
EXIT_WAIT = 2.0  # seconds a dead sandbox's exit and pipes are awaited before they are closed anyway
# The sandbox's whole environment. MALLOC_TRIM_THRESHOLD_ fixed at glibc's initial 128 KiB:
# left dynamic, freeing the 30 MiB snapshot buffer raises it to 60 MiB, and from then on the
# malloc arenas of V8's threads (compilers, GC) keep what they freed; ~10 MB of resident
# memory per sandbox (docs/performance.md, "Start-up and memory").
SANDBOX_ENV = {"MALLOC_TRIM_THRESHOLD_": "131072"}

Handler = Callable[[str, dict[str, Any]], Awaitable[Any]]
# `json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":"))` with one
# encoder for every line instead of a new one each time (a line per agent call and reply).
_encode = encoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
# The C scanner of the decoder `json.loads` of a str uses (its defaults), made once: one
# value from a position, and where it ends (`decode_line`).
# (typeshed types the scanner's context as a scanner; it is the decoder whose options it reads)
_scan: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]
Notify = Callable[[str, dict[str, Any]], None]
# Whether a request (op, payload) may run at once in the reader, up to its first wait, rather
# than in a task of its own: the handler's owner says so only for code that nothing ties to
# the current task (anyio's cancel scopes are; runtime/agents/pipeline.py `AgentPipeline.runs_at_once`).
Eager = Callable[[str, Any], bool]


class _ReapedSandboxFilter(logging.Filter):
    """Drops asyncio's "Unknown child process pid N, will report returncode 255" for a
    sandbox this module killed or saw die. Its exit status was reaped before asyncio's
    watcher thread got to it (seen on Python 3.11 after SIGKILL), so the thread logs a
    warning that would otherwise land in a notebook cell's stderr; the exit status is
    not used — the death was already handled as `worker-crashed` or a recycle."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if str(record.msg).startswith("Unknown child process pid") and isinstance(args, tuple) and args:
            return args[0] not in _ENDED_PIDS
        return True


_ENDED_PIDS: set[int] = set()
logging.getLogger("asyncio").addFilter(_ReapedSandboxFilter())


def sandbox_command(node: NodeInfo, *, snapshot: Path | None, memory_mb: int, isolate_network: bool = True) -> list[str]:
    pyodide = ensure_pyodide()
    # A snapshot changed since it was checked, or built by another Node, is not loaded:
    # this sandbox starts cold.
    if snapshot is not None and not usable_snapshot(snapshot, node):
        snapshot = None
    # Reads of exactly the files it loads: the runner, the bootstrap, and the
    # runtime files whose hashes were just checked — a file added beside them (a planted
    # module, say) cannot be read, let alone loaded.
    reads = [str(RUNNER), str(JS_DIR / "package.json"), str(BOOTSTRAP_DIR),
             *(str(path.resolve()) for path in runtime_paths())]
    if snapshot is not None:
        reads.append(str(snapshot))
    # --max-semi-space-size=1 (MiB): V8's young generation, which grows to 16 MiB per
    # semi-space during a run's bridge traffic, stays small — about 15 MB less resident
    # memory per sandbox after a run, with no measurable change in calls/s (flow bench).
    # --expose-gc: the runner takes `gc` off the global object at once and collects once,
    # after start-up, to give the snapshot's bytes back (runner.mjs).
    # No --allow-worker: the watchdog runs on the main thread (runner.mjs), so the permission
    # model refuses any Worker (each one a whole V8 isolate, ~12 MB resident).
    # node.wasm_flags: TurboFan's inlining for the WebAssembly CPython (sandbox/node.py).
    # stack.v8_flags(): V8's stack, 64 MiB of the main thread's (`stack.preexec` raises its rlimit).
    command = [node.path, "--disallow-code-generation-from-strings", "--max-semi-space-size=1", "--expose-gc",
               *stack.v8_flags(),
               *node.wasm_flags, node.permission_flag,
               *(f"--allow-fs-read={r}" for r in reads), "--no-warnings",
               str(RUNNER), "--pyodide", str(pyodide), "--bootstrap", str(BOOTSTRAP_DIR), "--memory-mb", str(memory_mb)]
    if snapshot is not None:
        command += ["--snapshot", str(snapshot)]
    prefix = network_namespace() if isolate_network else None
    return [*prefix, *command] if prefix else command


def start_early(memory_mb: int = 512) -> bool:
    """Launch now (sandbox/early.py) the sandbox a pool with this memory cap (SandboxPool's
    default) asks for first — the command and environment `start` uses — if the snapshot is
    built and matches its record; True if one was started. Never raises: the pool's own
    start says what is wrong. The one place the kernel and `flow run`/`resume` decide it."""
    try:
        node = find_node()
        snapshot = snapshot_path(node)
        if snapshot.exists() and usable_snapshot(snapshot):
            return early.launch(sandbox_command(node, snapshot=snapshot, memory_mb=memory_mb), SANDBOX_ENV)
    except (NodeNotFound, SandboxInstallError, OSError):
        return False
    return False


def _too_long() -> str:
    return f"the sandbox sent a line longer than {MAX_LINE} bytes"


class SandboxProcess:
    def __init__(self, command: list[str]) -> None:
        self.command = command
        self.proc: asyncio.subprocess.Process | early.AdoptedProcess | None = None
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.next_id = 0
        self.handler: Handler | None = None
        self.on_notify: Notify | None = None
        self.eager: Eager | None = None
        self.ready: dict[str, Any] = {}
        self.dead: str | None = None
        self.stderr_tail: list[str] = []
        self.crash_line: int | None = None  # the generated module's line its stack overflowed at, if said
        self._ready = asyncio.get_running_loop().create_future()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._outbox: list[str] = []  # lines waiting for `_flush`, at the end of this loop turn
        self._held = 0  # lines written in this loop turn (see `_write`)
        self._early = 1  # the count of this turn's lines at which they next go out at once
        self._dispatching = False  # the reader is handing one read's lines out (`_take_lines`)
        self._reader: asyncio.Task[None] | None = None
        self._stderr_reader: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, *, snapshot: Path | None = None, memory_mb: int = 512, command: list[str] | None = None,
                    timeout: float = START_TIMEOUT) -> SandboxProcess:
        try:
            command = command or sandbox_command(find_node(), snapshot=snapshot, memory_mb=memory_mb)
        except (NodeNotFound, SandboxInstallError) as exc:  # a clear `isolate` error, never a traceback
            raise FlowIsolateError(f"the sandbox did not start: {exc}") from None
        sandbox = cls(command)
        started = early.take(command)  # the kernel's first sandbox, started before its imports (early.py)
        if started is not None:
            sandbox.proc = await early.AdoptedProcess.adopt(started, MAX_LINE + 1)
        else:
            # An environment of our own: no API keys, tokens or paths reach the Node process.
            sandbox.proc = await asyncio.create_subprocess_exec(
                *sandbox.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=dict(SANDBOX_ENV), limit=MAX_LINE + 1, start_new_session=True,
                preexec_fn=stack.preexec())  # its stack; dies with the host, even while busy (sandbox/lifetime.py)
        sandbox._reader = asyncio.ensure_future(sandbox._read())
        sandbox._stderr_reader = asyncio.ensure_future(sandbox._read_stderr())
        try:
            await asyncio.wait_for(asyncio.shield(sandbox._ready), timeout)
        except (TimeoutError, FlowError) as exc:
            tail = "\n".join(sandbox.stderr_tail[-20:])
            await sandbox.kill()
            raise FlowIsolateError(f"the sandbox did not start: {exc}\n{tail}".strip()) from None
        except BaseException:  # cancelled while starting (e.g. a spare at shutdown): leave no process behind
            await asyncio.shield(sandbox.kill())
            raise
        return sandbox

    @property
    def alive(self) -> bool:
        return self.dead is None and self.proc is not None and self.proc.returncode is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def rss_bytes(self) -> int:
        """The process's resident memory in bytes; 0 where it cannot be read."""
        return status_bytes(self.pid, "VmRSS:")

    # -- output ------------------------------------------------------------------------------
    def _write(self, message: dict[str, Any]) -> None:
        if not self.alive or self.proc is None or self.proc.stdin is None:
            raise FlowWorkerCrashedError(f"the sandbox process is gone ({self.dead or 'not running'})")
        self._queue(_encode(message))

    def _queue(self, line: str) -> None:
        # Lines written in one turn of the event loop go out together at its end: replies to a
        # burst of concurrent agent calls cost few syscalls (and wake-ups of Node), not one each.
        # Replies to the requests of one read (calls that end at once) wait for that end. A line
        # written after a wait (an agent's reply when its latency is over, a request) goes out at
        # once, and a burst of them as the turn's 1st, 2nd, 4th, 8th … line: the sandbox starts
        # on the first replies while the host still finishes the others.
        self._outbox.append(line)
        self._held += 1
        if self._held == 1:
            asyncio.get_running_loop().call_soon(self._end_turn)
        if self._held >= self._early and not self._dispatching:
            self._early = 2 * self._held
            self._flush()

    def _end_turn(self) -> None:
        self._held, self._early = 0, 1
        self._flush()

    def _flush(self) -> None:
        lines, self._outbox = self._outbox, []
        if lines and self.alive and self.proc is not None and self.proc.stdin is not None \
                and not self.proc.stdin.is_closing():
            self.proc.stdin.write(("\n".join(lines) + "\n").encode())

    async def request(self, op: str, payload: dict[str, Any]) -> Any:
        """Ask the sandbox and wait for its reply (its value, or its error raised)."""
        return await self.send(op, payload)

    def send(self, op: str, payload: dict[str, Any]) -> asyncio.Future[Any]:
        """Write a request now (it leaves with this loop turn's first line: `_write`) and
        return the future of its reply, which leaves `pending` when it is done. For a caller
        that waits for the reply beside other things (SandboxPool.run) without a task of its
        own; `FlowIsolateError` at once for a payload that is not JSON."""
        self.next_id += 1
        rid = self.next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[rid] = future
        try:
            self._write({"id": rid, "op": op, "payload": payload})
        except (TypeError, ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
            self.pending.pop(rid, None)
            raise FlowIsolateError(f"a non-JSON value cannot enter the sandbox: {exc}") from None
        except FlowError:
            self.pending.pop(rid, None)
            raise
        future.add_done_callback(lambda _: self._forget(rid, future))
        return future

    def _forget(self, rid: int, future: asyncio.Future[Any]) -> None:
        if self.pending.get(rid) is future:
            del self.pending[rid]

    def notify(self, op: str, payload: dict[str, Any]) -> None:
        self._write({"op": op, "payload": payload})

    # -- input -------------------------------------------------------------------------------
    async def _read(self) -> None:
        """The sandbox's lines, taken from each read of the pipe as it comes (one read holds
        the lines of many calls), each checked on its own: at most MAX_LINE bytes (+1, as a
        stream reader with that limit allows), a JSON object, a message the bridge knows.
        The first line that fails ends the process; a partial last line at its exit is dropped."""
        assert self.proc is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        reason = EXITED
        held = bytearray()  # the start of a line whose end has not come yet
        try:
            while True:
                chunk = await stdout.read(READ_SIZE)
                if not chunk:
                    break
                end = chunk.rfind(b"\n")
                lines: list[bytes] = []
                if end >= 0:
                    if held:
                        held += chunk[:end]
                        lines = bytes(held).split(b"\n")
                        held.clear()
                    else:
                        lines = chunk[:end].split(b"\n")
                held += chunk[end + 1:]  # the whole chunk when it has no line end
                failed = self._take_lines(lines) or (_too_long() if len(held) > MAX_LINE + 1 else None)
                if failed is not None:
                    reason = failed
                    break
        finally:
            await self._die(reason)

    def _take_lines(self, lines: list[bytes]) -> str | None:
        """Each complete line, in order, to `_dispatch`; why the bridge must end, at the first
        line that breaks the protocol (None: all were messages)."""
        self._dispatching = True
        try:
            return self._dispatch_lines(lines)
        finally:
            self._dispatching = False

    def _dispatch_lines(self, lines: list[bytes]) -> str | None:
        for raw in lines:
            if len(raw) > MAX_LINE + 1:
                return _too_long()
            try:
                message = decode_line(raw)
            except RecursionError:  # `[[[[…` deeper than the parser's stack: not the protocol
                return f"the sandbox sent JSON nested too deeply: {raw[:80]!r}"
            except ValueError:
                message = None
            if not isinstance(message, dict):
                return f"the sandbox sent a line that is not a JSON object: {raw[:80]!r}"
            try:
                self._dispatch(message)
            except (TypeError, ValueError, AttributeError):  # e.g. an unhashable id: not the protocol
                return f"the sandbox sent a malformed message: {raw[:80]!r}"
        return None

    async def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while True:
            line = await self.proc.stderr.readline()
            if not line:
                return
            self.stderr_tail.append(line.decode(errors="replace").rstrip())
            del self.stderr_tail[:-200]

    def _dispatch(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op is None:
            future = self.pending.get(message.get("id"))  # type: ignore[arg-type]
            if future is None or future.done():
                return  # a reply to nothing we wait for: late, or unknown; it has no effect
            if message.get("ok"):
                future.set_result(message.get("value"))
            else:
                error = message.get("error")
                future.set_exception(FlowError.from_dto(error if isinstance(error, dict) else {"code": "isolate"}))
            return
        if op == "ready" and "id" not in message:
            self.ready = message.get("payload") or {}
            if not self._ready.done():
                self._ready.set_result(True)
            return
        if "id" not in message:
            if self.on_notify is not None:
                with contextlib.suppress(Exception):  # a sink's failure never stops the bridge
                    self.on_notify(str(op), message.get("payload") or {})
            return
        serve = self._serve(message)
        if self.eager is not None and self.eager(str(op), message.get("payload")):
            self._start(serve)
            return
        task = asyncio.get_running_loop().create_task(serve)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _start(self, serve: Coroutine[Any, Any, None]) -> None:
        """Run a request's handler at once, up to its first wait: a zero-latency agent call
        then costs no task and no turn of the event loop. One that waits goes on in a task
        (cancelled with the others by `kill`). Its own copy of the context either way, as a
        task would have."""
        context = contextvars.copy_context()
        try:
            waiting_for = context.run(serve.send, None)
        except StopIteration:
            return
        task = asyncio.get_running_loop().create_task(_go_on(serve, waiting_for), context=context)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, message: dict[str, Any]) -> None:
        rid = message.get("id")
        try:
            if self.handler is None:
                raise FlowIsolateError(f"no host handler for {message.get('op')!r}")
            value = await self.handler(str(message.get("op")), message.get("payload") or {})
            reply: dict[str, Any] = {"id": rid, "ok": True, "value": value}
        except FlowError as exc:
            reply = {"id": rid, "ok": False, "error": exc.to_dto()}
        except Exception as exc:  # a host bug: the sandbox gets an isolate error, the host lives on
            reply = {"id": rid, "ok": False, "error": FlowIsolateError(f"host error: {type(exc).__name__}: {exc}").to_dto()}
        # Queued without `_write`'s check that the process lives: a dead one's lines are
        # dropped by `_flush` (the reply has no one to go to), as `_write` would refuse them.
        try:
            line = _encode(reply)
        except (TypeError, ValueError, RecursionError) as exc:
            line = _encode({"id": rid, "ok": False, "error": FlowIsolateError(f"non-JSON reply: {exc}").to_dto()})
        self._queue(line)

    async def _die(self, reason: str) -> None:
        if self.dead is None:
            self.dead = reason
        if self.proc is not None:
            _ENDED_PIDS.add(self.proc.pid)
        try:
            if self.proc is not None and self.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                # Its exit and the end of its pipes, before anyone hears of the death: a caller
                # that closes its loop at once (asyncio.run) must not leave the transport open.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.proc.wait(), EXIT_WAIT)
            if reason == EXITED and self.dead == EXITED:
                await self._name_the_cause()
        finally:
            self._close_pipes()
            self._fail_pending()

    async def _name_the_cause(self) -> None:
        """A process that exited by itself: its last stderr lines, read to their end (at most
        EXIT_WAIT), say why when V8's stack overflowed inside Python (`stack.overflow_in`)."""
        if self._stderr_reader is not None and not self._stderr_reader.done():
            await asyncio.wait({self._stderr_reader}, timeout=EXIT_WAIT)
        overflow = stack.overflow_in(self.stderr_tail)  # its last 200 lines (a report: ~30 to ~130)
        if overflow is not None:
            self.dead = overflow.reason()
            self.crash_line = overflow.line

    def _close_pipes(self) -> None:
        """Close the process's transport (its three pipes) while the loop still runs. Left to
        the garbage collector, it closes them after the loop may be gone: 'Event loop is closed'.
        (A process adopted from `early` has pipe transports of its own, no subprocess transport.)"""
        transport = getattr(self.proc, "_transport", None)
        if transport is not None:
            transport.close()

    def _fail_pending(self) -> None:
        for future in list(self.pending.values()):
            if not future.done():
                error = FlowWorkerCrashedError(f"the sandbox process died: {self.dead}")
                if self.crash_line is not None:  # the generated module's line: the host maps it to Flow
                    error.dto = {"line": self.crash_line}
                future.set_exception(error)
        self.pending.clear()
        if not self._ready.done():
            self._ready.set_exception(FlowWorkerCrashedError(self.dead or "the sandbox process died"))
            self._ready.exception()  # retrieved: start() reports it

    async def kill(self) -> None:
        if self.dead is None:
            self.dead = "killed by the host"
        if self.proc is not None:
            _ENDED_PIDS.add(self.proc.pid)
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, 9)
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            try:
                await self.proc.wait()
            finally:  # cancelled while waiting: the pipes are closed all the same
                self._close_pipes()
        for task in [self._reader, self._stderr_reader, *self._tasks]:
            if task is not None and not task.done():
                task.cancel()
        await asyncio.gather(*[t for t in [self._reader, self._stderr_reader, *self._tasks] if t is not None],
                             return_exceptions=True)
        await self._die(self.dead)

    async def close(self) -> None:
        await self.kill()


def decode_line(raw: bytes) -> Any:
    """`json.loads(raw)`: the same value, or the same error. A line that starts `{"` (every
    message the runner writes) is UTF-8 by `json.loads`'s own detection (no byte-order mark,
    no zero byte among the first two), so it is decoded as that and given to json's C
    scanner, made once; when the value it finds ends exactly at the line's end, that is
    `json.loads`'s value (which would find the encoding and build the text the same way,
    then run the same scanner between two whitespace matches). Anything else — another
    start, whitespace or more after the value, a line the scanner refuses — goes to
    `json.loads` itself, so a bad line fails with its error."""
    if raw[:2] == b'{"':
        text = raw.decode("utf-8", "surrogatepass")
        try:
            value, end = _scan(text, 0)
        except (ValueError, StopIteration):
            return json.loads(raw)
        if end == len(text):
            return value
    return json.loads(raw)


async def _go_on(coro: Coroutine[Any, Any, None], waiting_for: Any) -> None:
    """The rest of a coroutine that has already run up to its first wait (`waiting_for`, what
    it yielded: a future), driven by the task that awaits this."""
    await _Resumed(coro, waiting_for)


class _Resumed:
    __slots__ = ("coro", "waiting_for")

    def __init__(self, coro: Coroutine[Any, Any, None], waiting_for: Any) -> None:
        self.coro = coro
        self.waiting_for = waiting_for

    def __await__(self) -> Generator[Any, Any, None]:
        coro, waiting_for = self.coro, self.waiting_for
        while True:
            try:
                sent = yield waiting_for
            except BaseException as exc:  # thrown in by the task (a cancellation): passed on
                try:
                    waiting_for = coro.throw(exc)
                except StopIteration:
                    return
            else:
                try:
                    waiting_for = coro.send(sent)
                except StopIteration:
                    return

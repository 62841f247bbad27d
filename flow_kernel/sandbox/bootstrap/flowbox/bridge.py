"""The Python end of the line bridge (docs/sandbox.md): requests, replies and
notifications as JSON lines through the `io` object the Node runner hands over."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import re
import time

from . import deadlines, guard, loop, runs
from .deadlines import current_run
from .errors import FlowError
from .json_lines import decode, encode

ABI = 1
_bridge = None
_loop = None
# The deepest nesting of arrays and objects a line from the host may have: what the parser
# can take safely, above the bound on a run's values (values.MAX_DEPTH, 256), which a value
# the host sent meets where it leaves the run again. json's parser recurses once a level on
# the wasm stack, which V8 bounds on its own: a line about 5,000 levels deep overflowed its
# default stack once V8 had compiled the parser with TurboFan (about 8,000 under Liftoff, its
# first tier), a fatal error of Pyodide's that no `except` catches; the process exits. So a
# line's depth is known before it is parsed. The host's encoder stops at its recursion limit
# (1,000). Lines out are not walked (a walk a line costs more than the encode): the values a
# run sends are bounded where they leave the runtime.
MAX_DEPTH = 1000
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]")
_LEVEL = {"[": 1, "{": 1, "]": -1, "}": -1}
_HEAD = re.compile(r'\{"id":(\d+),"(op|ok)"')  # how the host's encoder starts a request or reply


class Bridge:
    def __init__(self, io):
        self.io = io
        # One lookup on the JavaScript object each, not one a line: reading an attribute of
        # a JsProxy makes a new proxy of the function every time.
        self.write = io.write
        self.write_now = io.flush
        self.next_id = 0
        self.pending = {}
        self.code_cache = {}
        self.tasks = set()
        self.deadlines = deadlines.Deadlines(io, runs.cancel)  # the watchdog, for every run here
        self.unflushed = False  # lines written that the runner may still hold (see `flush`)
        self.turn_lines = 0  # lines written since the runner last called in (see `_send`)
        self.early = 1  # the count of them at which they next go out at once

    # -- output -----------------------------------------------------------------------------
    def _send(self, message):
        try:
            line = encode(message)
        except (TypeError, ValueError) as exc:
            if "id" in message and "op" not in message:
                line = encode({"id": message["id"], "ok": False, "error": FlowError(
                    "isolate", f"the sandbox produced a non-JSON value: {exc}").to_dto()})
            else:
                raise FlowError("isolate", f"a non-JSON value cannot leave the sandbox: {exc}") from None
        self.write(line)
        self.unflushed = True
        # The runner writes what one turn of its loop wrote at the start of the next; the
        # 1st, 2nd, 4th, 8th … line since it last called in goes out at once instead (with
        # the lines before it), so the host starts on the first requests of a burst (the next
        # calls of a fan-out) while this turn still makes the others, in few writes.
        self.turn_lines += 1
        if self.turn_lines >= self.early:
            self.early = 2 * self.turn_lines
            self.flush()

    def new_turn(self):
        """The runner calls in (a read's lines, a turn of the loop): lines count from here."""
        self.turn_lines, self.early = 0, 1

    def flush(self):
        """Have the runner write the lines it holds now. It writes what one turn of its loop
        wrote in one go at the start of the next turn (runner.mjs `writeLine`); Python that
        runs long without a wait calls this every STEP_CLOCK_EVERY steps
        (`Runtime._check_step`), so nothing waits behind a long computation."""
        if self.unflushed:
            self.unflushed = False
            self.write_now()

    def notify(self, op, payload):
        self._send({"op": op, "payload": payload})

    def invoke(self, op, payload):
        self.next_id += 1
        rid = self.next_id
        future = asyncio.get_event_loop().create_future()
        self.pending[rid] = future
        self._send({"id": rid, "op": op, "payload": payload})
        return future

    def memory(self):
        return int(self.io.memory())

    def arm(self, run, ms):
        """`run` is due `ms` milliseconds from now (runs.execute)."""
        self.deadlines.add(run, ms)

    def disarm(self, run):
        """`run` ended: its deadline goes (the other runs' stay)."""
        self.deadlines.remove(run)

    def on_watchdog(self):
        """The earliest deadline passed while Python was idle (its run awaits the host): stop
        the overdue runs the way a host `cancel` does, instead of a KeyboardInterrupt that
        would go off in whatever Python runs next."""
        self.deadlines.on_timer()

    # -- input ------------------------------------------------------------------------------
    def on_lines(self, text):
        """The complete lines of one read from stdin, in their order ("\n" ends a line, and
        nothing else: see runner.mjs `readLines`)."""
        self.new_turn()
        for line in text.split("\n"):
            if line:
                self.on_line(line)

    def on_line(self, line):
        """One line from the host. A line that is not a message (not JSON, not an object, an
        id that is not an integer) has no effect; the sandbox goes on whatever the line holds."""
        if too_deep(line):
            self._refuse(line, f"a message from the host nests deeper than {MAX_DEPTH} levels")
            return
        try:
            message = decode(line)
        except (ValueError, RecursionError):
            return  # the host never sends a bad line; ignoring keeps the sandbox alive
        if not isinstance(message, dict):
            return
        if "op" not in message:
            try:
                future = self.pending.pop(message.get("id"), None)
            except TypeError:  # an unhashable id (a list, an object): a reply to nothing
                return
            if future is None or future.done():
                return  # a late reply (its request was cancelled): it never takes effect
            if message.get("ok"):
                future.set_result(message.get("value"))
            else:
                dto = message.get("error") or {}
                future.set_exception(FlowError(str(dto.get("code", "isolate")), str(dto.get("message", "")),
                                               dto.get("details") if isinstance(dto.get("details"), dict) else None,
                                               dto.get("stage")))
            return
        rid = message.get("id")
        if rid is not None and type(rid) is not int:
            return  # not a request: its reply would carry an id the host cannot look up
        task = asyncio.ensure_future(self._serve(message))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def _refuse(self, line, why):
        """A line that is not parsed: the request or reply it starts as, if any, fails
        with `isolate` (a request gets that reply, a pending call that error), so nothing
        waits for it."""
        head = _HEAD.match(line)
        if head is None:
            return
        rid, kind = int(head.group(1)), head.group(2)
        if kind == "op":
            self._send({"id": rid, "ok": False, "error": FlowError("isolate", why).to_dto()})
            return
        future = self.pending.pop(rid, None)
        if future is not None and not future.done():
            future.set_exception(FlowError("isolate", why))

    async def _serve(self, message):
        rid = message.get("id")
        try:
            value = await self._dispatch(str(message.get("op")), message.get("payload") or {})
        except FlowError as exc:
            reply = {"id": rid, "ok": False, "error": exc.to_dto()}
        except BaseException as exc:
            reply = {"id": rid, "ok": False, "error": FlowError("isolate", f"{type(exc).__name__}: {exc}").to_dto()}
        else:
            reply = {"id": rid, "ok": True, "value": value}
        if rid is None:
            return
        try:
            self._send(reply)
        except BaseException as exc:
            self._send({"id": rid, "ok": False, "error": FlowError(
                "isolate", f"the reply could not be sent: {type(exc).__name__}").to_dto()})

    async def _dispatch(self, op, payload):
        if op == "run":
            current_run.set(payload.get("run"))  # this task's context only
            return await runs.execute(self._main(payload), payload, self)
        if op == "cancel":
            return runs.cancel(payload.get("run"), payload.get("reason", "cancelled"))
        if op == "expect":
            return await runs.expect(payload)  # the clauses run in the run's own context (Runtime.expect)
        if op == "ping":
            return payload
        if op == "echo_bench":
            return await self._echo_bench(payload)
        raise FlowError("capability-violation", f"unknown sandbox operation {op!r}")

    def _main(self, payload):
        source = payload.get("module")
        if not isinstance(source, str):
            raise FlowError("isolate", "`run` needs the module source")
        unrestricted = payload.get("unrestricted") is True
        key = (hashlib.sha256(source.encode()).hexdigest(), unrestricted)
        code = self.code_cache.get(key)
        if code is None:
            code = self.code_cache[key] = compile(source, payload.get("filename") or "<flow>", "exec")
        # Generated code uses no builtins (the verifier checks it); `unrestricted` is the
        # deliberate verifier bypass of the door tests, which must assume full Python.
        namespace = {} if unrestricted else {"__builtins__": {}}
        exec(code, namespace)
        main = namespace.get("main")
        if main is None:
            raise FlowError("isolate", "the module defines no `main`")
        return main

    async def _echo_bench(self, payload):
        n = int(payload.get("n", 1000))
        body = {"x": "x" * int(payload.get("size", 0))}
        started = time.perf_counter()
        if payload.get("concurrent"):
            await asyncio.gather(*[self.invoke("echo", body) for _ in range(n)])
        else:
            for _ in range(n):
                await self.invoke("echo", body)
        return {"n": n, "seconds": time.perf_counter() - started}


def too_deep(line):
    """Whether `line`, read as JSON, nests arrays and objects more than MAX_DEPTH levels
    deep, counting every bracket outside strings (never fewer levels than json's parser
    would enter). A line too short to hold that many brackets is not looked at."""
    if len(line) <= MAX_DEPTH or line.count("[") + line.count("{") <= MAX_DEPTH:
        return False
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", line))
    return max(itertools.accumulate(map(_LEVEL.__getitem__, brackets)), default=0) > MAX_DEPTH


def warm_up():
    """Run a tiny module once so the first real run finds everything imported (snapshot)."""
    compile("async def main(rt, args):\n    return None\n", "<flow>", "exec")
    encode(decode('{"a": [1, 2.5, "x", null, true]}'))


def on_watchdog():
    """Called by the runner (see `Bridge.on_watchdog`)."""
    if _bridge is not None:
        _bridge.on_watchdog()


def run_ready():
    """Called by the runner's setImmediate after `io.wake` (see flowbox/loop.py)."""
    if _bridge is not None:
        _bridge.new_turn()
    _loop.run_ready()


def on_lines(text):
    """Called by the runner with the complete lines of one read (`Bridge.on_lines`); the
    tasks their replies wake run in this same call (`FlowLoop.run_after`)."""
    _loop.run_after(_bridge.on_lines, text)


def attach(io):
    """Called by the runner after the doors are closed; returns the line handler."""
    global _bridge, _loop
    guard.install()
    _loop = loop.install(io.wake)
    _bridge = Bridge(io)
    deadlines.install(_bridge.deadlines)
    # `memory` is the fresh heap: the host's baseline for recycling a process that grew.
    _bridge.notify("ready", {"abi": ABI, "pyodide": str(io.pyodide),
                             "python": ".".join(map(str, __import__("sys").version_info[:3])),
                             "snapshot": bool(io.snapshot), "memory": _bridge.memory()})
    return on_lines

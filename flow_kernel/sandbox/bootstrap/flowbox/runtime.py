"""The runtime ABI (`rt`, version 1) given to `main(rt, args)` of a compiled module.

Every operation of generated code goes through a `Runtime`: step accounting, limits
that nest with workflow calls, stage and pipeline scopes (events), `parallel` and
`parallelMap` on asyncio with fail-closed cancellation, `async` tasks, effects
(print, log, emit, publish, verify, require) as event notifications, and the calls
that need the host (agents, operator prompts, processes, clock) as bridge requests.

The bridge reaches a run through flowbox/runs.py (`execute`, `cancel`, `expect`).
"""

from __future__ import annotations

import asyncio
import contextvars
import time

from . import artifacts as _artifacts
from . import builtins as _builtins
from . import local_checks as _local_checks
from . import operators as _ops
from . import panels as _panels
from . import tasks as _tasks
from . import values as _values
from .errors import FlowError, evaluation, stack_failure

ABI = 1
STEP_CLOCK_EVERY = 64  # check a nested workflow's deadline every this many steps
# ... or every CLOCK_SPARSE times as many while every running frame's deadline is more than
# CLOCK_MARGIN times as far away as those steps take at the recent pace (`_look_at_clock`).
CLOCK_SPARSE = 8
CLOCK_MARGIN = 16
# JS timers (Pyodide's event loop runs on Node's setTimeout) take at most 2^31-1 ms; a
# longer delay overflows to 1 ms, so a `duration` over ~24.8 days would time out at once.
MAX_TIMER_S = (2**31 - 1) / 1000

_frame = contextvars.ContextVar("flow_frame")
_scope = contextvars.ContextVar("flow_scope", default=(None, None))  # (span id, stage name)
_branch = contextvars.ContextVar("flow_branch", default=None)


class Frame:
    """One running workflow (the implicit top-level one included)."""

    __slots__ = ("cap", "cap_limit", "cap_name", "clamped", "concurrency", "deadline", "id", "name", "tasks", "timer",
                 "waiting")

    def __init__(self, name, fid, cap, cap_name, cap_limit, deadline, concurrency):
        self.name = name
        self.id = fid
        self.cap = cap  # the absolute step count at which this frame (or an enclosing one) is exhausted
        self.cap_name = cap_name
        self.cap_limit = cap_limit
        self.deadline = deadline
        self.concurrency = concurrency
        self.tasks = []
        # Host requests in flight and the one timer that fails them at the deadline: a
        # timer per request (`wait_for`) costs a JS setTimeout each in Pyodide's loop.
        self.waiting = set()
        self.timer = None
        self.clamped = False

    def watch(self, future, remaining):
        self.waiting.add(future)
        if self.timer is None:
            self._arm(remaining)

    def _arm(self, remaining):
        self.clamped = remaining > MAX_TIMER_S
        self.timer = asyncio.get_running_loop().call_later(min(remaining, MAX_TIMER_S), self._expire)

    def _expire(self):
        if self.clamped:  # a long deadline's first stretch: arm again for the rest
            self._arm(self.deadline - time.monotonic())
            return
        for future in list(self.waiting):
            if not future.done():
                future.set_exception(_timeout(self))

    def close(self):
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None  # the handle holds its context, which holds this frame: a cycle


class Branch:
    """Where in the run's tree of concurrent branches code runs (the top level, a `parallel`
    branch, a `parallelMap` item, an `async` task). Ids and event order keys come from it,
    not from a global counter, so that they do not depend on which branch the scheduler ran
    first: the same program and answers give the same ids, and the host can put events in
    one canonical order (siblings by key) whatever order they arrived in."""

    __slots__ = ("counter", "map_size", "path", "prefix")

    def __init__(self, path=(), prefix="", map_size=None):
        self.path = path  # ((fork counter, key), ...) from the top level down
        self.prefix = prefix
        self.counter = 0
        self.map_size = map_size  # a `parallelMap` item's branch: the map's size (the run view shows it)

    def next(self):
        self.counter += 1
        return self.counter

    def child(self, fork, key, map_size=None):
        return Branch(self.path + ((fork, key),), f"{self.prefix}{fork}.{key}.", map_size)

    def order(self, index):
        return [[fork, key] for fork, key in self.path] + [[index]]


async def _in_branch(branch, coro):
    _branch.set(branch)  # this task's own context: the coroutine and what it awaits see it
    return await coro


class TaskHandle:
    __slots__ = ("done", "name", "result", "task")

    def __init__(self, name, task):
        self.name = name
        self.task = task
        self.done = False
        self.result = None


class Runtime:
    abi = ABI
    Error = FlowError

    def __init__(self, bridge, payload):
        self.bridge = bridge
        self.run_id = payload.get("run")
        self.calls = 0  # user-function calls made (`call`)
        self.caps = []  # the step caps of the running frames (nested, and side by side in parallel)
        self.deadlines = []  # and their deadlines
        self.clock_at = 0  # the step count from which the step check looks at the clock again
        self.clock_read = (0, 0.0)  # (step count, time) of its last look
        self.lowest_cap = 0  # min(self.caps): up to it, no running frame's cap can be exceeded
        self.next_check = 1  # the next step count at which `_check_step` must run (see `step`)
        self.left = 1  # steps to go until then: the step count is `next_check - left` (`steps`)
        self.loose = Branch((("host", ""),), "h.")  # for code the host calls outside a run's branches
        self.bindings = {}
        self.session_values = (payload.get("args") or {}).get("session") or {}
        self.expectations = {}
        self.primaries = []  # the primary artifact published (at most one: artifacts.py)
        self.cancel_reason = None  # set by `cancel`: "cancelled" or "workflow-timeout"
        # The host's ceilings (runtime/policy/ceilings.py): every frame's limits are at most these.
        # The host enforces the deadline and agent budgets itself; steps only the sandbox counts.
        ceilings = payload.get("ceilings")
        self.ceilings = {k: v for k, v in ceilings.items() if _values.is_number(v)} if isinstance(ceilings, dict) else {}

    # -- entry and workflows --------------------------------------------------------------
    async def start(self, args, cell, limits, workflows):
        _branch.set(Branch())
        self.workflow_params = {n: entry[1] for n, entry in workflows.items()}
        self.workflow_checks = {n: entry[3] for n, entry in workflows.items() if len(entry) > 3}
        name = args.get("workflow")
        if name is None:
            return await self._frame("<cell>", cell, [], limits)
        if name not in workflows:
            raise FlowError("capability-violation", f"the module has no workflow `{name}`")
        fn, params, wf_limits = workflows[name][:3]
        given = args.get("input") or {}
        return await self._frame(name, fn, [given.get(p) for p in params], wf_limits)

    async def workflow(self, name, fn, values, limits):
        """A workflow called from Flow code. Its input and output are checked against its
        schemas at run time (language.md §3.2): static types cannot vouch for values that
        came through `any` or for constraints. The host validates (the sandbox has no
        JSON Schema validator); the entry workflow's input is validated before the run.
        The host is not asked where its answer is known (no parameters: the input is `{}`;
        flowbox/local_checks.py): a round trip at every call, ~0.5-1 ms."""
        self.step()
        params = self.workflow_params.get(name)
        kinds, output_kind = self.workflow_checks.get(name, (None, None))
        for value in values:
            _values.check_depth(value, f"an input of `{name}`")
        if params == [] or _local_checks.inputs_pass(kinds, values):
            self._validated_here()
        else:
            await self._host("validate", {"workflow": name, "input": dict(zip(params or [], values, strict=True))})
        result = await self._frame(name, fn, values, limits)
        _values.check_depth(result, f"the output of `{name}`")
        if _local_checks.passes(output_kind, result):
            self._validated_here()
        else:
            await self._host("validate", {"workflow": name, "output": result})
        return result

    def _validated_here(self):
        """What a `validate` request leaves behind when the host need not be asked: the
        frame's deadline looked at, as `_host` does, and the order index the request would
        have taken taken, so the ids and order keys of what follows do not move."""
        frame = _frame.get()
        if frame.deadline - time.monotonic() <= 0:
            raise _timeout(frame)
        self._here().next()

    def call(self, fn, values):
        """A user function (`fn`): one step, then the coroutine of its body for the caller
        to await in its own frame (limits, deadline, events). One Python frame a nested
        call: `steps` end a runaway recursion long before the stack (`stack_failure`)."""
        left = self.left = self.left - 1  # `step`, inlined
        if left <= 0:
            self._check_step(self.next_check - left)
        self.calls += 1
        return fn(self, *values)

    async def _frame(self, name, fn, values, limits):
        if self.ceilings:
            limits = {k: min(v, self.ceilings[k]) if k in self.ceilings else v for k, v in limits.items()}
        parent = _frame.get(None)
        now = time.monotonic()
        own_cap = self.steps + limits["steps"]
        if parent is None or own_cap <= parent.cap:
            cap, cap_name, cap_limit = own_cap, name, limits["steps"]
        else:
            cap, cap_name, cap_limit = parent.cap, parent.cap_name, parent.cap_limit
        deadline = now + limits["duration"] / 1000
        if parent is not None:
            deadline = min(deadline, parent.deadline)
        frame = Frame(name, self._span_id(), cap, cap_name, cap_limit, deadline, limits["concurrency"])
        token = _frame.set(frame)
        span_token = _scope.set((frame.id, None))
        self._event("workflow.started", {"name": name, "frame": frame.id, "parent": parent.id if parent else None,
                                         "limits": dict(limits)}, frame.id, parent.id if parent else None)
        self.caps.append(cap)
        self._set_lowest_cap(min(self.caps))
        self.deadlines.append(deadline)
        self.clock_at, self.clock_read = 0, (self.steps, now)  # a new deadline: look at the next check
        try:
            result = await fn(self, *values) if values else await fn(self)
            await self._finish_tasks(frame)
        except BaseException as exc:
            for handle in frame.tasks:
                if not handle.task.done():
                    handle.task.cancel()
            code, message = _failure(self, exc)
            self._event("workflow.failed", {"name": name, "code": code, "message": message}, frame.id,
                        parent.id if parent else None)
            raise
        finally:
            self.caps.remove(cap)
            self._set_lowest_cap(min(self.caps, default=0))
            self.deadlines.remove(deadline)
            frame.close()
            _scope.reset(span_token)
            _frame.reset(token)
        self._event("workflow.completed", {"name": name}, frame.id, parent.id if parent else None)
        return result

    async def _finish_tasks(self, frame):
        for handle in frame.tasks:
            if not handle.done:
                await self.await_task(handle)

    def session(self, name):
        return self.session_values.get(name)

    def bind(self, name, value):
        self.bindings[name] = value
        return value

    # -- steps and conditions -------------------------------------------------------------
    def step(self):
        # Generated code steps before every statement, so the common case reads no frame and
        # makes one comparison: a frame's step cap can only be exceeded past the lowest cap of
        # all running frames, and the deadline is only looked at every STEP_CLOCK_EVERY steps;
        # `next_check` is the first step count where either happens (`_schedule`), and `left`
        # counts down to it. `left` is at most STEP_CLOCK_EVERY, so it stays one of CPython's
        # cached small ints: counting a run's total up past 256 would make and free an int
        # object every step, which costs the WebAssembly CPython ~3× what it costs the host.
        # `loop`, `call`, `_agent` and the builtins' wrapper repeat these lines rather than call this.
        left = self.left = self.left - 1
        if left <= 0:
            self._check_step(self.next_check - left)

    @property
    def steps(self):
        """The steps counted so far in this run."""
        return self.next_check - self.left

    def _schedule(self, steps):
        """The first step count after `steps` that is past the lowest cap or a multiple of
        STEP_CLOCK_EVERY: exactly the counts at which `_check_step` must run; `left` becomes
        the steps from `steps` to it (1 to STEP_CLOCK_EVERY)."""
        self.next_check = min(max(self.lowest_cap, steps) + 1, (steps // STEP_CLOCK_EVERY + 1) * STEP_CLOCK_EVERY)
        self.left = self.next_check - steps

    def _set_lowest_cap(self, cap):
        self.lowest_cap = cap
        self._schedule(self.steps)

    def _check_step(self, steps):
        self._schedule(steps)  # before anything can raise: past a cap, every later step checks again
        frame = _frame.get()
        if steps > frame.cap:
            raise FlowError("limit-exceeded", f"the `steps` limit of {frame.cap_limit} of `{frame.cap_name}` is exceeded",
                            {"limit": "steps", "value": frame.cap_limit, "workflow": frame.cap_name})
        if not steps % STEP_CLOCK_EVERY:
            if self.bridge.unflushed:  # what was written before a long stretch without a wait goes out now
                self.bridge.flush()
            if steps >= self.clock_at:
                self._look_at_clock(frame, steps)

    def _look_at_clock(self, frame, steps):
        """Raise once `frame`'s deadline has passed, and say when to look again: after
        STEP_CLOCK_EVERY steps, or CLOCK_SPARSE times as many while the earliest deadline of
        all running frames is more than CLOCK_MARGIN times as far away as those steps take
        at the pace since the last look. So a deadline is noticed within STEP_CLOCK_EVERY
        steps of passing unless the steps suddenly became CLOCK_MARGIN times slower. Reading
        the clock calls out to JavaScript in the sandbox (~0.3 µs, ~8× the host's read), a
        few per cent of a CPU-bound run at every 64th step."""
        now = time.monotonic()
        if now > frame.deadline:
            raise _timeout(frame)
        last_steps, last_now = self.clock_read
        self.clock_read = (steps, now)
        sparse = STEP_CLOCK_EVERY * CLOCK_SPARSE
        far = min(self.deadlines, default=now) - now
        if steps > last_steps and far * (steps - last_steps) > CLOCK_MARGIN * sparse * (now - last_now):
            self.clock_at = steps + sparse
        else:
            self.clock_at = steps + STEP_CLOCK_EVERY

    def loop(self, value):
        left = self.left = self.left - 1  # `step`, inlined
        if left <= 0:
            self._check_step(self.next_check - left)
        if value is True or value is False:  # expect_bool's own test, without its call
            return value
        return _values.expect_bool(value, "the condition of `while`")

    @staticmethod
    def cond(value):
        if value is True or value is False:
            return value
        return _values.expect_bool(value, "a condition")

    @staticmethod
    def iterate(xs):
        """The (index, item) pairs of a `for (i, x) in xs` loop."""
        if not isinstance(xs, list):
            raise evaluation(f"`for` needs an array, got {_values.type_of(xs)}")
        return enumerate(xs)

    @staticmethod
    def each(xs):
        """The items of a `for x in xs` loop, which names no index: the list itself, so that
        no (index, item) pair is made and unpacked per item."""
        if not isinstance(xs, list):
            raise evaluation(f"`for` needs an array, got {_values.type_of(xs)}")
        return xs

    fill_prompt = staticmethod(_values.fill_prompt)  # `file(PATH, { name: value })`

    @staticmethod
    def interp(*parts):
        # A list, not a generator: join makes a list of one anyway, and resuming a
        # generator per part costs more than the rest under WebAssembly.
        return "".join([p if type(p) is str or isinstance(p, str) else _values.text(p) for p in parts])

    # -- events and scopes ------------------------------------------------------------------
    def _here(self):
        return _branch.get() or self.loose

    def _span_id(self, letter="s"):
        branch = self._here()
        return f"{letter}{branch.prefix}{branch.next()}"

    def _event(self, kind, data, span_id=None, parent=None):
        current, stage = _scope.get()
        branch = self._here()
        self.bridge.notify("event", {"run": self.run_id, "type": kind,
                                     "span": {"id": span_id if span_id is not None else current,
                                              "parent": parent if span_id is not None else None},
                                     "stage": stage, "data": data, "order": branch.order(branch.next())})

    def stage(self, name):
        return _EventScope(self, "stage", self._name(name, "stage"))

    def pipeline(self, name):
        return _EventScope(self, "pipeline", self._name(name, "pipeline"))

    @staticmethod
    def _name(name, what):
        if not isinstance(name, str):
            raise evaluation(f"a {what} name must be a string, got {_values.type_of(name)}")
        return name

    def verify(self, cond, message, text):
        passed = _values.expect_bool(cond, "the condition of `verify`")
        self._event("verify.evaluated", {"passed": passed, "message": _message(message, text), "condition": text})

    def require(self, cond, message, text):
        passed = _values.expect_bool(cond, "the condition of `require`")
        if not passed:
            msg = _message(message, text)
            self._event("require.failed", {"message": msg, "condition": text})
            raise FlowError("assertion", msg if message is not None else f"requirement failed: {text}", {"condition": text})

    def emit(self, kind, value):
        if not isinstance(value, dict):
            raise evaluation(f"`emit {kind}` needs an object, got {_values.type_of(value)}")
        data = {}
        for key in ("done", "total"):
            if key in value and value[key] is not None:
                if not _values.is_number(value[key]):
                    raise evaluation(f"`emit {kind}`: `{key}` must be a number, got {_values.type_of(value[key])}")
                data[key] = value[key]
        if value.get("message") is not None:
            data["message"] = _values.text(value["message"])
        self._event(kind, data)

    def print(self, value):
        self._event("print", {"text": _values.text(value)})

    def log(self, value):
        self._event("log", {"text": _values.text(value)})

    def publish(self, name, value, primary=False):
        self._event("artifact.published", _artifacts.artifact(name, value, primary, self.primaries))

    # -- host calls -----------------------------------------------------------------------------
    async def _host(self, op, payload):
        frame = _frame.get()
        remaining = frame.deadline - time.monotonic()
        if remaining <= 0:
            raise _timeout(frame)
        payload["run"] = self.run_id
        if "order" not in payload:  # where the host's events for this request go in the canonical order
            branch = self._here()
            payload["order"] = branch.order(branch.next())
        current, stage = _scope.get()
        payload["span"] = current
        payload["stage"] = stage
        payload["frame"] = frame.id
        future = self.bridge.invoke(op, payload)
        frame.watch(future, remaining)
        try:
            return await future
        finally:
            frame.waiting.discard(future)

    # An agent call is one coroutine deep (`_host`'s): `agent`, `team` and `_agent` do their
    # step and checks when called and return the awaitable, which generated code and panels
    # await at once, in the same task and context. Each coroutine level a call passes
    # through is made, resumed and finished again on every call in the sandbox.
    def agent(self, name, prompt, options, check):
        return self._agent({"agent": name, "team": None, "member": None}, prompt, options, check)

    def team(self, team, member, member_name, prompt, options, check):
        if member == "member":
            if not isinstance(member_name, str):
                raise evaluation(f"a team member name must be a string, got {_values.type_of(member_name)}")
            member = member_name
        return self._agent({"agent": None, "team": team, "member": member}, prompt, options, check)

    def _agent(self, target, prompt, options, check):
        """The `agent` request's awaitable, after the call's step and prompt check."""
        left = self.left = self.left - 1  # `step`, inlined
        if left <= 0:
            self._check_step(self.next_check - left)
        if not isinstance(prompt, str):
            raise evaluation(f"the prompt must be a string, got {_values.type_of(prompt)}")
        branch = _branch.get() or self.loose  # `_here`, inlined
        index = branch.next()
        call = f"c{branch.prefix}{index}"
        if len(options) > 2:  # more than the compiler's `schema` and `label`: a run's values
            for key, value in options.items():
                if key != "schema":
                    _values.check_depth(value, f"the `{key}` of an agent call")
        payload = dict(target, prompt=prompt, options=options, call=call, expect=check is not None,
                       order=branch.order(index))
        if branch.map_size is not None:
            payload["of"] = branch.map_size
        if check is None:
            return self._host("agent", payload)
        # The host asks for the check from outside this task: it runs in the call's context
        # (its frame for steps and deadline, its branch for ids).
        self.expectations[call] = (check, contextvars.copy_context())
        return self._expecting(call, self._host("agent", payload))

    async def _expecting(self, call, request):
        """Await an agent request whose `expect` check the host may ask for until it ends."""
        try:
            return await request
        finally:
            self.expectations.pop(call, None)

    async def panel(self, name, candidate, spec, options):
        """A panel call: its rounds, verdicts and aggregate run here (panels.py)."""
        self.step()
        return await _panels.run(self._event, self._agent, name, candidate, spec, options)

    async def expect(self, call, output):
        """Failed `expect` messages for a candidate output (asked by the host)."""
        entry = self.expectations.get(call)
        if entry is None:
            return []
        check, context = entry
        try:
            pairs = await _tasks.spawn(check(output), context)  # the run's context: its deadline's interrupt stops it
        except FlowError as exc:
            if exc.fatal:
                raise
            return [f"the expectation could not be evaluated: {exc.message}"]
        failed = []
        for passed, message in pairs:
            if passed is not True:
                failed.append(_values.text(message))
        return failed

    async def approve(self, question, details, timeout=None, default=None):
        self.step()
        if not isinstance(question, str):
            raise evaluation(f"the question of `approve` must be a string, got {_values.type_of(question)}")
        _values.check_depth(details, "the details of `approve`")
        answer = await self._host("approve", {"question": question, "details": details,
                                              **_deadline("approve", timeout, default)})
        if not isinstance(answer, bool):
            raise FlowError("operator-unavailable", "the operator's answer to `approve` was not yes or no")
        return answer

    async def ask(self, question, choice, timeout=None, default=None):
        self.step()
        if not isinstance(question, str):
            raise evaluation(f"the question of `ask` must be a string, got {_values.type_of(question)}")
        answer = await self._host("ask", {"question": question, "choice": choice,
                                          **_deadline("ask", timeout, default)})
        if not isinstance(answer, str) or (choice is not None and answer not in choice):
            raise FlowError("operator-unavailable", "the operator's answer to `ask` is not one of its choices")
        return answer

    async def run(self, executable, arguments, stdin, timeout):
        self.step()
        if not isinstance(executable, str):
            raise evaluation(f"the executable of `run` must be a string, got {_values.type_of(executable)}")
        if not isinstance(arguments, list):
            raise evaluation(f"`run` takes an array of arguments, got {_values.type_of(arguments)}")
        args = []
        for a in arguments:
            if a is None or isinstance(a, (list, dict)):
                raise evaluation(f"`run` arguments must be strings, numbers or booleans, got {_values.type_of(a)}")
            args.append(_values.text(a))
        if stdin is not None and not isinstance(stdin, str):
            raise evaluation(f"the `stdin` of `run` must be a string, got {_values.type_of(stdin)}")
        timeout_ms = 30_000 if timeout is None else timeout
        if not _values.is_number(timeout_ms) or timeout_ms <= 0:
            raise evaluation("the `timeout` of `run` must be a positive duration")
        return await self._host("process", {"executable": executable, "arguments": args, "stdin": stdin,
                                            "timeout_ms": timeout_ms})

    async def now(self):
        self.step()
        return await self._host("now", {})

    async def uuid(self):
        self.step()
        return await self._host("uuid", {})

    # -- parallelism and tasks ---------------------------------------------------------------------
    async def parallel(self, branches):
        names = list(branches)
        here = self._here()
        fork = here.next()
        results = await _tasks.fail_closed([_in_branch(here.child(fork, n), _tasks.where({"branch": n, "of": "parallel"}, branches[n]()))
                                      for n in names])
        return dict(zip(names, results, strict=True))

    async def parallel_map(self, xs, fn, concurrency):
        self.step()
        if not isinstance(xs, list):
            raise evaluation(f"parallelMap: expected an array, got {_values.type_of(xs)}")
        frame = _frame.get()
        limit = frame.concurrency if concurrency is None else concurrency
        if not _values.is_number(limit) or limit < 1:
            raise evaluation("parallelMap: `concurrency` must be a positive int")
        workers = max(1, min(int(limit), frame.concurrency, len(xs) or 1))
        results = [None] * len(xs)
        cursor = iter(range(len(xs)))
        here = self._here()
        fork = here.next()
        begun = self.steps
        started = 0

        size = len(xs)

        async def worker():
            nonlocal started
            # Workers take items in input order, so items start in order (language.md §4.2.1).
            # An item's failure names it as `tasks.where` would, without a coroutine per item.
            for i in cursor:
                started += 1
                token = _branch.set(here.child(fork, i, size))
                try:
                    results[i] = await fn(xs[i], i)
                except FlowError as exc:
                    _tasks.add_where(exc, {"item": i + 1, "of": "parallelMap"})
                    raise
                finally:
                    _branch.reset(token)

        try:
            await _tasks.fail_closed([worker() for _ in range(workers)])
        except FlowError as exc:
            _tasks.steps_hint(exc, frame, len(xs), begun, self.steps, started)
            raise
        return results

    def task(self, name, coro):
        frame = _frame.get()
        here = self._here()
        handle = TaskHandle(name, _tasks.spawn(_in_branch(here.child(here.next(), name), _tasks.where({"task": name}, coro))))
        frame.tasks.append(handle)
        return handle

    async def await_task(self, handle):
        if handle.done:
            return None  # awaiting twice does not rerun (and does not raise a caught failure again)
        handle.done = True
        handle.result = await handle.task
        return None

    @staticmethod
    def task_field(handle, name):
        if not handle.done:
            raise evaluation(f"task `{handle.name}` has not been awaited")
        if handle.result is None:
            raise evaluation(f"task `{handle.name}` failed, so it has no `{name}`")
        return handle.result.get(name)

    # -- errors ------------------------------------------------------------------------------------
    @staticmethod
    def catches(err, codes):
        if err.fatal:
            return False
        return codes is None or err.code in codes

    @staticmethod
    def error_value(err):
        return {"code": err.code, "message": err.message, "stage": err.stage, "details": err.details}

    # -- operators (values, operators.py) ------------------------------------------------------
    neg = staticmethod(_ops.neg)
    not_ = staticmethod(_ops.not_)
    add = staticmethod(_ops.add)
    sub = staticmethod(_ops.sub)
    mul = staticmethod(_ops.mul)
    div = staticmethod(_ops.div)
    mod = staticmethod(_ops.mod)
    eq = staticmethod(_ops.eq)
    ne = staticmethod(_ops.ne)
    lt = staticmethod(_ops.lt)
    le = staticmethod(_ops.le)
    gt = staticmethod(_ops.gt)
    ge = staticmethod(_ops.ge)
    in_ = staticmethod(_ops.in_)
    index = staticmethod(_ops.index)
    slice_ = staticmethod(_ops.slice_)
    member = staticmethod(_ops.member)
    member_opt = staticmethod(_ops.member_opt)
    safe_member = staticmethod(_ops.safe_member)
    project = staticmethod(_ops.project)
    pick = staticmethod(_ops.pick)


class _EventScope:
    """`stage` / `pipeline`: events around a body, which sees the scope's id as parent."""

    __slots__ = ("kind", "name", "parent", "rt", "span_id", "token")

    def __init__(self, rt, kind, name):
        self.rt = rt
        self.kind = kind
        self.name = name

    def __enter__(self):
        parent, stage = _scope.get()
        self.parent = parent
        self.span_id = self.rt._span_id()
        if self.kind == "stage":
            stage = self.name
        self.token = _scope.set((self.span_id, stage))
        self.rt._event(f"{self.kind}.started", {"name": self.name}, self.span_id, parent)
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None:
            self.rt._event(f"{self.kind}.completed", {"name": self.name}, self.span_id, self.parent)
        else:
            if isinstance(exc, FlowError) and exc.stage is None and self.kind == "stage":
                exc.stage = self.name
            code, message = _failure(self.rt, exc)
            self.rt._event(f"{self.kind}.failed", {"name": self.name, "code": code, "message": message},
                           self.span_id, self.parent)
        _scope.reset(self.token)
        return False


def _builtin(name, fn, is_async):
    # `Runtime.step`, inlined: a builtin call is one of the commonest operations.
    if is_async:
        async def call(self, *args):
            left = self.left = self.left - 1
            if left <= 0:
                self._check_step(self.next_check - left)
            return await fn(*args)
    else:
        def call(self, *args):
            left = self.left = self.left - 1
            if left <= 0:
                self._check_step(self.next_check - left)
            return fn(*args)
    call.__name__ = f"fn_{name}"
    return call


for _name, _fn in _builtins.BUILTINS.items():
    setattr(Runtime, f"fn_{_name}", _builtin(_name, _fn, _name in _builtins.LAMBDA_BUILTINS))


def _deadline(word, timeout, default):
    """The `timeout T else V` of an `approve`/`ask`, for the host request ({} without one)."""
    if timeout is None:
        return {}
    if not _values.is_number(timeout) or isinstance(timeout, bool) or timeout <= 0:
        raise evaluation(f"the `timeout` of `{word}` must be a positive duration")
    return {"timeout_ms": int(timeout), "default": default}


def _message(message, text):
    return _values.text(message) if message is not None else text


def _timeout(frame):
    return FlowError("workflow-timeout", f"`{frame.name}` ran past its `duration`", {"workflow": frame.name})


def _failure(rt, exc):
    """The code and message a failed workflow or scope records: the same code the run's
    error gets in `execute` (a full heap is `isolate` in both, never `cancelled`)."""
    if isinstance(exc, FlowError):
        return exc.code, exc.message
    if isinstance(exc, MemoryError):
        return "isolate", "the sandbox ran out of memory"
    if isinstance(exc, RecursionError):
        return stack_failure(rt.calls)
    if isinstance(exc, (KeyboardInterrupt, _tasks.Interrupted)):
        reason = rt.cancel_reason or "workflow-timeout"
        return reason, "the run was stopped: " + ("it was cancelled" if reason == "cancelled" else "it ran past its deadline")
    if isinstance(exc, asyncio.CancelledError):
        reason = rt.cancel_reason or "cancelled"
        return reason, "the run was cancelled" if reason == "cancelled" else "the run ran past its deadline"
    return "isolate", f"internal error: {type(exc).__name__}: {exc}"

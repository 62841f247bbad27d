"""The sandbox's event loop: Pyodide's WebLoop with its ready queue kept in Python.

WebLoop schedules every `call_soon` as its own JavaScript `setImmediate`, through a
once-callable proxy made for that one callback (a JS function object, a
FinalizationRegistry entry, a Python -> JavaScript call to schedule it and a JavaScript ->
Python call to run it), and it adds a done-callback to every future and task (its
`_in_progress` count, which nothing in the sandbox reads), so each future that completes
schedules two of them. An agent call's reply woke the waiting task through four such
round trips.

`FlowLoop` queues ready callbacks in a deque and asks the runner for ONE `setImmediate`
when the queue goes from empty to not empty (`io.wake`, which runs `run_ready`). A turn
runs the callbacks that were ready when it started, in their order; those they make ready
wait for the next turn, as in asyncio's own loop, so a task that never stops yielding
still lets Node read stdin, fire timers (the watchdog) and write the outbox between
turns. The replies of one read from stdin wake their tasks in the runner's call that
hands the lines over (`run_after`), not in a `setImmediate` after it: a fan-out's replies
arrive one read at a time, and each saved two calls across JavaScript and a turn of Node.
Timers (`call_later` with a delay) are WebLoop's, unchanged.
"""

from __future__ import annotations

import asyncio
from collections import deque

from pyodide.webloop import WebLoop


class FlowLoop(WebLoop):
    def __init__(self, wake):
        super().__init__()
        self._wake = wake  # JS: setImmediate(run_ready)
        self._ready = deque()
        self._woken = False  # a run_ready is due: no second wake-up

    def call_soon(self, callback, *args, context=None):
        handle = asyncio.Handle(callback, args, self, context)
        self._ready.append(handle)
        if not self._woken:
            self._woken = True
            self._wake()
        return handle

    def call_soon_threadsafe(self, callback, *args, context=None):
        return self.call_soon(callback, *args, context=context)  # one thread

    def call_later(self, delay, callback, *args, context=None):
        if delay <= 0:  # asyncio's loops run a callback due now or in the past soon
            return self.call_soon(callback, *args, context=context)
        return super().call_later(delay, callback, *args, context=context)

    def create_future(self):
        return asyncio.Future(loop=self)

    def create_task(self, coro, **kwargs):
        if self._task_factory is not None:
            return self._task_factory(self, coro, **kwargs)
        return asyncio.Task(coro, loop=self, **kwargs)

    def run_ready(self):
        """One turn: the callbacks ready now (called by the runner's setImmediate)."""
        self._woken = False
        if asyncio._get_running_loop() is not self:
            asyncio._set_running_loop(self)
        self._install_asyncgen_hooks()
        ready = self._ready
        for _ in range(len(ready)):
            handle = ready.popleft()
            if handle._cancelled:
                continue
            try:
                handle._run()  # an Exception goes to the loop's handler; only BaseExceptions leave
            except BaseException:
                # The runner ends the process on what escapes (as WebLoop's run_handle did);
                # the callbacks still queued get their turn if it does not.
                if ready and not self._woken:
                    self._woken = True
                    self._wake()
                raise


    def run_after(self, work, arg):
        """`work(arg)`, then a turn of what it made ready, in this same call from the runner
        when no turn was due: the bridge's reading of one batch of lines, whose replies wake
        their tasks. Those tasks then run without a `setImmediate` of their own (a call out
        to JavaScript to ask for it, Node's turn to the check phase, a call back in). When a
        turn was already due, it runs them, as before. What the turn makes ready waits for
        the next one, as in `run_ready`."""
        if self._woken:
            work(arg)
            return
        self._woken = True  # what `work` makes ready queues without asking for a turn
        try:
            work(arg)
        except BaseException:
            self._woken = False
            if self._ready:
                self._woken = True
                self._wake()
            raise
        if self._ready:
            self.run_ready()
        else:
            self._woken = False


def install(wake):
    """Make a FlowLoop the running loop (the bridge attaches before anything is queued)."""
    loop = FlowLoop(wake)
    asyncio.set_event_loop(loop)
    asyncio._set_running_loop(loop)
    return loop

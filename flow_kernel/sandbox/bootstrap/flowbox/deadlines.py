"""The deadlines of the runs that share one sandbox process, kept by the runner's one
watchdog (runner.mjs `startWatchdog`), and the SIGINT handler that says whose deadline an
interrupt is (docs/sandbox.md, "Inside Pyodide").

Shipped into Pyodide as source: imports only the standard library."""

from __future__ import annotations

import asyncio
import contextvars
import signal
import time

OUTSIDE = object()  # what `current_run` gives in code that belongs to no run
current_run = contextvars.ContextVar("flow_current_run")  # the run whose code a task runs (bridge.py sets it)


class Deadlines:
    """Each running run's due time (`time.monotonic()`), by run id, with the watchdog always
    armed for the earliest of them and disarmed when there is none. `cancel(run, reason)`
    stops a run that waits (runs.cancel)."""

    def __init__(self, io, cancel):
        self._arm = io.arm
        self._disarm = io.disarm
        self._cancel = cancel
        self.due = {}
        self.held = None  # the due the watchdog is armed for; None: disarmed

    def add(self, run, ms):
        """`run` is due `ms` milliseconds from now; the watchdog takes it if it is the earliest."""
        due = time.monotonic() + ms / 1000
        self.due[run] = due
        if self.held is None or due < self.held:
            self._arm(ms)
            self.held = due

    def remove(self, run):
        """`run` ended: its deadline goes, and the watchdog is armed for the next earliest
        (disarmed when none is left). A run no longer here (it was overdue) changes nothing."""
        due = self.due.pop(run, None)
        if due is not None and self.held is not None and due <= self.held:
            self._rearm()

    def _rearm(self):
        # `held` changes only once the watchdog holds the new due: until then it is the
        # one that may fire, which `take_overdue` (the handler, in between) relies on.
        if not self.due:
            self._disarm()
            self.held = None
            return
        due = min(self.due.values())
        self._arm(max(0.0, (due - time.monotonic()) * 1000))
        self.held = due

    def take_overdue(self):
        """Remove and return the runs whose deadline has passed — due by now, or by the due
        the watchdog was armed for, which has fired — and arm for the rest. Every step
        re-reads the table, so a call that interrupts another (the handler) leaves it right."""
        now = time.monotonic()
        limit = now if self.held is None else max(now, self.held)
        overdue = [run for run, due in self.due.items() if due <= limit]
        for run in overdue:
            self.due.pop(run, None)
        self._rearm()
        return overdue

    def on_timer(self):
        """The watchdog's timer: a deadline passed while Python was idle, so no run's code
        runs. The overdue runs stop the way a host `cancel` stops them, with no interrupt."""
        for run in self.take_overdue():
            self._cancel(run, "workflow-timeout")

    def on_interrupt(self, signum, frame):
        """The SIGINT handler: the watchdog's interrupt, which Python takes in whatever code
        runs once it kept the main thread busy past the earliest deadline. Raises
        KeyboardInterrupt only in the code of a run whose own deadline passed (that run
        fails with `workflow-timeout`, as alone); the other overdue runs are not running, so
        they are cancelled, the watchdog is armed for the rest, and the code goes on. Code of
        an overdue run that runs outside a task (a timer's callback, as `Frame._expire`) is
        not interrupted either: the exception would leave the callback into the event loop
        and end the process with every run in it; the run is cancelled, and stops once the
        callback returns."""
        running = current_run.get(OUTSIDE)
        overdue = self.take_overdue()
        in_task = _in_task()
        for run in overdue:
            if run != running or not in_task:
                self._cancel(run, "workflow-timeout")
        if running in overdue and in_task:
            raise KeyboardInterrupt


def _in_task():
    """Whether the code running is a task's step (asyncio catches nothing else for it)."""
    try:
        return asyncio.current_task() is not None
    except RuntimeError:  # no running loop
        return False


def install(deadlines):
    """Make `deadlines.on_interrupt` the SIGINT handler (once, from `bridge.attach`)."""
    signal.signal(signal.SIGINT, deadlines.on_interrupt)

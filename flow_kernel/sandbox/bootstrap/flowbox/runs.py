"""The bridge's entry points to the runtime: a `run` request executed (`execute`), a
running run stopped (`cancel`), and the host's question whether a candidate output meets
a call's `expect` clauses (`expect`); a running run is found by its run id."""

from __future__ import annotations

import asyncio
import math

from . import tasks as _tasks
from . import values as _values
from .errors import FlowError, context_location, stack_failure
from .runtime import Runtime

_active = {}  # run id -> (Runtime, asyncio task)


async def execute(main, payload, bridge):
    """Run `main(rt, args)` for one `run` request; returns the reply value or raises FlowError.
    Runs with other ids may run in the same process at the same time, each with its own
    deadline (`deadline_ms`, from now; none when 0 or absent)."""
    run_id = payload.get("run")
    deadline_ms = _deadline_ms(payload.get("deadline_ms"))
    if isinstance(run_id, (list, dict)):
        raise FlowError("isolate", "a run's id must be a string")
    if run_id in _active:
        raise FlowError("isolate", f"a run with the id {run_id!r} is already running in this sandbox")
    rt = Runtime(bridge, payload)
    task = _tasks.spawn(main(rt, payload.get("args") or {}))
    _active[run_id] = (rt, task)
    if deadline_ms:
        bridge.arm(run_id, deadline_ms)
    try:
        try:
            result = await task
        finally:
            if deadline_ms:
                bridge.disarm(run_id)
    except FlowError as exc:
        error = exc
    except (KeyboardInterrupt, _tasks.Interrupted) as exc:  # the watchdog's interrupt: the deadline passed
        error = FlowError(rt.cancel_reason or "workflow-timeout", "the run was stopped: "
                          + ("it was cancelled" if rt.cancel_reason == "cancelled" else "it ran past its deadline"))
        error.__traceback__ = exc.__traceback__
    except asyncio.CancelledError as exc:
        reason = rt.cancel_reason or "cancelled"
        error = FlowError(reason, "the run was cancelled" if reason == "cancelled" else "the run ran past its deadline")
        error.__traceback__ = exc.__traceback__
    except MemoryError as exc:
        error = FlowError("isolate", "the sandbox ran out of memory")
        error.__traceback__ = exc.__traceback__
    except RecursionError as exc:
        code, message = stack_failure(rt.calls)
        error = FlowError(code, message, {"limit": "depth"} if code == "limit-exceeded" else None)
        error.__traceback__ = exc.__traceback__
    except Exception as exc:  # a bug in the runtime: report it, never hide it
        error = FlowError("isolate", f"internal error: {type(exc).__name__}: {exc}")
        error.__traceback__ = exc.__traceback__
    else:
        error = None
    finally:
        _active.pop(run_id, None)
    if error is not None:
        error.loc = error.loc or context_location(error)
        rt_bindings = {} if error.code == "isolate" else rt.bindings  # the heap may be full: send nothing big
        too_deep = []
        error.extra = {"bindings": _values.json_bindings(rt_bindings, too_deep), "steps": rt.steps}
        _release_later(too_deep)
        raise error
    too_deep = []
    bindings = _values.json_bindings(rt.bindings, too_deep)
    try:
        _values.check_depth(result, "the run's result")
    except FlowError:
        too_deep.append(result)
        raise
    finally:
        _release_later(too_deep)
    if not _values.is_json(result):
        raise FlowError("isolate", "the run's result is not a JSON value")
    return {"result": result, "bindings": bindings, "steps": rt.steps, "memory": bridge.memory()}


def _deadline_ms(value):
    """The `deadline_ms` of a `run` request in whole milliseconds, rounded up (0: none)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise FlowError("isolate", f"`deadline_ms` must be a number of milliseconds, not {value!r}")
    return math.ceil(value)


def _release_later(deep_values):
    """`values.release` of what a run leaves nested past MAX_DEPTH, once its reply is
    written (the reply's values may share containers with them; the sandbox keeps nothing
    of a run)."""
    if deep_values:
        asyncio.get_event_loop().call_soon(_values.release, deep_values)


def cancel(run_id, reason):
    """Ask a running run to stop with `reason` ("cancelled" or "workflow-timeout")."""
    entry = _active.get(run_id)
    if entry is None:
        return False
    rt, task = entry
    rt.cancel_reason = reason
    task.cancel()
    return True


async def expect(payload):
    """The host's repair loop asks whether a candidate output meets a call's `expect` clauses."""
    run_id = payload.get("run")
    entry = _active.get(run_id)
    if entry is None:
        return []
    try:
        return await entry[0].expect(payload.get("call"), payload.get("output"))
    except _tasks.Interrupted:  # the run's deadline passed while its clauses ran: the run stops
        cancel(run_id, "workflow-timeout")
        raise FlowError("workflow-timeout", "the run ran past its deadline while its `expect` clauses were checked") from None

"""The kernel's execution state as frontends show it: `busy` from an execute request's
first status until its last, whatever else the kernel handles meanwhile.

ipykernel publishes `busy` and `idle` around every message it handles on its own: a
`kernel_info_request` or `interrupt_request` on the control channel, a message on a
subshell, a comm message when no cell holds the shell. While a Flow cell runs (a model
call, an approval waiting for its button), such a message's `idle` is the last status a
frontend sees: JupyterLab's status bar said "Flow | Idle" under a running cell, and a
client that waits for idle went on too early. Statuses go through `StatusGate`: while
an execute request is in flight, the `idle` of any other request is held, and sent
just before the execute's own `idle` (after its reply), so the kernel reads busy
throughout and every request still gets its idle.

Each status must also name the request it is about. ipykernel reads the parent of a
dispatch's closing `idle` from the shell's context, and a comm message handled while a
cell runs resets that context, when it is done, to the parent it read when it came: if
the cell ended and the next one began meanwhile (Run All, a widget syncing at a cell's
end), the next cell's `idle` named the one before it. The gate then waited for an idle
that never came, and the status bar said "Flow | Busy" for good. `DispatchParents` gives
a closing `idle` the parent of its dispatch's opening `busy`, which ipykernel publishes
right after setting it.

The same race is in a stock ipykernel (7.4), where `%load_ext flow_kernel` runs Flow in a
Python notebook: a run view that says hello after its run ended is such a comm message,
and under load one cell of a Run All never got its own `idle`, so JupyterLab never gave
it a count. `name_idles_by_their_dispatch` installs `DispatchParents` on that kernel.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

Publish = Callable[[str, dict[str, Any]], None]


class StatusGate:
    """Decides, in order and thread-safe (the control thread publishes too),
    which status messages reach IOPub and when."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executing: set[str] = set()  # msg ids of the execute requests in flight
        self._held: list[dict[str, Any]] = []  # parents whose idle waits for the executes to end

    def publish(self, status: str, parent: dict[str, Any], send: Publish) -> None:
        """Send `status` for `parent` through `send` now, or hold it: an `idle` while an
        execute request is in flight (another request's, or an execute's while another one
        runs, on a subshell) is held until none is; the last execute's idle is sent after
        the held ones."""
        header = parent.get("header") or {}
        msg_id = str(header.get("msg_id", ""))
        with self._lock:
            if header.get("msg_type") == "execute_request":
                if status == "busy":
                    self._executing.add(msg_id)
                elif status == "idle" and msg_id in self._executing:
                    self._executing.discard(msg_id)
                    if not self._executing:
                        held, self._held = self._held, []
                        for other in held:
                            send("idle", other)
                        send(status, parent)
                        return
            if status == "idle" and self._executing:
                self._held.append(parent)
                return
            send(status, parent)

    @property
    def executing(self) -> bool:
        with self._lock:
            return bool(self._executing)


class DispatchParents:
    """The request a shell dispatch's statuses are about, per thread: a dispatch without
    an explicit parent publishes `busy` when it starts and `idle` when it ends, with
    nothing in between on the same thread (comms handled concurrently publish none)."""

    def __init__(self) -> None:
        self._opened = threading.local()

    def parent_of(self, status: str, channel: str, current: dict[str, Any]) -> dict[str, Any]:
        """The parent for a `status` published on `channel` with no explicit parent:
        `current` (what the kernel's context says now), except that a shell `idle` gets
        the parent of the `busy` that opened its dispatch on this thread."""
        if channel != "shell":
            return current
        if status == "busy":
            self._opened.parent = current
            return current
        if status == "idle":
            opened: dict[str, Any] | None = getattr(self._opened, "parent", None)
            self._opened.parent = None
            return opened if opened is not None else current
        return current


def name_idles_by_their_dispatch(kernel: Any) -> bool:
    """Make `kernel` (a stock ipykernel, as `%load_ext flow_kernel` finds it) publish each
    shell dispatch's closing `idle` with the parent of its opening `busy`, as FlowKernel
    does. Returns whether it was installed now: not twice, not on a kernel that names them
    already, and not on one without ipykernel's `_publish_status`/`get_parent`."""
    if getattr(kernel, "_dispatch_parents", None) is not None:
        return False
    publish, get_parent = getattr(kernel, "_publish_status", None), getattr(kernel, "get_parent", None)
    if not callable(publish) or not callable(get_parent):
        return False
    parents = DispatchParents()

    def _publish_status(status: str, channel: str, parent: dict[str, Any] | None = None) -> None:
        if parent is None:
            parent = parents.parent_of(status, channel, get_parent(channel))
        publish(status, channel, parent)

    kernel._publish_status = _publish_status
    kernel._dispatch_parents = parents
    return True


__all__ = ["DispatchParents", "StatusGate", "name_idles_by_their_dispatch"]

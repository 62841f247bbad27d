"""What `flow serve --mcp` logs to a client (docs/protocols.md, "Logging and completion"):
the level each connection set, who a request speaks for, and what a run's event says.

On a handshake-era connection the client sets its level with `logging/setLevel` and this
server filters (`LogLevels`); on a 2026-07-28+ connection each request carries its own level
in `_meta` and the SDK filters as it sends (`is_modern`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from flow_kernel.runtime.events.vocabulary import Event
from flow_kernel.serve.common import progress_message

# MCP's log levels, least severe first; the level a run's event is logged at (others: none).
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
EVENT_LEVELS = {"stage.started": "debug", "agent.started": "debug", "agent.completed": "debug", "print": "info",
                "progress": "info", "artifact.published": "info", "approval.requested": "notice"}


class LogLevels:
    """The level each client connection set with `logging/setLevel` (the newest `limit`
    connections); a connection that set none gets no log messages."""

    def __init__(self, limit: int = 1024) -> None:
        self.limit = limit
        self._levels: OrderedDict[tuple[str, str], int] = OrderedDict()

    def set(self, connection: tuple[str, str], level: str) -> None:
        self._levels[connection] = LOG_LEVELS.index(level)
        self._levels.move_to_end(connection)
        while len(self._levels) > self.limit:
            self._levels.popitem(last=False)

    def wants(self, connection: tuple[str, str], level: str) -> bool:
        """Whether a message at `level` goes to `connection`."""
        least = self._levels.get(connection)
        return least is not None and LOG_LEVELS.index(level) >= least


def caller(ctx: Any) -> str:
    """The principal a request speaks for: its bearer token's name (door.py), '' without auth,
    `stdio` for the person at the other end of stdio."""
    request = getattr(ctx, "request", None)
    if request is None:
        return "stdio"
    user = request.scope.get("user")
    return str(getattr(user, "username", "") or "")


def connection_of(ctx: Any) -> tuple[str, str]:
    """A client connection: its principal and its MCP session (streamable HTTP's header)."""
    request = getattr(ctx, "request", None)
    session = request.headers.get("mcp-session-id", "") if request is not None else ""
    return caller(ctx), str(session)


def is_modern(version: str | None) -> bool:
    """Whether a connection speaks a protocol version where each request sets its own log level."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return version in MODERN_PROTOCOL_VERSIONS


def log_text(event: Event) -> str | None:
    """What a log message says of a run's event (None: the event is not logged)."""
    if event.get("type") == "print":
        return str((event.get("data") or {}).get("text"))
    return progress_message(event)

"""The bounds of `flow serve` (docs/protocols.md, "Bounds, deadlines and shutdown"): what one client can
make the server hold.

- a request body is at most `max_body` bytes (default 1 MiB, `--max-body`): a larger one is
  refused with 413 as soon as its `Content-Length` says so, or as soon as the bytes read pass
  the cap, never buffered whole; it must arrive within `BODY_TIMEOUT` (else 408);
- a connection must send a request's headers within `HEADER_TIMEOUT` of opening (or of its
  previous answer), else it is closed; at most `max_connections` are held, and a new one
  past the cap closes the oldest that is not in the middle of a request, so connections
  opened and left half-way never keep a real client out;
- a connection the server ends after an answer (a refused body, `connection: close`) stops
  writing first and drops what the client still sends, for at most `LINGER_SECONDS` and
  `LINGER_BYTES`, then closes: a client still sending a refused body reads the 413 instead
  of a reset that would discard it (RFC 9112 §9.6);
- a served run's input is at most `max_body` bytes of JSON and matches its workflow's input
  schema before a journal is opened (common.WorkflowHost);
- runs go on side by side up to the sandboxes ceiling; at most `max_waiting` more wait for a
  turn, and one past that is refused with `limit-exceeded` at once;
- a question to the caller (`approve`/`ask`) waits at most `question_timeout` seconds
  (default 10 min, `--question-timeout`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flow_kernel.serve.door import ASGIApp

MIB = 1 << 20
DEFAULT_QUESTION_TIMEOUT = 600.0  # seconds
HEADER_TIMEOUT = 10.0  # seconds from a connection's opening (or its last answer) to a request's headers
BODY_TIMEOUT = 30.0  # seconds from a request's headers to the end of its body
LINGER_SECONDS = 2.0  # how long a closing connection drops what the client still sends
LINGER_BYTES = 8 * MIB  # how much of it, at most


@dataclass(frozen=True)
class Bounds:
    max_body: int = MIB  # bytes of one request body, and of one run's input as JSON
    question_timeout: float = DEFAULT_QUESTION_TIMEOUT  # seconds a question waits for its caller
    max_connections: int = 256  # connections held at once
    max_waiting: int = 64  # runs waiting for a turn (each holds its input)
    header_timeout: float = HEADER_TIMEOUT
    body_timeout: float = BODY_TIMEOUT


async def _refuse(send: Callable[[Any], Awaitable[None]], status: int, message: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": b'{"error": "%s"}' % message.encode()})


def body_cap(app: ASGIApp, bounds: Bounds) -> ASGIApp:
    """Every HTTP request body is read here first, at most `bounds.max_body` bytes within
    `bounds.body_timeout`, and handed to `app` whole; a larger one is answered 413 (a slower
    one 408) without reading the rest."""
    limit = bounds.max_body
    too_large = f"the request body is larger than {limit} bytes (flow serve --max-body)"

    async def capped(scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                     send: Callable[[Any], Awaitable[None]]) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > limit:
            await _refuse(send, 413, too_large)
            return
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(bounds.body_timeout):
                while True:
                    message = await receive()
                    if message.get("type") != "http.request":
                        return  # the client left: nobody to answer
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limit:
                        await _refuse(send, 413, too_large)
                        return
                    chunks.append(chunk)
                    if not message.get("more_body"):
                        break
        except TimeoutError:
            await _refuse(send, 408, f"the request body did not arrive within {bounds.body_timeout:g} s")
            return
        whole: list[dict[str, Any]] = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replay() -> Any:
            return whole.pop() if whole else await receive()  # then the client's disconnect, when it comes

        await app(scope, replay, send)

    return capped


class _LingeringTransport:
    """A transport whose `close()` ends the server's side first and closes the socket once the
    client has stopped sending, `LINGER_SECONDS` have passed or `LINGER_BYTES` were dropped;
    everything else is the wrapped transport's."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._dropped = 0
        self._timer: asyncio.TimerHandle | None = None
        self.lingering = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self.lingering or self._transport.is_closing()

    def close(self) -> None:
        transport = self._transport
        if self.lingering or transport.is_closing():
            return
        if LINGER_SECONDS <= 0 or not transport.can_write_eof():
            transport.close()
            return
        self.lingering = True
        transport.write_eof()  # sent once the answer is written out
        transport.resume_reading()
        self._timer = self._loop.call_later(LINGER_SECONDS, self.close_now)

    def drop(self, data: bytes) -> None:
        """What the client sent after the end: counted and dropped."""
        self._dropped += len(data)
        if self._dropped > LINGER_BYTES:
            self.close_now()

    def close_now(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._transport.close()


def bounded_protocol(bounds: Bounds) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a header deadline and a cap on held connections."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class BoundedH11(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _idle_since = 0.0
        _lingering: _LingeringTransport

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            self._lingering = _LingeringTransport(transport, self.loop)
            super().connection_made(self._lingering)  # type: ignore[arg-type]
            self._arm()
            if len(self.connections) > bounds.max_connections:
                self._make_room()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            self._lingering.close_now()
            super().connection_lost(exc)

        def eof_received(self) -> None:
            if self._lingering.lingering:
                self._lingering.close_now()
                return
            super().eof_received()

        def data_received(self, data: bytes) -> None:
            if self._lingering.lingering:
                self._lingering.drop(data)
                return
            super().data_received(data)
            if self._in_request():
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self._in_request() or self.transport.is_closing():
                self._disarm()
            else:
                self._arm()

        def _in_request(self) -> bool:
            return self.cycle is not None and not self.cycle.response_complete

        def _arm(self) -> None:
            self._disarm()
            self._idle_since = time.monotonic()
            self._deadline = self.loop.call_later(bounds.header_timeout, self._overdue)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _overdue(self) -> None:
            self._deadline = None
            if not self._in_request():
                self._lingering.close_now()

        def _make_room(self) -> None:
            """Past the cap: close the connection idle longest (it may be this new one)."""
            idle = [c for c in self.connections if isinstance(c, BoundedH11) and not c._in_request()
                    and not c.transport.is_closing()]
            if idle:
                min(idle, key=lambda c: c._idle_since)._lingering.close_now()
            else:
                self._lingering.close_now()

    return BoundedH11

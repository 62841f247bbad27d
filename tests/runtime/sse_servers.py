"""Loopback servers that stream as the real APIs do: Server-Sent Events over HTTP/1.1 chunked
transfer, one chunk per event, for OpenAI's Chat Completions (`data: {chunk}` … `data:
[DONE]`) and Anthropic's Messages (`event: message_start` … `message_stop`). A reply can be
cut mid-way: the connection closes without the last chunk, as a dropped connection does.
A queued error status answers with the API's error body and any headers (`Retry-After`)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One queued answer: SSE `events` [(event name or None, data)], or an error `status`."""

    events: list[tuple[str | None, Any]] = field(default_factory=list)
    status: int = 200
    error: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    cut_after: int | None = None  # close the connection after this many events
    delay: float = 0.0  # seconds between events


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # a burst of concurrent calls (the default backlog of 5 refuses some)
    daemon_threads = True


class SSEServer:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.clock: Any = None  # given: each request's time on it is kept in `stamps`
        self.stamps: list[float] = []
        self.in_flight = 0
        self.peak = 0  # most requests being answered at once
        self.answered = 0  # replies that reached their last event (whatever they say they used is spent)
        self.open: set[int] = set()  # requests not answered yet (by index in `requests`)
        self.arrivals: list[tuple[int, frozenset[int]]] = []  # at each request: `answered`, and `open` with it
        # Given: each request's reply is made from its body (a model that answers what it was
        # asked, e.g. as long as its cap allows) instead of taken from `replies`.
        self.answer: Callable[[dict[str, Any]], Reply] | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY: every event is its own write, as a real API's stream; with Nagle each
            # waited for the client's delayed ACK (~40 ms an event on loopback).
            disable_nagle_algorithm = True

            def do_POST(self) -> None:  # the name http.server calls
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(body)
                    if server.clock is not None:
                        server.stamps.append(server.clock.now())
                    if server.answer is not None:
                        reply = server.answer(body)
                    else:
                        reply = server.replies.pop(0) if server.replies else Reply(status=500, error="no reply queued")
                    server.in_flight += 1
                    server.peak = max(server.peak, server.in_flight)
                    index = len(server.requests) - 1
                    server.open.add(index)
                    server.arrivals.append((server.answered, frozenset(server.open)))
                try:
                    self._answer(reply, index)
                finally:
                    with server.lock:
                        server.in_flight -= 1
                        server.open.discard(index)

            def _answer(self, reply: Reply, index: int) -> None:
                if reply.status != 200:
                    data = json.dumps({"type": "error", "error": {"type": "rate_limit_error" if reply.status == 429
                                                                  else "api_error", "message": reply.error}}).encode()
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for n, (name, data) in enumerate(reply.events):
                    if reply.cut_after is not None and n >= reply.cut_after:
                        self.close_connection = True
                        self.wfile.flush()
                        self.connection.shutdown(2)  # a dropped connection: no terminating chunk
                        return
                    if n == len(reply.events) - 1:  # all but its last event sent: the client cannot have ended it
                        with server.lock:
                            server.open.discard(index)
                            server.answered += 1
                    text = (f"event: {name}\n" if name else "") + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
                    payload = text.encode()
                    self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
                    self.wfile.flush()
                    if reply.delay:
                        time.sleep(reply.delay)
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


# -- OpenAI Chat Completions chunks ---------------------------------------------------------------
def openai_text(pieces: list[str], usage: tuple[int, int] = (5, 3), finish: str = "stop", **reply: Any) -> Reply:
    events: list[tuple[str | None, Any]] = [(None, _chunk({"role": "assistant", "content": ""}))]
    events += [(None, _chunk({"content": piece})) for piece in pieces]
    events.append((None, _chunk({}, finish=finish)))
    events.append((None, {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [],
                          "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                                    "total_tokens": sum(usage)}}))
    events.append((None, "[DONE]"))
    return Reply(events, **reply)


def openai_tool_call(call_id: str, name: str, argument_pieces: list[str], **reply: Any) -> Reply:
    events: list[tuple[str | None, Any]] = [(None, _chunk({"role": "assistant", "content": None, "tool_calls": [
        {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]}))]
    events += [(None, _chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
               for piece in argument_pieces]
    events.append((None, _chunk({}, finish="tool_calls")))
    events.append((None, {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [],
                          "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}}))
    events.append((None, "[DONE]"))
    return Reply(events, **reply)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


# -- Anthropic Messages events ----------------------------------------------------------------------
def anthropic_text(pieces: list[str], usage: tuple[int, int] = (5, 3), **reply: Any) -> Reply:
    events = [_start(usage[0]), ("content_block_start", {"type": "content_block_start", "index": 0,
                                                          "content_block": {"type": "text", "text": ""}})]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "text_delta", "text": piece}}) for piece in pieces]
    events += [("content_block_stop", {"type": "content_block_stop", "index": 0}), *_end("end_turn", usage[1])]
    return Reply(events, **reply)


def anthropic_tool_use(tool_id: str, name: str, json_pieces: list[str], **reply: Any) -> Reply:
    events = [_start(4), ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
        "type": "tool_use", "id": tool_id, "name": name, "input": {}}})]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "input_json_delta", "partial_json": piece}})
               for piece in json_pieces]
    events += [("content_block_stop", {"type": "content_block_stop", "index": 0}), *_end("tool_use", 2)]
    return Reply(events, **reply)


def _start(input_tokens: int) -> tuple[str, Any]:
    return ("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": input_tokens, "output_tokens": 0}}})


def _end(stop: str, output_tokens: int) -> list[tuple[str, Any]]:
    return [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": output_tokens}}),
            ("message_stop", {"type": "message_stop"})]

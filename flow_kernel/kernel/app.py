"""`FlowKernelApp`: ipykernel's kernel application as the Flow kernel starts it.

Two of ipykernel's defaults cost every message and buy a Flow kernel nothing:

- **No shell-channel thread.** ipykernel 7 receives shell messages on a thread of its
  own and hands each to the main thread over an inproc socket (and each reply back) so
  that *kernel subshells* can run requests concurrently on threads of their own. A Flow
  cell cannot run there: its runs, its sandbox processes and the session they share
  belong to the main thread's event loop. Without the thread the shell socket is read on
  the main loop (as ipykernel 6 did); comm messages are still handled while a cell runs,
  and interrupts still come on the control thread. The kernel then does not offer
  subshells (`kernel_info` has no "kernel subshells"; `create_subshell_request` is
  answered with an error), rather than offering ones that run cells on a foreign loop.
- **No debug records nobody prints.** The application's logger passes everything and its
  handlers drop what is below their level, so ipykernel's four `log.debug` calls a
  message each built a `LogRecord` for nothing. The logger's own level is raised to the
  lowest level a handler prints (`--debug` and `--log-level` still apply: they lower it).

- **Messages packed by one JSON encoder made once.** jupyter_client's `json_packer` calls
  `json.dumps` with options, which builds a new encoder each time, four times a message
  (header, parent header, metadata, content); `pack` gives the same bytes from an encoder
  made once (flow_kernel/json_text.py), and hands anything it cannot encode to
  `json_packer`, whose fallback and warning stay as they are.

- **A request's header packed once.** Every message that answers a request (its `busy`,
  `execute_input`, result, reply and `idle`: five for a cell) carries the request's header
  as its parent, and jupyter_client packs it again for each (its `date` through
  `json_default`), and an empty metadata dict too. `FlowSession` keeps the bytes of the
  last parent header it packed, for that same header object (a request's header is never
  changed once received), and an empty metadata's `{}`: the same bytes, signed the same way.

- **A message made in one step.** `Session.send` makes a message through `msg`,
  `msg_id`, `msg_header` and `extract_header` (a dozen trait reads), and checks buffers,
  tracking, adapting and debugging that the kernel's own messages never ask for: ~5 µs of
  each message's ~50 in the kernel. `FlowSession.send` makes the same message (the same
  header, parent, content, metadata and id sequence, the same parts) directly; anything
  else (a message given whole, buffers, tracking, a given header, debug, `adapt_version`,
  a forked child) goes through `Session.send`.

- **A request's date read without dateutil.** jupyter_client reads every string of a
  received header that looks like a date with dateutil's parser (a third of receiving a
  request). The header's `date` in UTC, as jupyter_client writes it (`…Z`), is read by
  `datetime.fromisoformat`: an equal value (in `timezone.utc` rather than dateutil's
  `tzutc()`), written back in the replies' parent headers as the same bytes; any other
  string goes to jupyter_client's `extract_dates` as before.

stdout and stderr are `FlowOutStream`s (kernel/iopub.py): their flushes wait for the
IOPub thread only when their own text is on its way. The IOPub thread is a
`FlowIOPubThread` (kernel/iopub.py): a message is sent from the thread that hands it over
when nothing handed to the thread before waits to run, without waking the thread.
"""

from __future__ import annotations

import logging
import os
import pprint
import re
from datetime import datetime
from hmac import compare_digest
from typing import Any

import zmq
import zmq.asyncio
from ipykernel.kernelapp import IPKernelApp
from jupyter_client.adapter import adapt
from jupyter_client.jsonutil import extract_dates, json_default
from jupyter_client.session import DELIM, DONE, Session, extract_header, json_packer, msg_header

from flow_kernel.json_text import encoder
from flow_kernel.kernel.iopub import FlowIOPubThread

_encode = encoder(default=json_default, ensure_ascii=False, allow_nan=False)


_UTC_DATE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z\Z")
_MIN_PARTS = 5  # signature, header, parent header, metadata, content


def header_dates(header: Any) -> Any:
    """jupyter_client's `extract_dates` of a received (parent) header: the same value,
    except that a `date` in UTC written as jupyter_client writes it is read by
    `datetime.fromisoformat` (an equal datetime in `timezone.utc`)."""
    if isinstance(header, dict):
        date = header.get("date")
        if isinstance(date, str) and _UTC_DATE.match(date):
            return {key: datetime.fromisoformat(value) if key == "date" else extract_dates(value)
                    for key, value in header.items()}
    return extract_dates(header)


class FlowSession(Session):
    """jupyter_client's `Session`, whose `serialize` packs the parent header of a run of
    messages answering one request once, and whose `deserialize` reads a header's UTC
    date without dateutil (module docstring)."""

    _parent_packed: tuple[object, bytes] | None = None  # the header object last packed as a parent, and its bytes

    def deserialize(self, msg_list: list[Any], content: bool = True, copy: bool = True) -> dict[str, Any]:
        """`Session.deserialize`: the same checks (signature, replay, length), the same
        message; the headers' dates read by `header_dates`."""
        if not copy:  # zmq frames: the first parts copied, as jupyter_client does
            msg_list = [bytes(frame.bytes) for frame in msg_list[:_MIN_PARTS]] + list(msg_list[_MIN_PARTS:])
        if self.auth is not None:
            signature = msg_list[0]
            if not signature:
                raise ValueError("Unsigned Message")
            if signature in self.digest_history:
                raise ValueError(f"Duplicate Signature: {signature!r}")
            if content:  # a peek at a message does not count it as seen
                self._add_digest(signature)
            if not compare_digest(signature, self.sign(msg_list[1:_MIN_PARTS])):
                raise ValueError(f"Invalid Signature: {signature!r}")
        if len(msg_list) < _MIN_PARTS:
            raise TypeError(f"malformed message, must have at least {_MIN_PARTS} elements")
        header = self.unpack(msg_list[1])
        message: dict[str, Any] = {"header": header_dates(header), "msg_id": header["msg_id"],
                                   "msg_type": header["msg_type"],
                                   "parent_header": header_dates(self.unpack(msg_list[2])),
                                   "metadata": self.unpack(msg_list[3]),
                                   "content": self.unpack(msg_list[4]) if content else msg_list[4]}
        buffers = [memoryview(part) for part in msg_list[_MIN_PARTS:]]
        if buffers and buffers[0].shape is None:  # zmq frames: copied (pyzmq #646, as jupyter_client)
            buffers = [memoryview(bytes(frame.bytes)) for frame in msg_list[_MIN_PARTS:]]
        message["buffers"] = buffers
        if self.debug:
            pprint.pprint(message)
        adapted: dict[str, Any] = adapt(message)
        return adapted

    def send(self, stream: Any, msg_or_type: dict[str, Any] | str, content: dict[str, Any] | None = None,
             parent: dict[str, Any] | None = None, ident: bytes | list[bytes] | None = None,
             buffers: list[Any] | None = None, track: bool = False, header: dict[str, Any] | None = None,
             metadata: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """`Session.send`: the same message, parts and return value. A message made here from
        its type, without buffers, tracking or a given header, is made and sent directly;
        everything else goes through `Session.send`."""
        pid = os.getpid()
        if type(msg_or_type) is not str or buffers or track or header is not None or not stream \
                or isinstance(stream, zmq.asyncio.Socket) or self.debug or self.adapt_version \
                or (self.check_pid and pid != self.pid):
            return super().send(stream, msg_or_type, content, parent, ident, buffers, track, header, metadata)
        number = self.message_count
        self.message_count = number + 1
        msg_id = f"{self.session}_{pid}_{number}"  # `Session.msg_id`
        made = msg_header(msg_id, msg_or_type, self.username, self.session)
        extra = self.metadata.copy()
        if metadata is not None:
            extra.update(metadata)
        msg: dict[str, Any] = {"header": made, "msg_id": msg_id, "msg_type": msg_or_type,
                               "parent_header": {} if parent is None else extract_header(parent),
                               "content": {} if content is None else content, "metadata": extra}
        to_send = self.serialize(msg, ident)
        stream.send_multipart(to_send, copy=max(len(part) for part in to_send) < self.copy_threshold)
        msg["tracker"] = DONE
        return msg

    def serialize(self, msg: dict[str, Any], ident: list[bytes] | bytes | None = None) -> list[bytes]:
        """`Session.serialize`: the same parts, the parent header's bytes kept for its next message."""
        content = msg.get("content", {})
        if content is None:
            content = self.none
        elif isinstance(content, dict):
            content = self.pack(content)
        elif isinstance(content, str):
            content = content.encode("utf8")
        elif not isinstance(content, bytes):
            raise TypeError(f"Content incorrect type: {type(content)}")
        parent = msg["parent_header"]
        kept = self._parent_packed
        if kept is not None and kept[0] is parent:
            packed_parent = kept[1]
        else:
            packed_parent = self.pack(parent)
            self._parent_packed = (parent, packed_parent)
        metadata = msg["metadata"]
        real_message = [self.pack(msg["header"]), packed_parent, b"{}" if metadata == {} else self.pack(metadata),
                        content]
        to_send: list[bytes] = [*ident] if isinstance(ident, list) else [ident] if ident is not None else []
        to_send.append(DELIM)
        to_send.append(self.sign(real_message))
        to_send.extend(real_message)
        return to_send


class FlowKernelApp(IPKernelApp):
    outstream_class = "flow_kernel.kernel.iopub.FlowOutStream"

    def _session_default(self) -> Session:
        return FlowSession(parent=self)

    def init_iopub(self, context: Any) -> None:
        """ipykernel's iopub channel (an XPUB socket, its thread, the socket's stand-in
        that hands messages to the thread), with a `FlowIOPubThread`."""
        socket = context.socket(zmq.XPUB)
        socket.linger = 1000
        self._apply_curve_server_options(socket)
        self.iopub_port = self._bind_socket(socket, self.iopub_port)  # type: ignore[no-untyped-call]
        self.configure_tornado_logger()  # type: ignore[no-untyped-call]
        self.iopub_thread = FlowIOPubThread(socket, pipe=True, session=self.session)
        self.iopub_thread.start()  # type: ignore[no-untyped-call]
        self.iopub_socket = self.iopub_thread.background_socket

    def init_control(self, context: Any) -> None:
        super().init_control(context)  # type: ignore[no-untyped-call]
        self.shell_channel_thread = None  # shell messages on the main loop (module docstring)

    def init_kernel(self) -> None:
        super().init_kernel()  # type: ignore[no-untyped-call]
        quiet_logger(self.log)
        self.session.pack = pack


def pack(value: Any) -> bytes:
    """What jupyter_client's `json_packer` gives for `value` (the same bytes, the same
    warning for a value JSON cannot hold as it is), without a new encoder per call."""
    try:
        return _encode(value).encode("utf8", errors="surrogateescape")
    except (TypeError, ValueError):
        return json_packer(value)


def quiet_logger(log: logging.Logger | logging.LoggerAdapter[logging.Logger]) -> None:
    """Raise `log`'s level to the lowest level one of its handlers prints, so that messages
    no handler would print are not made into records. A logger without handlers of its own
    is left as it is (what it passes on is its parents' business)."""
    logger = log.logger if isinstance(log, logging.LoggerAdapter) else log
    if logger.handlers:
        lowest = min(handler.level for handler in logger.handlers)
        if lowest > logger.level:
            logger.setLevel(lowest)


__all__ = ["FlowKernelApp", "FlowSession", "header_dates", "pack", "quiet_logger"]

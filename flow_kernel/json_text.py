"""JSON text with fixed options, from one C encoder made once per purpose.

`json.JSONEncoder(...).encode` makes a new C encoder (and a Python closure) on every call,
which for a small value costs more than the encoding itself. The bridge encodes a line
per request and reply, the host counts the text of every event's data, and the agent
pipeline looks a schema up by its sorted text: a few calls per agent call, each paying
that set-up. `encoder(**options)` gives the same text as `json.JSONEncoder(**options).encode`
with the C encoder made once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from json import encoder as _json_encoder
from typing import Any

Encode = Callable[[Any], str]


def encoder(**options: Any) -> Encode:
    """`json.JSONEncoder(**options).encode`, the same text and the same errors, without a new
    C encoder per call. The C encoder keeps the containers it has open in one table (the
    circular-reference check): one encode at a time uses it (a lock taken without waiting),
    a failed one leaves it empty, and an encode that starts while another is under way (a
    `default` that encodes, another thread) makes an encoder of its own, as before."""
    model = json.JSONEncoder(**options)
    make = getattr(_json_encoder, "c_make_encoder", None)
    # No C accelerator, or an indent (the option itself: typeshed's `model.indent` leaves
    # out None, which compiled code would refuse): the plain way.
    if make is None or options.get("indent") is not None:
        return model.encode
    markers: dict[int, Any] | None = {} if model.check_circular else None
    strings = _json_encoder.encode_basestring_ascii if model.ensure_ascii else _json_encoder.encode_basestring
    fast = make(markers, model.default, strings, None, model.key_separator, model.item_separator, model.sort_keys,
                model.skipkeys, model.allow_nan)
    slow = model.encode
    busy = threading.Lock()
    take, give_back = busy.acquire, busy.release

    def encode(value: Any) -> str:
        if not take(False):  # another encode of this encoder is under way
            return slow(value)
        try:
            return "".join(fast(value, 0))
        except BaseException:
            if markers is not None:
                markers.clear()
            raise
        finally:
            give_back()

    return encode

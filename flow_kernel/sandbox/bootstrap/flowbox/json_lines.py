"""The bridge's JSON text: one compact line per message out, a value per line in.

`encode(value)` is `json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",",
":")).encode(value)`, the same text and the same errors, from one C encoder made once:
`JSONEncoder.encode` makes a new one (and a closure and a circular-reference table) for
every call, which for a bridge line costs more than the encoding. `decode(line)` is
`json.loads(line)`: the same value, or the same error, with the common case (a line that
is one JSON value and nothing else) read by json's C scanner alone.

Shipped as source into Pyodide (the host's flow_kernel/json_text.py does the same for the
host): imports only the standard library.
"""

import json
from json import encoder as _encoder

_MODEL = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_plain_encode = _MODEL.encode
_markers = {}  # the containers an encode has open (the circular-reference check)
_make = getattr(_encoder, "c_make_encoder", None)
_c_encode = None if _make is None else _make(
    _markers, _MODEL.default, _encoder.encode_basestring, None, _MODEL.key_separator, _MODEL.item_separator,
    _MODEL.sort_keys, _MODEL.skipkeys, _MODEL.allow_nan)
ACCELERATED = _c_encode is not None  # json's C encoder is there (it is in Pyodide and CPython)

_scan = json.JSONDecoder().scan_once
_plain_decode = json.loads


def encode(value):
    """The line's text of `value`; TypeError for a non-JSON value, ValueError for a
    non-finite float or a circular reference, as `JSONEncoder.encode` raises them. No
    Python runs during an encode (`default` only raises), so one table serves them all;
    a failed encode leaves it empty for the next."""
    if _c_encode is None:
        return _plain_encode(value)
    try:
        return "".join(_c_encode(value, 0))
    except BaseException:
        _markers.clear()
        raise


def decode(line):
    """`json.loads(line)`: the value, or JSONDecodeError (a ValueError) for text that is
    not one JSON value, RecursionError where `json.loads` raises it."""
    try:
        value, end = _scan(line, 0)
    except StopIteration:  # not a value at the first character (leading space, a BOM, …)
        return _plain_decode(line)
    if end != len(line):  # something after the value: what json.loads makes of it
        return _plain_decode(line)
    return value

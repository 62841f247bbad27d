// The run view's wire, declared in flow_kernel/views/wire.py and mirrored here by name
// (tests/widgets/test_wire.py holds the two equal): each record's tag with its readable name
// and the short key of each of its fields, then the keys of each message.

export const WIRE = {
  "records": {
    "s": {"record": "scope_started", "fields": {"i": "id", "p": "parent", "k": "scope", "n": "name", "t": "time", "lim": "limits"}},
    "x": {"record": "scope_ended", "fields": {"i": "id", "s": "state", "t": "time", "c": "code", "m": "message"}},
    "a": {"record": "call_started", "fields": {"i": "id", "p": "parent", "a": "agent", "l": "label", "t": "time", "g": "group", "x": "index", "of": "of"}},
    "b": {"record": "call_ended", "fields": {"i": "id", "s": "state", "ms": "latency", "n": "attempts", "r": "retries", "t": "time", "o": "output", "c": "code", "m": "message"}},
    "p": {"record": "progress", "fields": {"i": "id", "d": "done", "n": "total", "m": "message"}},
    "r": {"record": "approval_asked", "fields": {"i": "id", "t": "time", "k": "kind", "q": "question"}},
    "d": {"record": "approval_answered", "fields": {"q": "question", "a": "answer", "by": "by", "c": "code", "t": "time"}},
    "l": {"record": "log", "fields": {"i": "id", "t": "time", "m": "message"}},
    "v": {"record": "verify", "fields": {"i": "id", "t": "time", "m": "message", "ok": "ok"}},
    "q": {"record": "require_failed", "fields": {"i": "id", "t": "time", "m": "message"}},
    "f": {"record": "artifact", "fields": {"i": "id", "t": "time", "n": "name", "pm": "primary"}},
    "g": {"record": "model_degraded", "fields": {"i": "id", "t": "time", "pu": "purpose", "md": "model"}},
    "w": {"record": "call_text", "fields": {"i": "id", "t": "time", "n": "attempt", "r": "round", "w": "text", "len": "length"}},
    "h": {"record": "call_waiting", "fields": {"i": "id", "t": "time", "pv": "provider", "k": "reason", "ms": "wait"}},
    "u": {"record": "call_resumed", "fields": {"i": "id", "t": "time", "ms": "waited"}},
    "k": {"record": "breaker", "fields": {"i": "id", "t": "time", "pv": "provider", "s": "state", "ms": "pause"}}
  },
  "messages": {
    "batch": ["ev", "from", "now", "t"],
    "end": ["ms", "s", "t"],
    "detail": ["d", "i", "t"],
    "hello": ["have", "t"],
    "detail_request": ["i", "t"]
  }
};

const ITEM_FIELDS = Object.assign({}, ...["l", "v", "q", "f"].map((tag) => WIRE.records[tag].fields));
const own = (object, key) => Object.prototype.hasOwnProperty.call(object, key);

// A record from the host with its readable names ({record, id, parent, time, ...}). A tag this
// view does not know is read like an item of its scope (a newer kind), which shows nothing.
export function decode(raw) {
  const tag = typeof raw.e === "string" ? raw.e : "";
  const spec = own(WIRE.records, tag) ? WIRE.records[tag] : null;
  const fields = spec ? spec.fields : ITEM_FIELDS;
  const record = { record: spec ? spec.record : tag };
  for (const key of Object.keys(fields)) if (own(raw, key)) record[fields[key]] = raw[key];
  return record;
}

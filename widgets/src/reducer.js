// The run view's state, built from the host's records (flow_kernel/views/run_stream.py writes
// them, flow_kernel/views/wire.py declares them, wire.js decodes them). Pure: no DOM, no
// clock — `apply` folds one message in, so Node tests replay recorded streams (widgets/test/)
// and the browser renders whatever state results. Every field is data from the run: checked
// for its type here, escaped when rendered.

import { decode } from "./wire.js";

export const BINS = [10, 30, 100, 300, 1000, 3000, 10000]; // latency bin upper bounds (ms); one more for slower
export const KEPT = 4096; // characters of a call's streamed text a card keeps (its end)

export function emptyState() {
  return {
    n: 0, // compact events applied: a batch says where it starts, so a replay never counts twice
    status: "running", // running | completed | failed | interrupted
    gone: null, // the run's id when the kernel went away before the run ended (index.js)
    t: 0, // the latest event's time (ms since the run started)
    nodes: new Map(), // scope id -> {id, kind, parent, name, state, t0, t1, code, msg, children: [{ref} | item], progress}
    roots: [],
    calls: new Map(), // agent call id -> {id, agent, label, idx, group, parent, stage, state, t0, ms, n, r, out, code, msg, stream, wait, waited, degraded}
    groups: new Map(), // parallelMap group -> {id, parent, agents:Set, items:[call ids], done, running, failed, retried, cancelled, hist}
    approvals: [],
    breakers: new Map(), // provider -> {state, until}: its circuit breaker, as last reported
    agents: new Set(),
    stages: new Set(),
    primary: "", // the name of the run's primary artifact (`publish primary`), shown first
    inflight: 0,
    attempts: 0,
    details: new Map(), // call id -> its full card (asked for when opened)
    gap: false, // a batch started past what we have: ask for the whole stream again
  };
}

const str = (v) => (typeof v === "string" ? v : typeof v === "number" || typeof v === "boolean" ? String(v) : "");
const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);

// One message from the host: {t: "batch", from, ev: [...]}, {t: "end", s}, {t: "detail", i, d}.
export function applyMessage(state, msg) {
  if (!msg || typeof msg !== "object") return state;
  if (msg.t === "batch" && Array.isArray(msg.ev)) {
    const from = num(msg.from) ?? state.n;
    if (from > state.n) {
      state.gap = true;
      return state;
    }
    for (let k = state.n - from; k < msg.ev.length; k++) applyEvent(state, msg.ev[k]);
  } else if (msg.t === "end") {
    end(state, str(msg.s) || "completed");
  } else if (msg.t === "detail" && typeof msg.i === "string") {
    state.details.set(msg.i, msg.d && typeof msg.d === "object" ? msg.d : {});
  }
  return state;
}

export function applyEvent(state, raw) {
  state.n += 1;
  if (!raw || typeof raw !== "object") return;
  const e = decode(raw);
  const t = num(e.time);
  if (t !== null && t > state.t) state.t = t;
  const id = str(e.id);
  switch (e.record) {
    case "scope_started": return openScope(state, e, id, t);
    case "scope_ended": return closeScope(state, e, id, t);
    case "call_started": return startCall(state, e, id, t);
    case "call_ended": return endCall(state, e, id);
    case "call_text": return streamed(state, e, id);
    case "call_waiting": return waiting(state, e, id, t);
    case "call_resumed": return resumed(state, e, id);
    case "breaker": return breaker(state, e, t);
    case "model_degraded": return degraded(state, e, id);
    case "approval_asked": return request(state, e, id);
    case "approval_answered": return resolve(state, e);
    case "progress": {
      const node = state.nodes.get(id);
      if (node) node.progress = { done: num(e.done), total: num(e.total), msg: str(e.message) };
      return;
    }
    default:
      // log, verify, require_failed, artifact, any newer kind: an item of its scope
      if (e.record === "artifact" && e.primary === true && !state.primary) state.primary = str(e.name);
      return addItem(state, id, { kind: e.record, ok: e.ok === true, text: str(e.message), name: str(e.name),
        primary: e.record === "artifact" && e.primary === true });
  }
}

function openScope(state, e, id, t) {
  const kind = ["workflow", "pipeline", "stage"].includes(e.scope) ? e.scope : "workflow";
  const node = { id, kind, parent: str(e.parent) || null, name: str(e.name), state: "running", t0: t, t1: null,
    code: "", msg: "", children: [], progress: null };
  if (state.nodes.has(id)) return;
  state.nodes.set(id, node);
  const parent = node.parent && state.nodes.get(node.parent);
  if (parent) parent.children.push({ ref: id });
  else state.roots.push(id);
  if (kind === "stage") state.stages.add(node.name);
  if (kind === "workflow" && !node.parent && e.limits && typeof e.limits === "object") state.limits = e.limits;
}

function closeScope(state, e, id, t) {
  const node = state.nodes.get(id);
  if (!node) return;
  node.state = e.state === "failed" ? "failed" : "completed";
  node.t1 = t;
  node.code = str(e.code);
  node.msg = str(e.message);
  if (node.kind === "workflow" && !node.parent && state.status === "running") state.status = node.state;
}

function stageOf(state, id) {
  for (let node = state.nodes.get(id); node; node = state.nodes.get(node.parent)) {
    if (node.kind === "stage") return node.name;
  }
  return "";
}

function startCall(state, e, id, t) {
  if (state.calls.has(id)) return;
  const parent = str(e.parent);
  const call = { id, agent: str(e.agent), label: str(e.label), idx: num(e.index), group: e.group == null ? null : str(e.group), parent,
    stage: stageOf(state, parent), state: "running", t0: t, ms: null, n: 0, r: 0, out: "", code: "", msg: "",
    stream: null, wait: null, waited: 0, degraded: null };
  state.calls.set(id, call);
  state.agents.add(call.agent);
  state.inflight += 1;
  if (call.group !== null) {
    let group = state.groups.get(call.group);
    if (!group) {
      group = { id: call.group, parent, agents: new Set(), items: [], done: 0, running: 0, failed: 0, retried: 0,
        cancelled: 0, hist: new Array(BINS.length + 1).fill(0), total: num(e.of) };
      state.groups.set(call.group, group);
      addChild(state, parent, { group: call.group });
    }
    group.agents.add(call.agent);
    group.items.push(id);
    group.running += 1;
    if (num(e.of) !== null) group.total = num(e.of);
  } else {
    addChild(state, parent, { call: id });
  }
}

function endCall(state, e, id) {
  const call = state.calls.get(id);
  if (!call || call.state !== "running") return;
  call.state = e.state === "failed" ? "failed" : "completed";
  call.ms = num(e.latency);
  call.n = num(e.attempts) ?? 0;
  call.r = num(e.retries) ?? 0;
  call.out = str(e.output);
  call.code = str(e.code);
  call.msg = str(e.message);
  call.wait = null;
  state.inflight = Math.max(0, state.inflight - 1);
  state.attempts += call.n;
  const group = call.group !== null ? state.groups.get(call.group) : null;
  if (group) {
    group.running -= 1;
    if (call.state === "failed") group.failed += 1;
    else group.done += 1;
    if (call.r > 0) group.retried += 1;
    if (call.ms !== null) group.hist[bin(call.ms)] += 1;
  }
}

// The call's `model: "for:<purpose> else default"` found no model for its purpose and used the
// session's (`model.degraded`): its card says so for the rest of the run, as the summary does.
function degraded(state, e, id) {
  const call = state.calls.get(id);
  if (call) call.degraded = { purpose: str(e.purpose), model: str(e.model) };
}

// A piece of a call's streamed text: appended to what its card holds (the last KEPT characters).
// A new attempt or tool round writes from the start; a piece that says the answer grew by more
// than it carries (left out on the host, or a record missed) shows the gap as "…".
function streamed(state, e, id) {
  const call = state.calls.get(id);
  if (!call) return;
  call.wait = null; // writing: no longer held
  const at = `${num(e.attempt) ?? ""}:${num(e.round) ?? ""}`;
  if (!call.stream || call.stream.at !== at) call.stream = { at, text: "", length: 0 };
  const piece = str(e.text);
  const length = num(e.length);
  let text = call.stream.text;
  if (length !== null && length - piece.length > call.stream.length && !piece.startsWith("…")) text += "…";
  text += piece;
  if (text.length > KEPT) text = "…" + text.slice(text.length - KEPT + 1);
  call.stream.text = text;
  call.stream.length = length ?? call.stream.length + piece.length;
}

// A call held by its provider's limits: why, and until when (ms since the run started; null
// when the wait has no known end, e.g. for a free slot).
function waiting(state, e, id, t) {
  const call = state.calls.get(id);
  if (!call || call.state !== "running") return;
  const wait = num(e.wait);
  call.wait = { provider: str(e.provider), reason: str(e.reason), ms: wait, until: t !== null && wait !== null ? t + wait : null };
}

function resumed(state, e, id) {
  const call = state.calls.get(id);
  if (!call) return;
  call.wait = null;
  call.waited += num(e.waited) ?? 0;
}

function breaker(state, e, t) {
  const pause = num(e.pause);
  state.breakers.set(str(e.provider), { state: str(e.state), until: t !== null && pause !== null ? t + pause : null });
}

export function bin(ms) {
  const k = BINS.findIndex((b) => ms < b);
  return k === -1 ? BINS.length : k;
}

function request(state, e, id) {
  const approval = { scope: id, kind: str(e.kind), question: str(e.question), answer: null, by: "", error: "", pending: true };
  state.approvals.push(approval);
  addChild(state, id, { approval: state.approvals.length - 1 });
}

function resolve(state, e) {
  const approval = state.approvals.find((a) => a.pending && a.question === str(e.question));
  if (!approval) return;
  approval.pending = false;
  approval.answer = e.answer ?? null;
  approval.by = str(e.by);
  approval.error = str(e.code);
}

function addItem(state, id, item) {
  addChild(state, id, { item });
}

function addChild(state, id, child) {
  const node = state.nodes.get(id) || state.nodes.get(state.roots[state.roots.length - 1]);
  if (node) node.children.push(child);
}

// The run ended without finishing (interrupted, or the kernel gave up): what was running is
// cancelled, not left with a running dot.
export function end(state, status) {
  if (state.status === "running" || status === "interrupted") state.status = status;
  if (status !== "interrupted" && status !== "cancelled") return;
  for (const call of state.calls.values()) {
    if (call.state !== "running") continue;
    call.state = "cancelled";
    call.wait = null;
    state.inflight = Math.max(0, state.inflight - 1);
    const group = call.group !== null ? state.groups.get(call.group) : null;
    if (group) {
      group.running -= 1;
      group.cancelled += 1;
    }
  }
  for (const node of state.nodes.values()) if (node.state === "running") node.state = "cancelled";
  for (const approval of state.approvals) if (approval.pending) {
    approval.pending = false;
    approval.error = "cancelled";
  }
}

// -- reading the state: what a filter keeps ---------------------------------------------------
export function keeps(filter, call) {
  if (!filter) return true;
  if (filter.failed && call.state !== "failed") return false;
  if (filter.agent && call.agent !== filter.agent) return false;
  if (filter.stage && call.stage !== filter.stage) return false;
  return true;
}

// A group's items a filter keeps, one page of them: {rows, total, page, pages}.
export function page(state, group, filter, pageIndex, size) {
  const all = filter && (filter.failed || filter.agent || filter.stage)
    ? group.items.filter((id) => keeps(filter, state.calls.get(id)))
    : group.items;
  const pages = Math.max(1, Math.ceil(all.length / size));
  const p = Math.min(Math.max(0, pageIndex), pages - 1);
  return { rows: all.slice(p * size, p * size + size).map((id) => state.calls.get(id)), total: all.length, page: p, pages };
}

export function counts(state) {
  let done = 0, failed = 0, cancelled = 0, waiting = 0;
  for (const call of state.calls.values()) {
    if (call.state === "running" && call.wait) waiting += 1;
    if (call.state === "completed") done += 1;
    else if (call.state === "failed") failed += 1;
    else if (call.state === "cancelled") cancelled += 1;
  }
  return { calls: state.calls.size, done, failed, cancelled, waiting, inflight: state.inflight };
}

// The run view as HTML, from the reducer's state and the view's own UI state (filters, pages,
// open cards and folds). Only what is on screen is built: a parallelMap is one row with its
// counts, bar and latency histogram, and one page of its items.

import { BINS, counts, keeps, page } from "./reducer.js";
import { duration, esc, jsonTree, plural } from "./format.js";

export const PAGE = 50;
const MARK = { running: "●", completed: "✓", failed: "✗", cancelled: "⊘", interrupted: "⊘" };

export function emptyUi() {
  return { filter: { failed: false, agent: "", stage: "" }, pages: new Map(), open: new Set() };
}

const mark = (s) => `<span class="fr-mark">${MARK[s] || "●"}</span>`;

export function renderRun(state, ui, title, elapsed) {
  return `<div class="fr-run fr-${esc(state.status)}">${header(state, title, elapsed)}${primary(state)}${gone(state)}${filters(state, ui)}` +
    `<div class="fr-tree">${state.roots.map((id) => node(state, ui, id)).join("")}</div></div>`;
}

// The run's primary artifact (`publish primary`), first under the header; its text is the
// artifact's own output below the view (and the summary's, when the run ends).
function primary(state) {
  return state.primary ? `<div class="fr-primary">★ primary <code>${esc(state.primary)}</code></div>` : "";
}

// The kernel went away mid-run (a restart, a crash): the run is journaled interrupted.
function gone(state) {
  if (!state.gone) return "";
  const open = state.approvals.filter((a) => a.resume).length;
  const asked = open === 0 ? "" : `; ${open === 1 ? "its approval was" : `${open} approvals were`} not answered: ` +
    `the resumed run asks ${open === 1 ? "it" : "them"} again, to be answered there`;
  return `<div class="fr-gone">interrupted — the kernel went away; <code>%resume ${esc(state.gone)}</code> ` +
    `(or <code>%resume last</code>) goes on with the run${asked}</div>`;
}

export function header(state, title, elapsed) {
  const c = counts(state);
  const limit = state.limits && typeof state.limits.agent_runs === "number" ? `/${state.limits.agent_runs}` : "";
  // A failed run's header names the code only: the message is on the card or scope that failed.
  const top = state.status === "failed" ? state.nodes.get(state.roots[0]) : null;
  const parts = [
    `<span class="fr-badge">${esc(state.status)}</span>`,
    top && top.code ? `<span class="fr-err">${esc(top.code)}</span>` : "",
    title ? `<strong class="fr-title">${esc(title)}</strong>` : "",
    `<span class="fr-clock">${esc(duration(elapsed))}</span>`,
    c.calls ? `<span>${esc(plural(c.inflight, "call"))} in flight</span>` : "",
    c.calls ? `<span>${c.done}/${c.calls} calls done</span>` : "",
    c.failed ? `<span class="fr-err">${c.failed} failed</span>` : "",
    c.cancelled ? `<span class="fr-muted">${c.cancelled} cancelled</span>` : "",
    c.waiting ? `<span class="fr-waiting">‖ ${esc(plural(c.waiting, "call"))} waiting</span>` : "",
    ...breakers(state),
    `<span class="fr-muted">agent runs ${state.attempts}${esc(limit)}</span>`,
  ];
  return `<header class="fr-header">${parts.join("")}</header>`;
}

// Providers whose circuit breaker is not closed: calls to them fail fast until it is.
function breakers(state) {
  return [...state.breakers].filter(([, b]) => b.state !== "closed").map(([provider, b]) =>
    `<span class="fr-breaker">⚡ ${esc(provider)} breaker ${esc(b.state)}${b.until !== null ? ` until ${esc(duration(b.until))}` : ""}</span>`);
}

function filters(state, ui) {
  if (state.calls.size < 2) return "";
  const f = ui.filter;
  const options = (values, chosen) => [...values].sort().map((v) =>
    `<option value="${esc(v)}"${v === chosen ? " selected" : ""}>${esc(v)}</option>`).join("");
  const stages = state.stages.size
    ? `<select data-act="stage" aria-label="stage"><option value="">every stage</option>${options(state.stages, f.stage)}</select>` : "";
  return `<div class="fr-filters"><label><input type="checkbox" data-act="failed"${f.failed ? " checked" : ""}> failed only</label>` +
    `<select data-act="agent" aria-label="agent"><option value="">every agent</option>${options(state.agents, f.agent)}</select>` +
    `${stages}</div>`;
}

function node(state, ui, id) {
  const n = state.nodes.get(id);
  if (!n) return "";
  const title = n.kind === "stage" ? `stage “${esc(n.name)}”` : `${esc(n.kind)} <strong>${esc(n.name)}</strong>`;
  const time = n.t1 !== null && n.t0 !== null ? duration(n.t1 - n.t0) : "";
  // A failed scope says its message only where the failure happened (the host leaves it out
  // of a scope whose failed call or scope inside said it): the rest show the code.
  const err = n.state === "failed" && n.code ? ` <span class="fr-err">${esc(n.code)}${n.msg ? `: ${esc(n.msg)}` : ""}</span>` : "";
  const kids = n.children.map((child) => childHtml(state, ui, child)).join("") + progress(n.progress);
  return `<div class="fr-node fr-${esc(n.state)}"><div class="fr-head">${mark(n.state)} ${title}${err}` +
    ` <span class="fr-muted">${esc(time)}</span></div>${kids ? `<div class="fr-kids">${kids}</div>` : ""}</div>`;
}

function childHtml(state, ui, child) {
  if (child.ref) return node(state, ui, child.ref);
  if (child.group) return group(state, ui, state.groups.get(child.group));
  if (child.call) {
    const call = state.calls.get(child.call);
    return call && keeps(ui.filter, call) ? card(state, ui, call) : "";
  }
  if (child.approval !== undefined) return approval(state.approvals[child.approval]);
  return child.item ? item(child.item) : "";
}

function progress(p) {
  if (!p) return "";
  const bar = p.done !== null && p.total ? bar2(p.done / p.total, 0) : "";
  const count = p.total !== null ? `${p.done ?? ""}/${p.total}` : `${p.done ?? ""}`;
  return `<div class="fr-progress">${bar}<span>${esc(count)} ${esc(p.msg)}</span></div>`;
}

function bar2(done, failed) {
  const pct = (x) => `${Math.max(0, Math.min(100, x * 100)).toFixed(1)}%`;
  return `<span class="fr-bar" role="progressbar"><span class="fr-bar-done" style="width:${pct(done)}"></span>` +
    `<span class="fr-bar-failed" style="width:${pct(failed)}"></span></span>`;
}

export function group(state, ui, g) {
  if (!g) return "";
  const started = g.items.length;
  const total = g.total ?? started;
  const agents = [...g.agents].join(", ");
  const stats = [`${g.done} done`, `${g.running} running`, g.failed ? `<span class="fr-err">${g.failed} failed</span>` : "",
    g.retried ? `${g.retried} retried` : "", g.cancelled ? `${g.cancelled} cancelled` : ""].filter(Boolean).join(" · ");
  // Between one call's end and the next one's start a map may have none running: it is done
  // only when its scope is.
  const scope = state.nodes.get(g.parent);
  const open = g.running || (scope && scope.state === "running");
  const state_ = open ? "running" : g.failed ? "failed" : g.cancelled ? "cancelled" : "completed";
  const p = page(state, g, ui.filter, ui.pages.get(g.id) || 0, PAGE);
  const rows = p.rows.map((call) => card(state, ui, call)).join("");
  const first = p.total ? p.page * PAGE + 1 : 0;
  const pager = p.pages > 1
    ? `<div class="fr-pager"><button data-act="page" data-group="${esc(g.id)}" data-to="${p.page - 1}"${p.page ? "" : " disabled"}>‹ previous</button>` +
      ` items ${first}–${first + p.rows.length - 1} of ${p.total} ` +
      `<button data-act="page" data-group="${esc(g.id)}" data-to="${p.page + 1}"${p.page + 1 < p.pages ? "" : " disabled"}>next ›</button></div>`
    : "";
  const none = p.total === 0 && started ? `<div class="fr-muted">no item matches the filter</div>` : "";
  // A map's size is not announced: until it is known, the bar is of the items started so far.
  const of = g.total !== null ? `${g.done + g.failed}/${total}` : `${g.done + g.failed} of ${started} started`;
  return `<div class="fr-group fr-${state_}"><div class="fr-head">${mark(state_)} parallelMap · <strong>${esc(agents)}</strong> · ` +
    `${of} · ${stats}</div>${bar2(g.done / Math.max(1, total), g.failed / Math.max(1, total))}` +
    `${histogram(g.hist)}<div class="fr-items">${rows}${none}</div>${pager}</div>`;
}

export function histogram(hist) {
  const max = Math.max(1, ...hist);
  const names = [...BINS.map((b) => `<${duration(b)}`), `≥${duration(BINS[BINS.length - 1])}`];
  const bars = hist.map((n, k) =>
    `<span class="fr-hbar" title="${esc(names[k])}: ${n}"><span style="height:${Math.round((n / max) * 100)}%"></span>` +
    `<small>${esc(names[k])}</small></span>`).join("");
  return `<div class="fr-hist" aria-label="latency histogram">${bars}</div>`;
}

export function card(state, ui, call) {
  const open = ui.open.has(call.id);
  const index = call.idx !== null ? ` <span class="fr-idx">#${call.idx + 1}</span>` : "";
  const meta = [call.n ? plural(call.n, "attempt") : "", call.r ? `${plural(call.r, "retry", "retries")}` : "",
    call.ms !== null ? duration(call.ms) : ""].filter(Boolean).join(" · ");
  const tail = call.state === "failed" ? ` <span class="fr-err">${esc(call.code)}: ${esc(call.msg)}</span>`
    : call.out ? ` <span class="fr-out">→ ${esc(call.out)}</span>` : "";
  const body = open ? `<div class="fr-body">${details(state, ui, call)}</div>` : "";
  return `<div class="fr-card fr-${esc(call.state)}${open ? " fr-open" : ""}"><div class="fr-head" data-act="card" data-id="${esc(call.id)}">` +
    `${mark(call.state)} <span class="fr-agent">${esc(call.agent)}</span> <strong>${esc(call.label)}</strong>${index}` +
    ` <span class="fr-muted">${esc(meta)}</span>${tail}</div>${fellBack(call)}${held(call)}${written(call)}${body}</div>`;
}

// The session's model stood in for the call's purpose: the words of the summary and the terminal
// (runtime/events/tree.py `degraded_text`; tests/widgets/test_degraded_card.py holds them equal).
export function fellBack(call) {
  const d = call.degraded;
  if (!d) return "";
  return `<div class="fr-degraded">↓ ${esc(`for:${d.purpose} has no model configured: used the session's model ${d.model}`)}</div>`;
}

const REASONS = { "retry-after": "Retry-After", rpm: "requests-per-minute limit", tpm: "tokens-per-minute limit",
  bulkhead: "a free slot (max_in_flight)" };

// A call held by its provider's limits: for whom, why, and until when (time into the run).
export function held(call) {
  const w = call.state === "running" ? call.wait : null;
  if (!w) return "";
  const why = Object.prototype.hasOwnProperty.call(REASONS, w.reason) ? REASONS[w.reason] : w.reason;
  const how = w.ms !== null ? ` · ${duration(w.ms)}, until ${duration(w.until)} into the run` : "";
  return `<div class="fr-waiting">‖ waiting for ${esc(w.provider)}: ${esc(why)}${esc(how)}</div>`;
}

// What the model has written so far (the end of it): model text, shown as text.
export function written(call) {
  if (!call.stream || !call.stream.text) return "";
  return `<div class="fr-stream" aria-label="streamed text">${esc(call.stream.text)}</div>`;
}

function details(state, ui, call) {
  const d = state.details.get(call.id);
  if (!d) return `<span class="fr-muted">loading…</span>`;
  const rows = [];
  const row = (name, html) => rows.push(`<div class="fr-row"><span class="fr-k">${esc(name)}</span><div>${html}</div></div>`);
  if (d.role) row("role", esc(d.role));
  if (d.instructions) row("instructions", `<pre>${esc(d.instructions)}</pre>`);
  if (d.prompt != null) row("prompt", `<pre>${esc(d.prompt)}</pre>`);
  if ("output" in d) row("output", jsonTree(d.output, call.id, ui.open));
  if (d.code) row("error", `<span class="fr-err">${esc(d.code)}: ${esc(d.message)}</span>`);
  if (Array.isArray(d.attempts) && d.attempts.some((a) => a && !a.ok)) {
    row("attempts", d.attempts.map((a) => `<div class="${a && a.ok ? "fr-ok" : "fr-err"}">${esc(a && a.kind)} ${esc(a && a.attempt)}: ` +
      `${a && a.ok ? "valid" : esc((a && (a.error || (a.invalid ? "invalid output" : ""))) || "")} ${esc(a && a.message)}</div>`).join(""));
  }
  if (Array.isArray(d.tool_calls) && d.tool_calls.length) {
    row("tool calls", d.tool_calls.map((c) => `<div><code>${esc(c && c.tool)}</code>(${esc(JSON.stringify(c && c.arguments))})` +
      ` → ${esc(JSON.stringify(c && c.result))}</div>`).join(""));
  }
  if (d.provider) row("model", esc(`${d.provider}/${d.model}`));
  if (d.label) row("label", `<code>${esc(d.label)}</code>`);
  return rows.join("");
}

function approval(a) {
  if (!a) return "";
  const verb = { ask: "question", tool: "tool approval" }[a.kind] || "approval";
  const answer = a.pending ? `<span class="fr-muted">waiting for an answer</span>`
    : a.resume ? `<span class="fr-muted">not answered: answer it after <code>%resume</code></span>`
    : a.error ? `<span class="fr-err">${esc(a.error)}</span>`
    : `<strong>${esc(a.answer === true ? "approved" : a.answer === false ? "denied" : `“${a.answer}”`)}</strong> <span class="fr-muted">by ${esc(a.by)}</span>`;
  return `<div class="fr-item fr-approval">? ${verb}: <strong>${esc(a.question)}</strong> → ${answer}</div>`;
}

function item(it) {
  if (it.kind === "log") return `<div class="fr-item">· ${esc(it.text)}</div>`;
  if (it.kind === "verify") return `<div class="fr-item ${it.ok ? "fr-ok" : "fr-err"}">${it.ok ? "✓" : "✗"} verify ${esc(it.text)}</div>`;
  if (it.kind === "require_failed") return `<div class="fr-item fr-err">✗ require ${esc(it.text)}</div>`;
  if (it.kind === "artifact") return `<div class="fr-item">⇪ published <code>${esc(it.name)}</code>${it.primary ? " (primary)" : ""}</div>`;
  return "";
}

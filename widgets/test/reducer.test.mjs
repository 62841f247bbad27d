// The run view's front end, tested in Node (`node --test widgets/test/`; tests/widgets runs
// it under pytest) on streams recorded from real runs by the host's own Compactor and
// Batcher (widgets/test/record.py): the state they fold into, replays that must not count
// twice, interrupted runs, and the HTML drawn from it — bounded whatever the run's size.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { applyMessage, bin, counts, emptyState, page } from "../src/reducer.js";
import { emptyUi, renderRun, PAGE } from "../src/render.js";
import { jsonTree } from "../src/format.js";
import { decode } from "../src/wire.js";

const STREAMS = join(dirname(fileURLToPath(import.meta.url)), "streams");
const messages = (name) => readFileSync(join(STREAMS, `${name}.jsonl`), "utf8").trim().split("\n").map((l) => JSON.parse(l));
const fold = (msgs) => msgs.reduce((state, m) => applyMessage(state, m), emptyState());
const onlyGroup = (state) => {
  assert.equal(state.groups.size, 1);
  return [...state.groups.values()][0];
};

test("the triage example: pipeline, stages, a parallelMap of two, an approval, verify and log", () => {
  const state = fold(messages("triage"));
  assert.equal(state.status, "completed");
  const kinds = [...state.nodes.values()].map((n) => `${n.kind}:${n.name}:${n.state}`);
  assert.ok(kinds.includes("pipeline:triage:completed") && kinds.includes("stage:classify:completed"), kinds);
  const group = onlyGroup(state);
  assert.deepEqual([group.done, group.running, group.failed, group.items.length, group.total], [2, 0, 0, 2, 2]);
  assert.deepEqual([...state.calls.values()].map((c) => [c.idx, c.label]),
    [[0, "Ticket T1: Reset my password"], [1, "Ticket T2: I want a refund"]]);
  assert.equal(state.approvals.length, 1);
  assert.equal(state.approvals[0].pending, false);
  assert.equal(state.approvals[0].answer, true);
  assert.deepEqual([...state.stages].sort(), ["check", "classify"]);
  const html = renderRun(state, emptyUi(), "<cell>", 1234);
  for (const text of ["parallelMap", "#1", "#2", "Ticket T2: I want a refund", "approved", "verify high needs a human", "escalated", "1.2 s"]) {
    assert.ok(html.includes(text), text);
  }
  assert.ok(html.includes("&lt;cell&gt;") && !html.includes("<cell>"), "the title is escaped");
});

test("300 items: one row with counts, a histogram of every latency, one page of cards", () => {
  const state = fold(messages("map300"));
  const group = onlyGroup(state);
  assert.equal(group.items.length, 300);
  assert.equal(group.total, 300); // the map's size came with its first call: the bar is of the whole map
  assert.equal(group.done + group.failed, 300);
  assert.equal(group.failed, 2); // items 3 and 7 give invalid output
  assert.equal(group.retried, 2); // each was repaired once before failing
  assert.equal(group.hist.reduce((a, b) => a + b, 0), 300);
  assert.deepEqual(counts(state), { calls: 300, done: 298, failed: 2, cancelled: 0, waiting: 0, inflight: 0 });
  const failed = page(state, group, { failed: true }, 0, PAGE);
  assert.deepEqual(failed.rows.map((c) => c.idx), [3, 7]);
  assert.equal(page(state, group, { agent: "nobody" }, 0, PAGE).total, 0);
  assert.equal(page(state, group, { stage: "classify" }, 5, PAGE).rows[0].idx, 250);
  const ui = emptyUi();
  const html = renderRun(state, ui, "", 0);
  assert.equal((html.match(/class="fr-card /g) || []).length, PAGE);
  assert.ok(html.includes("items 1–50 of 300"), "a pager");
  ui.filter.failed = true;
  const only = renderRun(state, ui, "", 0);
  assert.equal((only.match(/class="fr-card /g) || []).length, 2);
  assert.ok(only.includes("output-validation"));
});

test("a batch seen twice, or replayed from the start, counts once; a gap asks for the rest", () => {
  const msgs = messages("map300");
  const once = fold(msgs);
  const twice = emptyState();
  for (const m of msgs) {
    applyMessage(twice, m);
    applyMessage(twice, m);
  }
  const batches = msgs.filter((m) => m.t === "batch");
  applyMessage(twice, { t: "batch", from: 0, ev: batches.flatMap((b) => b.ev) }); // a hello's replay
  assert.deepEqual(counts(twice), counts(once));
  assert.equal(twice.n, once.n);
  const late = emptyState();
  applyMessage(late, batches[3]);
  assert.equal(late.gap, true);
  assert.equal(late.n, 0);
});

test("an interrupted run: what was running is cancelled, nothing keeps a running dot", () => {
  const state = fold(messages("map300-interrupted"));
  assert.equal(state.status, "interrupted");
  const c = counts(state);
  assert.ok(c.cancelled > 0, "some calls were running");
  assert.equal(c.inflight, 0);
  assert.equal([...state.calls.values()].filter((call) => call.state === "running").length, 0);
  assert.equal([...state.nodes.values()].filter((n) => n.state === "running").length, 0);
  const group = onlyGroup(state);
  assert.equal(group.running, 0);
  assert.equal(group.cancelled, c.cancelled);
  assert.ok(group.items.length < group.total, "cut short: fewer items started than the map has");
  assert.ok(renderRun(state, emptyUi(), "", 0).includes(`${group.done + group.failed}/300`));
  const html = renderRun(state, emptyUi(), "", 0);
  assert.ok(html.includes("cancelled") && !html.includes("fr-card fr-running"));
});

test("5,000 items draw as much HTML as 300: only a page is built", () => {
  const ev = [{ e: "s", i: "s1", p: null, k: "workflow", n: "<cell>", t: 0 }];
  for (let i = 0; i < 5000; i++) {
    ev.push({ e: "a", i: `c1.${i}`, p: "s1", a: "triager", l: `Ticket ${i}`, t: i, g: "s1|/1", x: i });
    if (i < 4990) ev.push({ e: "b", i: `c1.${i}`, s: i % 100 === 0 ? "failed" : "completed", ms: i % 700, n: 1, r: 0, t: i + 1, c: "x", m: "y" });
  }
  const state = applyMessage(emptyState(), { t: "batch", from: 0, ev });
  const group = onlyGroup(state);
  assert.deepEqual([group.done, group.failed, group.running], [4940, 50, 10]);
  assert.equal(counts(state).inflight, 10);
  const big = renderRun(state, emptyUi(), "", 0).length;
  const small = renderRun(fold(messages("map300")), emptyUi(), "", 0).length;
  assert.ok(big < small * 1.5, `${big} vs ${small}`);
});

test("JSON folds say what they hold; values are escaped", () => {
  const html = jsonTree({ a: { x: 1, y: [1, 2, 3] }, b: "<img src=x onerror=alert(1)>" }, "k", new Set());
  assert.ok(html.includes("{2 keys}") && html.includes("[3 items]"));
  assert.ok(!html.includes("<img") && html.includes("&lt;img"));
  assert.ok(jsonTree([1], "k", new Set()).includes("[1 item]"));
  assert.ok(jsonTree({ a: { b: 1 } }, "k", new Set(["k.a"])).includes('data-fold="k.a" open'));
});

test("latency bins", () => {
  assert.deepEqual([0, 9, 10, 99, 100, 2999, 9999, 10000, 1e9].map(bin), [0, 0, 1, 2, 3, 5, 6, 7, 7]);
});

test("forged records change nothing they should not, and never throw", () => {
  const state = emptyState();
  for (const ev of [null, 3, "x", { e: "b", i: "nope" }, { e: "x", i: "nope" }, { e: "a", i: "c", p: "missing", x: "1", g: 5 },
    { e: "r", i: "z", q: { toString: null } }, { e: "p", i: "q", d: "NaN" }, { e: "zz" }]) {
    applyMessage(state, { t: "batch", from: state.n, ev: [ev] });
  }
  applyMessage(state, { t: "detail", i: "c", d: "<b>" });
  applyMessage(state, "garbage");
  const html = renderRun(state, emptyUi(), "<b>", 0);
  assert.ok(!html.includes("<b>"));
});

test("a record decodes to its readable names; an unknown or forged tag reads as an item", () => {
  assert.deepEqual(decode({ e: "b", i: "c1", s: "failed", ms: 12, n: 2, r: 1, c: "agent-invocation", m: "down", t: 40 }),
    { record: "call_ended", id: "c1", state: "failed", latency: 12, attempts: 2, retries: 1, code: "agent-invocation",
      message: "down", time: 40 });
  assert.deepEqual(decode({ e: "z", i: "s1", m: "newer", k: "dropped" }), { record: "z", id: "s1", message: "newer" });
  assert.deepEqual(decode({ e: "__proto__", i: "s1" }), { record: "__proto__", id: "s1" });
  assert.deepEqual(decode({ e: 7, n: "x" }), { record: "", name: "x" });
});

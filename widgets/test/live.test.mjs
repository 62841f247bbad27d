// A call's live state in the run view: its streamed text growing in its card (bounded, reset by
// a new attempt, gaps shown), a wait for its provider's limits with its reason and end, and a
// provider's breaker in the header. The records are written as the host's Compactor encodes
// them (tests/widgets/test_live_records.py holds the host's side).

import { test } from "node:test";
import assert from "node:assert/strict";

import { applyMessage, counts, emptyState, KEPT } from "../src/reducer.js";
import { card, emptyUi, renderRun } from "../src/render.js";

const started = { e: "a", i: "c1", p: "w1", a: "writer", l: "a poem", t: 5 };
const run = [{ e: "s", i: "w1", p: null, k: "workflow", n: "main", t: 0 }, started];
const piece = (w, len, n = 1, r = 1) => ({ e: "w", i: "c1", t: 10, n, r, w, len });
const fold = (records) => applyMessage(emptyState(), { t: "batch", from: 0, ev: [...run, ...records] });
const call = (state) => state.calls.get("c1");

test("the card fills as the model writes, before the call ends", () => {
  const state = fold([piece("Roses ", 6), piece("are red", 13)]);
  assert.equal(call(state).state, "running");
  assert.equal(call(state).stream.text, "Roses are red");
  assert.ok(renderRun(state, emptyUi(), "", 0).includes('<div class="fr-stream" aria-label="streamed text">Roses are red</div>'));
  applyMessage(state, { t: "batch", from: state.n, ev: [piece(",\nviolets", 22), { e: "b", i: "c1", s: "completed", ms: 40, n: 1, r: 0, t: 50, o: "ok" }] });
  assert.equal(call(state).stream.text, "Roses are red,\nviolets"); // kept after the end: what it wrote
});

test("a new attempt writes from the start; a piece that skipped some shows the gap", () => {
  const state = fold([piece("first try", 9), piece("again", 5, 2), piece("later", 40, 2)]);
  assert.equal(call(state).stream.text, "again…later");
  const clipped = fold([piece("ab", 2), piece("…xyz", 500)]); // clipped on the host: it says so itself
  assert.equal(call(clipped).stream.text, "ab…xyz");
});

test("a card keeps the end of its text, at most KEPT characters", () => {
  const pieces = Array.from({ length: 100 }, (_, k) => piece("x".repeat(199) + (k % 10), (k + 1) * 200));
  const text = call(fold(pieces)).stream.text;
  assert.equal(text.length, KEPT);
  assert.ok(text.startsWith("…") && text.endsWith("9"));
});

test("streamed text is text: markup in it is escaped, never drawn", () => {
  const state = fold([piece('<img src=x onerror="alert(1)"><script>x()</script>', 50)]);
  const html = card(state, emptyUi(), call(state));
  assert.ok(!html.includes("<img") && !html.includes("<script"), html);
  assert.ok(html.includes("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&lt;script&gt;"), html);
});

test("a wait on a Retry-After shows on the card and in the header, with its end; writing ends it", () => {
  const state = fold([{ e: "h", i: "c1", t: 1000, pv: "openai", k: "retry-after", ms: 2000 }]);
  assert.equal(counts(state).waiting, 1);
  const html = renderRun(state, emptyUi(), "", 1500);
  assert.ok(html.includes("‖ 1 call waiting"), html);
  assert.ok(html.includes("‖ waiting for openai: Retry-After · 2.0 s, until 3.0 s into the run"), html);
  applyMessage(state, { t: "batch", from: state.n, ev: [{ e: "u", i: "c1", t: 3000, ms: 2004 }] });
  assert.equal(call(state).wait, null);
  assert.equal(call(state).waited, 2004);
  assert.ok(!renderRun(state, emptyUi(), "", 3000).includes("waiting"));
  const bulkhead = fold([{ e: "h", i: "c1", t: 7, pv: "<p>", k: "bulkhead", ms: null }, piece("hi", 2)]);
  assert.equal(call(bulkhead).wait, null); // the call writes: it is no longer held
});

test("an open breaker shows in the header until it closes; an ended call is not waiting", () => {
  const state = fold([{ e: "k", i: "c1", t: 100, pv: "openai", s: "open", ms: 30000 }]);
  assert.ok(renderRun(state, emptyUi(), "", 200).includes("⚡ openai breaker open until 30.1 s"));
  applyMessage(state, { t: "batch", from: state.n, ev: [{ e: "k", i: "c1", t: 31000, pv: "openai", s: "closed", ms: null },
    { e: "h", i: "c1", t: 31000, pv: "openai", k: "rpm", ms: 500 }, { e: "b", i: "c1", s: "failed", ms: 9, n: 1, r: 0, t: 31001, c: "agent-invocation", m: "x" }] });
  const html = renderRun(state, emptyUi(), "", 32000);
  assert.ok(!html.includes("breaker") && !html.includes("waiting"), html);
  assert.equal(counts(state).waiting, 0);
});

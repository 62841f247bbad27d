// A failure in the run view, said once: the header names the code, the call that failed says
// the message, the scopes around it the code alone (the host leaves their message out:
// tests/views/test_one_message_records.py); a view whose kernel went away mid-run says the run
// was interrupted and how to go on with it.

import { test } from "node:test";
import assert from "node:assert/strict";

import { applyMessage, emptyState, end } from "../src/reducer.js";
import { emptyUi, renderRun } from "../src/render.js";

const SAYS = "the `agent_runs` limit of 3 is exceeded";
const records = [
  { e: "s", i: "w1", p: null, k: "workflow", n: "main", t: 0 },
  { e: "a", i: "c1", p: "w1", a: "tagger", l: "d", t: 5 },
  { e: "a", i: "c2", p: "w1", a: "tagger", l: "e", t: 6 },
  { e: "b", i: "c1", s: "failed", ms: 9, n: 1, r: 0, t: 14, c: "limit-exceeded", m: SAYS },
  { e: "x", i: "w1", s: "failed", t: 15, c: "limit-exceeded" }, // its message was said inside
];

test("a failed run: the code in the header, the message once, on the call", () => {
  const state = applyMessage(emptyState(), { t: "batch", from: 0, ev: records });
  applyMessage(state, { t: "end", s: "failed", ms: 15 });
  const html = renderRun(state, emptyUi(), "", 15);
  assert.equal(html.split(SAYS).length - 1, 1, html);
  assert.ok(html.includes('<span class="fr-badge">failed</span><span class="fr-err">limit-exceeded</span>'), html);
  assert.ok(html.includes('<strong>main</strong> <span class="fr-err">limit-exceeded</span>'), html);
});

test("a scope whose failure nothing inside said shows its message", () => {
  const state = applyMessage(emptyState(), { t: "batch", from: 0, ev: [records[0],
    { e: "x", i: "w1", s: "failed", t: 15, c: "limit-exceeded", m: "the `steps` limit of 50 is exceeded" }] });
  assert.ok(renderRun(state, emptyUi(), "", 15).includes("limit-exceeded: the `steps` limit of 50 is exceeded"));
});

test("a view whose kernel went away says the run was interrupted, and how to go on", () => {
  const state = applyMessage(emptyState(), { t: "batch", from: 0, ev: records.slice(0, 3) });
  end(state, "interrupted");
  state.gone = "r1a2<b>";
  const html = renderRun(state, emptyUi(), "", 20);
  assert.ok(html.includes("interrupted — the kernel went away; <code>%resume r1a2&lt;b&gt;</code>"), html);
  assert.equal(state.calls.get("c2").state, "cancelled");
  assert.ok(!renderRun(applyMessage(emptyState(), { t: "batch", from: 0, ev: records }), emptyUi(), "", 1)
    .includes("fr-gone"));
});

// A call whose `model: "for:<purpose> else default"` found no model for its purpose and used the
// session's (`model.degraded`, a `model_degraded` record on the call): its card says so under its
// line while it runs and after, as the summary does; the purpose and model are run data, text.

import { test } from "node:test";
import assert from "node:assert/strict";

import { applyMessage, emptyState } from "../src/reducer.js";
import { card, emptyUi, renderRun } from "../src/render.js";

const run = [{ e: "s", i: "w1", p: null, k: "workflow", n: "main", t: 0 },
  { e: "a", i: "c1", p: "w1", a: "judge", l: "Is this sound?", t: 5 },
  { e: "a", i: "c2", p: "w1", a: "judge", l: "And this?", t: 6 }];
const fold = (records) => applyMessage(emptyState(), { t: "batch", from: 0, ev: [...run, ...records] });
const SAYS = "↓ for:deep-judgement has no model configured: used the session&#39;s model mock";

test("the card of a call that fell back to the session's model says so, running and done", () => {
  const state = fold([{ e: "g", i: "c1", t: 5, pu: "deep-judgement", md: "mock" }]);
  assert.deepEqual(state.calls.get("c1").degraded, { purpose: "deep-judgement", model: "mock" });
  assert.equal(state.calls.get("c2").degraded, null);
  const running = card(state, emptyUi(), state.calls.get("c1"));
  assert.ok(running.includes(`<div class="fr-degraded">${SAYS}</div>`), running);
  assert.ok(!card(state, emptyUi(), state.calls.get("c2")).includes("fr-degraded"));
  applyMessage(state, { t: "batch", from: state.n, ev: [{ e: "b", i: "c1", s: "completed", ms: 9, n: 1, r: 0, t: 14, o: "yes" }] });
  const html = renderRun(state, emptyUi(), "", 20);
  assert.equal(html.split("fr-degraded").length - 1, 1, html);
  assert.ok(html.includes(SAYS), html);
});

test("a record for a call the view does not know is dropped", () => {
  const state = fold([{ e: "g", i: "c9", t: 5, pu: "x", md: "y" }]);
  assert.ok(![...state.calls.values()].some((call) => call.degraded));
  assert.ok(!renderRun(state, emptyUi(), "", 5).includes("fr-degraded"));
});

test("the purpose and the model are text: markup in them is escaped", () => {
  const state = fold([{ e: "g", i: "c1", t: 5, pu: "<img src=x onerror=alert(1)>", md: '"><script>x()</script>' }]);
  const html = card(state, emptyUi(), state.calls.get("c1"));
  assert.ok(!html.includes("<img") && !html.includes("<script"), html);
  assert.ok(html.includes("for:&lt;img src=x onerror=alert(1)&gt; has no model configured: used the session&#39;s model " +
    "&quot;&gt;&lt;script&gt;x()&lt;/script&gt;"), html);
});

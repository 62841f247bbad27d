// The run's primary artifact (`publish primary`) in the live view: named first, under the
// header, and marked where it was published; escaped like every name; the first one counts.
// The records are written as the host's Compactor encodes them (tests/widgets/test_live_records.py
// holds the host's side).

import { test } from "node:test";
import assert from "node:assert/strict";

import { applyMessage, emptyState } from "../src/reducer.js";
import { emptyUi, renderRun } from "../src/render.js";

const run = [{ e: "s", i: "w1", p: null, k: "workflow", n: "main", t: 0 }];
const fold = (records) => applyMessage(emptyState(), { t: "batch", from: 0, ev: [...run, ...records] });
const artifact = (n, primary) => ({ e: "f", i: "w1", t: 3, n, ...(primary ? { pm: true } : {}) });

test("the primary artifact is named under the header and marked in its scope", () => {
  const state = fold([artifact("notes.txt"), artifact("report<b>.md", true), artifact("late.md", true)]);
  assert.equal(state.primary, "report<b>.md");
  const html = renderRun(state, emptyUi(), "", 0);
  const banner = '<div class="fr-primary">★ primary <code>report&lt;b&gt;.md</code></div>';
  assert.ok(html.includes(banner), html);
  assert.ok(html.indexOf(banner) < html.indexOf("fr-tree"));
  assert.ok(html.includes("⇪ published <code>report&lt;b&gt;.md</code> (primary)"));
  assert.ok(html.includes("⇪ published <code>notes.txt</code></div>"));
});

test("a run without one shows no banner", () => {
  const html = renderRun(fold([artifact("notes.txt")]), emptyUi(), "", 0);
  assert.ok(!html.includes("fr-primary") && !html.includes("(primary)"));
});

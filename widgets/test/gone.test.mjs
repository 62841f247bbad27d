// The kernel goes away while the run waits for an approval (Kernel ▸ Restart): the view says
// the run was interrupted and that the resumed run asks the approval again, and the prompt's
// controls, whose clicks would reach no kernel, are hidden and disabled (gone.js, prompts.js).

import { test } from "node:test";
import assert from "node:assert/strict";

import { applyMessage, emptyState } from "../src/reducer.js";
import { emptyUi, renderRun } from "../src/render.js";
import { kernelGone } from "../src/gone.js";
import { closePrompts, PROMPTS } from "../src/prompts.js";
import guard, { guardGone, PROMPTS_GONE } from "../src/guard.js";

const asked = [
  { e: "s", i: "w1", p: null, k: "workflow", n: "<cell>", t: 0 },
  { e: "r", i: "w1", k: "approve", q: "Archive the <b>March</b> tickets?", t: 3 },
];
const waiting = () => applyMessage(emptyState(), { t: "batch", from: 0, ev: asked });

test("an approval left open by the kernel's going is for the resumed run, not cancelled", () => {
  const state = waiting();
  assert.equal(kernelGone(state, "r1a2b", 40), true);
  assert.equal(state.status, "interrupted");
  assert.equal(state.gone, "r1a2b");
  const [a] = state.approvals;
  assert.equal(a.pending, false);
  assert.equal(a.resume, true);
  assert.equal(a.error, "");
  const html = renderRun(state, emptyUi(), "", 40);
  assert.ok(html.includes("<code>%resume r1a2b</code> (or <code>%resume last</code>) goes on with the run; its approval was not answered: the resumed run asks it again, to be answered there"), html);
  assert.ok(html.includes("not answered: answer it after <code>%resume</code>"), html);
  assert.ok(!html.includes("waiting for an answer") && !html.includes(`fr-err">cancelled`), html);
  assert.ok(html.includes("Archive the &lt;b&gt;March&lt;/b&gt; tickets?"), html); // run data stays text
});

test("without an open approval the view says only how to go on; a forged run id is text", () => {
  const state = applyMessage(emptyState(), { t: "batch", from: 0, ev: asked.slice(0, 1) });
  kernelGone(state, '<img src=x onerror="x()">', 9);
  const html = renderRun(state, emptyUi(), "", 9);
  assert.ok(html.includes("goes on with the run</div>") && !html.includes("approval"), html);
  assert.ok(!html.includes("<img") && html.includes("&lt;img src=x"), html);
});

test("a run that had ended is left as it ended", () => {
  const state = waiting();
  applyMessage(state, { t: "batch", from: 2, ev: [{ e: "d", i: "w1", q: "Archive the <b>March</b> tickets?", a: true, by: "interactive", t: 9 }] });
  applyMessage(state, { t: "end", s: "completed", ms: 10 });
  assert.equal(kernelGone(state, "r1", 12), false);
  assert.equal(state.gone, null);
  assert.equal(state.status, "completed");
  assert.ok(renderRun(state, emptyUi(), "", 12).includes("approved"));
});

// The little of the DOM closePrompts touches: elements found by a selector, with `disabled`,
// `hidden` and a style.
function element(selector, children = []) {
  return {
    disabled: false, hidden: false, style: {}, selector,
    querySelectorAll(q) {
      const all = [];
      const walk = (node) => { for (const c of node.children) { if (q.split(", ").some((s) => c.selector === s)) all.push(c); walk(c); } };
      walk(this);
      return all;
    },
    children,
  };
}

test("the prompts' boxes are hidden and every control in them disabled; the view's own are not", () => {
  const approve = element("button"), deny = element("button"), text = element("input");
  const prompts = element(`.${PROMPTS}`, [element("div", [approve, deny, text])]);
  const filter = element("select");
  const box = element("div", [element("div", [filter]), prompts]);
  assert.equal(closePrompts(box), 1);
  assert.ok(prompts.hidden && prompts.style.display === "none");
  assert.ok(approve.disabled && deny.disabled && text.disabled);
  assert.equal(filter.disabled, false);
  assert.equal(closePrompts(null), 0); // a view not in a box yet
});

// A box of prompts shown on its own (the capability prompt): its guard widget beside it.
function guarded() {
  const allow = element("button"), deny = element("button");
  const prompts = element(`.${PROMPTS}`, [element("div", [allow, deny])]);
  const guardEl = { textContent: "", parentElement: null };
  guardEl.parentElement = element("div", [prompts]);
  return { allow, deny, prompts, guardEl };
}

test("a box of prompts on its own: its guard takes the controls away and says why, once", () => {
  const { allow, deny, prompts, guardEl } = guarded();
  assert.equal(guardGone(guardEl), true);
  assert.ok(prompts.hidden && allow.disabled && deny.disabled);
  assert.equal(guardEl.textContent, PROMPTS_GONE);
  assert.ok(PROMPTS_GONE.includes("Run the cell again to be asked again"));
  assert.equal(guardGone(guardEl), false); // said once
  assert.equal(guardGone({ textContent: "", parentElement: null }), false); // nothing beside it: says nothing
});

test("the guard acts on the widget manager's comm_live_update, and lets go of it when removed", () => {
  const { allow, guardEl } = guarded();
  const handlers = new Map();
  const model = {
    on: (name, f) => handlers.set(name, f),
    off: (name, f) => { if (handlers.get(name) === f) handlers.delete(name); },
  };
  const dispose = guard.render({ model, el: guardEl });
  assert.equal(guardEl.textContent, ""); // the kernel is there: nothing shown
  assert.equal(allow.disabled, false);
  handlers.get("comm_live_update")();
  assert.ok(allow.disabled && guardEl.textContent === PROMPTS_GONE);
  dispose();
  assert.equal(handlers.size, 0);
});

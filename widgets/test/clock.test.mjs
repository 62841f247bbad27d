// The header's clock (src/clock.js): the run's elapsed time, anchored by every message on the
// time it arrived, so a view that opened in a quiet stretch of the run (its replay holds only
// old records) does not count from its own opening — and, when the kernel goes away, it stops
// at the run's time then.

import { test } from "node:test";
import assert from "node:assert/strict";

import { applyMessage, emptyState } from "../src/reducer.js";
import { elapsed, emptyClock, heard, stop } from "../src/clock.js";

const open = [{ e: "s", i: "w1", p: null, k: "workflow", n: "main", t: 0 }, { e: "a", i: "c0", p: "w1", a: "a", l: "call 0", t: 5 }];
const later = [
  { e: "b", i: "c0", s: "completed", ms: 1900, n: 1, r: 0, t: 1905, o: "ans:call 0" },
  { e: "a", i: "c1", p: "w1", a: "a", l: "call 1", t: 1906 },
  { e: "b", i: "c1", s: "completed", ms: 14, n: 1, r: 0, t: 1920, o: "ans:call 1" },
  { e: "a", i: "c2", p: "w1", a: "a", l: "call 2", t: 1921 },
];

// A view whose page takes 1.5 s to open: it is sent the first two records (the run still in
// call 0) at 10,000 ms on its own clock, then the rest as they happen.
function view(replay) {
  const state = emptyState();
  const clock = emptyClock();
  receive(state, clock, replay, 10_000);
  receive(state, clock, { t: "batch", from: 2, ev: later }, 10_000 + 1921 - 1500);
  return { state, clock };
}

// As the widget does (index.js): the message applied, then heard at the time it came.
function receive(state, clock, msg, at) {
  applyMessage(state, msg);
  heard(clock, state, msg, at);
}

test("later records move the start back: the clock is never behind the run's newest record", () => {
  const { clock } = view({ t: "batch", from: 0, ev: open });
  assert.equal(elapsed(clock, 10_000 + 1921 - 1500), 1921);
  // The kernel goes away 2.5 s into the run (the held call 2 in flight): the clock stops there.
  const now = 10_000 + 2500 - 1500;
  assert.equal(stop(clock, now), 2500);
  assert.equal(elapsed(clock, now + 60_000), 2500, "stopped");
});

test("a replay says the run's time now: a view opened mid-call counts from the run's start", () => {
  const { state, clock } = emptyView();
  receive(state, clock, { t: "batch", from: 0, ev: open, now: 1500 }, 10_000);
  assert.equal(elapsed(clock, 10_700), 2200); // no record since: the replay's `now` anchors it
  assert.equal(stop(clock, 10_700), 2200);
  const old = emptyView(); // without it, the newest record (5 ms) is all the view knows
  receive(old.state, old.clock, { t: "batch", from: 0, ev: open }, 10_000);
  assert.equal(elapsed(old.clock, 10_700), 705);
});

test("the run's end sets its length; nothing before the first record starts the clock", () => {
  const { state, clock } = emptyView();
  receive(state, clock, { t: "detail", i: "c0", d: {} }, 50);
  assert.equal(elapsed(clock, 5_000), 0);
  receive(state, clock, { t: "batch", from: 0, ev: [...open, ...later] }, 6_000);
  receive(state, clock, { t: "end", s: "completed", ms: 1930 }, 6_010);
  assert.equal(elapsed(clock, 99_000), 1930);
  assert.equal(stop(clock, 99_000), 1930, "a run that ended keeps its length when its kernel goes later");
});

function emptyView() {
  return { state: emptyState(), clock: emptyClock() };
}

// The header's clock: the run's elapsed time on this browser's clock (`now`, performance.now()).
// Pure: each message is folded in with the time it arrived. The host's times are ms since the
// run's first event; a message says the run was at least that old when it arrived — its
// newest record's time, or the `now` a replay carries (a view that opens in a quiet stretch of
// the run holds only old records). The run started at the earliest moment any message implies,
// so the clock never runs behind what it was told. It stops at the run's end (the host's
// length) or when the kernel goes away (the time then).

export function emptyClock() {
  return { start: null, total: null }; // the run's start on this clock; its length, once it stopped
}

// A message from the host, applied to `state` (reducer.js), that arrived at `now`.
export function heard(clock, state, msg, now) {
  if (msg && msg.t === "end") {
    clock.total = typeof msg.ms === "number" && Number.isFinite(msg.ms) ? msg.ms : state.t;
    return;
  }
  if (clock.total !== null || state.n === 0) return;
  const said = msg && typeof msg.now === "number" && Number.isFinite(msg.now) ? msg.now : 0;
  const start = now - Math.max(state.t, said);
  if (clock.start === null || start < clock.start) clock.start = start;
}

export function elapsed(clock, now) {
  if (clock.total !== null) return clock.total;
  return clock.start === null ? 0 : Math.max(0, now - clock.start);
}

// The run stopped without its end reaching this view (the kernel went away): its length is
// the time now. Returns it.
export function stop(clock, now) {
  if (clock.total === null) clock.total = elapsed(clock, now);
  return clock.total;
}

// The sandbox's watchdog thread (docs/sandbox.md, "Deadlines inside the sandbox").
//
// Python runs on the runner's main thread; this worker keeps the deadline timer. When
// an armed deadline passes it first asks the main thread ({ask: generation}). A main
// thread that answers within ANSWER_MS was idle (the run is awaiting something) and
// cancels the run itself, with no interrupt at all. Only when it does not answer is
// Python busy: then the worker writes SIGINT (2) into the interrupt buffer that
// Pyodide polls, and the busy code gets KeyboardInterrupt.
//
// Shared state, an Int32Array over one SharedArrayBuffer (runner.mjs owns the layout):
//   control[INTERRUPT]  the interrupt buffer Pyodide reads (0 or 2)
//   control[STATE]      0 idle | g > 0 armed (generation g) | ASKING | TAKEN | FIRING | FIRED
// Every transition is a compare-and-swap, so a deadline that passes while the main
// thread disarms can neither interrupt the next run nor code between runs: the main
// thread only clears the interrupt once the state is no longer FIRING (runner.mjs).

import { parentPort, workerData } from "node:worker_threads";

const control = new Int32Array(workerData.buffer);
const { INTERRUPT, STATE, ASKING, FIRING, FIRED } = workerData.layout;
const SIGINT = 2;
const ANSWER_MS = 50;
// Node's setTimeout takes at most 2^31-1 ms (~24.8 days); a longer delay becomes 1 ms. A
// longer deadline waits in steps of at most this, to the deadline's own monotonic time.
const MAX_TIMER_MS = 2 ** 31 - 1;

let timer = null;

function fire(generation) {
  timer = null;
  if (Atomics.compareExchange(control, STATE, generation, ASKING) !== generation) return;  // disarmed meanwhile
  parentPort.postMessage({ ask: generation });
  Atomics.wait(control, STATE, ASKING, ANSWER_MS);  // the main thread answers by leaving ASKING
  if (Atomics.compareExchange(control, STATE, ASKING, FIRING) !== ASKING) return;  // answered, or disarmed
  Atomics.store(control, INTERRUPT, SIGINT);
  Atomics.store(control, STATE, FIRED);
}

function schedule(generation, due) {
  const remaining = due - performance.now();
  timer = remaining > MAX_TIMER_MS
    ? setTimeout(schedule, MAX_TIMER_MS, generation, due)
    : setTimeout(fire, Math.max(0, remaining), generation);
}

parentPort.on("message", (message) => {
  if (timer !== null) clearTimeout(timer);
  timer = null;
  if (message.arm !== undefined) schedule(message.arm, performance.now() + Math.max(0, message.ms));
});

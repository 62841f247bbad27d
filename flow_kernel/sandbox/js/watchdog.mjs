// The sandbox's watchdog thread: after `ms` (a posted number) it writes 2 (SIGINT)
// into the interrupt buffer Pyodide polls, so Python raises KeyboardInterrupt even
// while the main thread is busy. A negative number disarms it.
import { parentPort, workerData } from "node:worker_threads";

const signal = new Int32Array(workerData);
let timer = null;

parentPort.on("message", (ms) => {
  if (timer !== null) clearTimeout(timer);
  timer = null;
  if (ms >= 0) timer = setTimeout(() => { Atomics.store(signal, 0, 2); timer = null; }, ms);
});

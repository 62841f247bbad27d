// The Node.js side of a Flow sandbox (docs/sandbox.md).
//
// Loads the pinned Pyodide, closes every door listed in the sandbox notes before any
// compiled code runs, and then only moves JSON lines: stdin -> Python `on_lines`,
// Python `io.write` -> stdout (a loop turn's lines in one write). stderr is for diagnostics only.
//
//   node [flags] runner.mjs --pyodide DIR --bootstrap DIR [--snapshot FILE] [--memory-mb N]
//   node runner.mjs --pyodide DIR --bootstrap DIR --make-snapshot FILE     (trusted builder)

import fs from "node:fs";
import path from "node:path";
import module from "node:module";
import childProcess from "node:child_process";
import net from "node:net";
import tls from "node:tls";
import workerThreads from "node:worker_threads";

function parseArgs(argv) {
  const out = { memoryMb: 512 };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i];
    const value = argv[i + 1];
    if (key === "--pyodide") out.pyodide = value;
    else if (key === "--bootstrap") out.bootstrap = value;
    else if (key === "--snapshot") out.snapshot = value;
    else if (key === "--make-snapshot") out.makeSnapshot = value;
    else if (key === "--memory-mb") out.memoryMb = Number(value);
    else { fail(`unknown argument ${key}`); }
    i++;
  }
  if (!out.pyodide || !out.bootstrap) fail("--pyodide and --bootstrap are required");
  return out;
}

// Bridge lines still held (main's `flushLines`) go out before the process ends.
let flushOnExit = () => {};

function fail(message) {
  try { flushOnExit(); } catch { /* the host is gone: nothing to tell it */ }
  process.stderr.write(`flow sandbox: ${message}\n`);
  process.exit(70);
}

// --- the wasm memory cap: Emscripten's heap growth fails cleanly -> MemoryError ------------
function capMemory(megabytes) {
  const cap = megabytes * 1024 * 1024;
  const grow = WebAssembly.Memory.prototype.grow;
  WebAssembly.Memory.prototype.grow = function (pages) {
    if (this.buffer.byteLength + pages * 65536 > cap) {
      throw new RangeError("flow sandbox: the wasm memory cap is reached");
    }
    return grow.call(this, pages);
  };
}

// Under Node's permission model `process.binding` is denied, and Pyodide asks it for
// the fs constants once; answer that call, refuse everything else.
function shimBinding() {
  const original = process.binding;
  process.binding = function (name) {
    if (name === "constants") return { fs: fs.constants };
    return original.call(process, name);
  };
}

function bootstrapFiles(dir) {
  const files = [];
  for (const name of fs.readdirSync(path.join(dir, "flowbox")).sort()) {
    if (name.endsWith(".py")) files.push([`flowbox/${name}`, fs.readFileSync(path.join(dir, "flowbox", name), "utf8")]);
  }
  return files;
}

function installBootstrap(pyodide, dir) {
  pyodide.FS.mkdirTree("/flow/flowbox");
  for (const [name, text] of bootstrapFiles(dir)) pyodide.FS.writeFile(`/flow/${name}`, text);
  pyodide.runPython("import sys\nsys.path.insert(0, '/flow')\nimport flowbox.bridge\nflowbox.bridge.warm_up()");
}

function closeDoors() {
  const blocked = (what) => function () { throw new Error(`flow sandbox: ${what} is not available`); };
  // worker_threads too: a new Worker would get fresh, unstubbed copies of every module
  // above (the permission model refuses one anyway: Node runs without --allow-worker).
  for (const [name, mod] of [["child_process", childProcess], ["net", net], ["tls", tls], ["worker_threads", workerThreads]]) {
    for (const key of Object.keys(mod)) {
      if (typeof mod[key] === "function") {
        try { mod[key] = blocked(`${name}.${key}`); } catch { /* a getter-only export stays, the permission model covers it */ }
      }
    }
  }
  module.syncBuiltinESMExports();
  delete globalThis.require;
}

// --- restoring a snapshot without touching the pages it leaves zero ----------------------------
// Pyodide restores a memory snapshot with one `Module.HEAP8.set(bytes)`, which writes every
// page of the wasm heap, so all of it becomes resident — about half of the 30 MiB snapshot
// is pages of zeros (free heap). While loadPyodide runs, Int8Array's `set` is shadowed by one
// that, for the snapshot's bytes only, skips a 4 KiB page that is zero in the snapshot AND
// already zero in the heap (a wasm memory starts zeroed, but the module's data segments are
// written before the restore): the heap ends byte for byte as a full copy would leave it, and
// a page never written is never made resident. Removed as soon as loadPyodide returns.
function sparseHeapRestore(snapshotBuffer) {
  const PAGE = 4096;
  const fullSet = Object.getPrototypeOf(Int8Array.prototype).set;
  // Whether bytes [at, end) of `words`' view are zero, read as 32-bit words: no allocation
  // (the scan must not grow the JS heap it is saving memory for).
  const zeroAt = (words, at, end) => {
    for (let i = at >> 2, last = end >> 2; i < last; i++) if (words[i] !== 0) return false;
    return true;
  };
  Object.defineProperty(Int8Array.prototype, "set", {
    configurable: true,
    writable: true,
    value: function set(source, offset = 0) {
      if (!(source instanceof Uint8Array) || source.buffer !== snapshotBuffer || offset !== 0
          || this.length < source.length || source.byteOffset % 4 !== 0 || this.byteOffset % 4 !== 0) {
        return fullSet.call(this, source, offset);
      }
      const heap = new Uint8Array(this.buffer, this.byteOffset, source.length);
      const from = new Int32Array(source.buffer, source.byteOffset, source.length >> 2);
      const into = new Int32Array(this.buffer, this.byteOffset, source.length >> 2);
      const whole = source.length - (source.length % PAGE);
      let run = -1;  // start of the pages waiting to be copied in one call
      for (let at = 0; at <= whole; at += PAGE) {
        const skip = at === whole || (zeroAt(from, at, at + PAGE) && zeroAt(into, at, at + PAGE));
        if (skip && run >= 0) {
          fullSet.call(heap, source.subarray(run, at), run);
          run = -1;
        } else if (!skip && run < 0) {
          run = at;
        }
      }
      if (whole < source.length) fullSet.call(heap, source.subarray(whole), whole);  // a partial last page
      return undefined;
    },
  });
  return () => {
    delete Int8Array.prototype.set;
    snapshotBuffer = null;  // this closure's scope must not keep the 30 MiB alive
  };
}

// --- the watchdog: deadlines that hold even while Python is busy ---------------------------
// One deadline at a time (`arm` replaces it, `disarm` clears it). Runs that share the process
// each have their own: the bootstrap keeps them and arms this for the earliest of the runs
// still running (flowbox/deadlines.py). Kept on the main thread, with no worker: while Python runs, CPython's eval loop asks
// Pyodide for a signal every so many ticks of its eval breaker (below), through
// `_Py_CheckEmscriptenSignals_Helper`, which reads `Module.Py_EmscriptenSignalBuffer` three
// times: whether it is set, its element 0, and to write 0 back. That property is a getter
// here (`watch`, installed by `main`), returning one Int32Array: on the first of each
// three reads it looks at the clock, and once Python has kept the main thread ANSWER_MS
// past an armed deadline it puts SIGINT (2) in element 0, which the same check reads and
// clears; CPython then calls the bootstrap's SIGINT handler in whatever code runs, which
// raises KeyboardInterrupt only in the code of a run whose own deadline passed and
// otherwise cancels the overdue runs and lets that code go on. (A getter on element 0
// itself costs V8 a runtime call per read and per write, ~0.5 µs a check, several per cent
// of a CPU-bound run; a named getter returning a typed array is inline-cached.) A main
// thread that is idle at the deadline (the runs await the host) runs the timer below
// instead, whose `onTimeout` has the bootstrap cancel the overdue runs the ordinary way,
// with no interrupt: a SIGINT left pending would go off in whatever Python runs next (the
// next stdin line), outside the run. Everything is on one thread, so `disarm` is final
// the moment it returns.
//
// How often CPython checks is the watchdog's too: `_Py_emscripten_signal_clock`, an int in
// the wasm heap (its address exported), counts eval-breaker ticks down to the next check,
// and CPython sets it back to 50 just before each one, which the getter then overwrites
// with its own interval (`checkEvery`). Disarmed, nothing can come due: every 3,200 ticks,
// without a look at the clock. Armed, the interval starts at 50 ticks and grows at most 4×
// a check up to 3,200, as long as the last interval took less than GAP_MS at the pace
// measured between the last two looks (slower ticks keep it shorter, down to 50): a
// CPU-bound run asks ~2,500 times instead of ~38,000, and a busy loop still hears of its
// deadline within about a millisecond unless its ticks suddenly became much slower.
const ANSWER_MS = 50;
const SIGINT = 2;
const BASE_TICKS = 50;  // CPython's own interval
const MAX_TICKS = 64 * BASE_TICKS;
const GAP_MS = 1;
// Node's setTimeout takes at most 2^31-1 ms (~24.8 days); a longer delay becomes 1 ms. A
// longer deadline waits in steps of at most this, to the deadline's own monotonic time.
const MAX_TIMER_MS = 2 ** 31 - 1;

// `checkEvery(ticks)` sets the ticks to CPython's next check (a whole number ≥ 1).
function startWatchdog(checkEvery) {
  let fireAt = Infinity;  // performance.now() past which busy Python is interrupted; Infinity: disarmed
  let timer = null;
  const signal = new Int32Array(1);  // what Pyodide reads: 0, or SIGINT until it clears it
  let reads = 0;  // reads of the buffer since the clock was last looked at (0, 1, 2)
  let ticks = BASE_TICKS;  // the interval set at the last look
  let lastLook = 0;  // performance.now() then
  function look() {
    if (fireAt === Infinity) {
      checkEvery(MAX_TICKS);
      return;
    }
    if (signal[0] !== 0) return;
    const now = performance.now();
    if (now >= fireAt) {
      dog.disarm();  // once: the interrupt is Python's now
      signal[0] = SIGINT;
      return;
    }
    const elapsed = now - lastLook;
    lastLook = now;
    const paced = elapsed > 0 ? Math.floor(ticks * GAP_MS / elapsed) : MAX_TICKS;
    ticks = Math.max(BASE_TICKS, Math.min(paced, 4 * ticks, MAX_TICKS));
    checkEvery(ticks);
  }
  const dog = {
    signal,
    watch() {
      if (reads === 0) look();
      reads = reads === 2 ? 0 : reads + 1;
      return signal;
    },
    onTimeout: () => {},
    arm(ms) {
      dog.disarm();
      const due = performance.now() + Math.max(0, Number(ms) || 0);
      fireAt = due + ANSWER_MS;
      ticks = BASE_TICKS;
      lastLook = performance.now();
      checkEvery(BASE_TICKS);  // the next check soon, the pace measured from here
      schedule(due);
    },
    disarm() {
      fireAt = Infinity;
      signal[0] = 0;  // a signal Pyodide has not read yet goes with the deadline that set it
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
  // The timer runs only when the main thread is idle, i.e. Python is not running and the
  // runs are awaiting something: take the deadline and have the overdue runs cancelled.
  function schedule(due) {
    const remaining = due - performance.now();
    timer = remaining > MAX_TIMER_MS
      ? setTimeout(schedule, MAX_TIMER_MS, due)
      : setTimeout(expire, Math.max(0, remaining));
  }
  function expire() {
    dog.disarm();
    dog.onTimeout();
  }
  return dog;
}

// stdin, the bridge's alone: a socket on fd 0 (a pipe from the host) whose reads land in one
// buffer and go straight to `onRead` (net.Socket's `onread`), with none of a Readable's
// queueing, its `data` events or the tick it schedules after every chunk. It is made before
// `net` is stubbed; `process.stdin` is never made (Node would make it through the stubs).
const READ_BUFFER_BYTES = 64 * 1024;

// Paused until `listen(onRead, onEnd)`: the host's lines wait in the pipe until Python is
// attached.
function openBridgeInput() {
  const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  let onRead = null;
  const socket = new net.Socket({ fd: 0, readable: true, writable: false,
                                  onread: { buffer, callback: (count, bytes) => { onRead(bytes, count); } } });
  socket.pause();
  return {
    listen(reader, onEnd) {
      onRead = reader;
      socket.on("end", onEnd);
      socket.resume();
    },
  };
}

// A bridge line ends at "\n" and nowhere else (docs/sandbox.md). Not node:readline: from
// Node 24 on it also ends a line at U+2028 and U+2029 (nodejs/node#57591), which JSON leaves
// unescaped inside strings, so an agent's answer holding one reached Python as two halves
// of a line and its run waited until its deadline. The complete lines of one read go to
// Python in one call (flowbox/bridge.py `on_lines` splits them at "\n" only): a burst of
// replies is one call into Python, not one a line. The bytes stay bytes until a "\n" is
// found: a "\n" byte is never part of a longer UTF-8 sequence, so the bytes before it are
// whole characters, decoded in one go. The read buffer is reused: what is kept is copied.
const NEWLINE = 0x0a;

function lineReader(onLines) {
  let head = null;  // the bytes of a line whose "\n" has not come yet (a copy)
  return (bytes, count) => {
    const end = count > 0 ? bytes.lastIndexOf(NEWLINE, count - 1) : -1;
    if (end === -1) {
      const rest = Buffer.from(bytes.subarray(0, count));
      head = head === null ? rest : Buffer.concat([head, rest]);
      return;
    }
    let text;
    if (head === null) {
      text = bytes.toString("utf8", 0, end);
    } else {
      text = Buffer.concat([head, bytes.subarray(0, end)]).toString("utf8");
      head = null;
    }
    if (end + 1 < count) head = Buffer.from(bytes.subarray(end + 1, count));
    onLines(text);
  };
}

// stdout, the bridge's alone. Text goes to fd 1 with one write(2) while the stream holds
// nothing (no Writable bookkeeping, write request or callback per line); what the pipe
// does not take at once (the host is not reading: a flood; libuv made the fd non-blocking
// when it opened the stream) goes to the stream, which queues it and writes it as the pipe
// drains, and so does everything after it until the stream's queue is empty again — the
// bytes leave in the order written, none twice. A failed write (EAGAIN, or the host gone:
// EPIPE) leaves the text to the stream too, which fails as it always did.
function stdoutSink(stream, writeSync) {
  const queue = stream.write.bind(stream);  // taken before `process.stdout.write` is replaced
  return (text) => {
    if (stream.writableLength > 0) {
      queue(text);
      return;
    }
    let written = 0;
    try {
      written = writeSync(1, text);
    } catch {
      written = 0;
    }
    if (written === 0) {
      queue(text);
    } else if (written < Buffer.byteLength(text)) {
      queue(Buffer.from(text).subarray(written));
    }
  };
}

async function main() {
  // Node creates the stdio streams lazily, through `net` when they are pipes: make them
  // now, before `net` is stubbed out (stdin: the bridge's own socket, below).
  const stdio = [process.stdout, process.stderr];
  if (stdio.some((s) => !s)) fail("stdio is missing");
  const args = parseArgs(process.argv.slice(2));
  const input = args.makeSnapshot ? null : openBridgeInput();
  // Only the bridge writes to stdout. Everything else that would (console.log, Pyodide's
  // default stdout after a `setStdout()`, Emscripten's `system` with stdio "inherit")
  // goes to stderr, so no code in the sandbox can put a non-protocol line on the stream.
  const stdoutWrite = stdoutSink(process.stdout, fs.writeSync);
  process.stdout.write = process.stderr.write.bind(process.stderr);
  // Pyodide's own Node writer (what `pyodide.setStdout()` restores) bypasses the stream
  // with fs.writeSync(1, ...): send every fd-1 write of the fs module to fd 2 as well.
  // (The bridge's sink above holds the fs.writeSync from before this, and the stream's
  // own pipe handle, none of these functions.)
  for (const name of ["write", "writeSync", "writev", "writevSync"]) {
    const original = fs[name];
    fs[name] = function (fd, ...rest) { return original.call(this, fd === 1 ? 2 : fd, ...rest); };
  }
  module.syncBuiltinESMExports();
  // The lines written while one turn of Node's loop runs go out in one write, at the start
  // of its next turn (a setImmediate queued while immediates run waits for the next turn,
  // so the Python tasks already woken write theirs first): a burst of host requests is one
  // pipe write and one wake-up of the host, not one each. `io.flush` writes them at once.
  // A flush before that turn (`io.flush`, the bridge's early writes) cancels the turn's
  // flush: a round trip whose one line already left runs no empty turn after it.
  let outbox = [];
  let flushTurn = null;  // the setImmediate that writes the outbox, while one is queued
  const flushLines = () => {
    if (flushTurn !== null) {
      clearImmediate(flushTurn);
      flushTurn = null;
    }
    if (outbox.length === 0) return;
    const text = outbox.length === 1 ? outbox[0] : outbox.join("");
    outbox = [];
    stdoutWrite(text);
  };
  const onFlushTurn = () => {
    flushTurn = null;
    flushLines();
  };
  flushOnExit = flushLines;
  const writeLine = (line) => {
    if (typeof line !== "string" || line.includes("\n")) throw new TypeError("a bridge line is one string without a newline");
    if (flushTurn === null) flushTurn = setImmediate(onFlushTurn);
    outbox.push(line + "\n");
  };
  // process.py starts Node with --expose-gc for one collection after start-up (below);
  // the global goes at once (it is not configurable, so it cannot be deleted: cleared).
  const collect = typeof globalThis.gc === "function" ? globalThis.gc : null;
  globalThis.gc = undefined;
  capMemory(args.memoryMb);
  shimBinding();
  const { loadPyodide } = await import(path.join(args.pyodide, "pyodide.mjs"));
  const common = {
    indexURL: args.pyodide + path.sep,
    stdout: (line) => process.stderr.write(`[python] ${line}\n`),
    stderr: (line) => process.stderr.write(`[python] ${line}\n`),
    env: { HOME: "/home/pyodide" },
    stdin: () => null,  // Python never reads fd 0: the bridge owns it
  };

  if (args.makeSnapshot) {
    const pyodide = await loadPyodide({ ...common, _makeSnapshot: true });
    installBootstrap(pyodide, args.bootstrap);
    const snapshot = pyodide.makeMemorySnapshot();
    const tmp = `${args.makeSnapshot}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, snapshot);
    fs.renameSync(tmp, args.makeSnapshot);
    process.stderr.write(`flow sandbox: snapshot written (${snapshot.length} bytes)\n`);
    return;
  }

  let pyodide;
  let fromSnapshot = false;
  const jsglobals = Object.freeze(Object.create(null));
  if (args.snapshot) {
    // Pyodide keeps its options for the process's life: the 30 MiB snapshot is handed over
    // through a thenable that lets go of it once read, so the bytes can be freed after the
    // restore (they are copied into the wasm heap).
    let bytes = fs.readFileSync(args.snapshot);
    const removeSparseSet = sparseHeapRestore(bytes.buffer);
    const snapshot = { then(resolve) { const taken = bytes; bytes = null; resolve(taken); } };
    try {
      pyodide = await loadPyodide({ ...common, jsglobals, _loadSnapshot: snapshot });
    } finally {
      removeSparseSet();
    }
    fromSnapshot = true;
  } else {
    pyodide = await loadPyodide({ ...common, jsglobals });
    installBootstrap(pyodide, args.bootstrap);
  }

  const signalClock = pyodide._module.__Py_emscripten_signal_clock;  // the tick counter's address
  const checkEvery = Number.isInteger(signalClock) && signalClock > 0 && signalClock % 4 === 0
    ? (ticks) => { pyodide._module.HEAP32[signalClock >> 2] = ticks; }
    : () => { /* a Pyodide that does not export it: CPython's own 50 ticks */ };
  const watchdog = startWatchdog(checkEvery);
  closeDoors();
  // setInterruptBuffer turns CPython's polling on and stores the buffer in a property
  // of Pyodide's Module, which then becomes the watchdog's getter (see `startWatchdog`).
  pyodide.setInterruptBuffer(watchdog.signal);
  Object.defineProperty(pyodide._module, "Py_EmscriptenSignalBuffer",
                        { get: watchdog.watch, set() { /* the buffer is the watchdog's */ }, configurable: false });

  // Python's event loop queues its ready callbacks itself and asks for one turn at a
  // time (flowbox/loop.py): `wake` runs them all in one setImmediate.
  let runReady = null;
  const io = Object.freeze({
    write: writeLine,
    flush: flushLines,
    wake: () => { setImmediate(runReady); },
    arm: (ms) => watchdog.arm(ms),
    disarm: () => watchdog.disarm(),
    // The live size of the wasm heap, read where Emscripten keeps it (Module.HEAPU8 is
    // replaced on every growth): right after a snapshot restore nothing has grown yet.
    memory: () => pyodide._module.HEAPU8.buffer.byteLength,
    snapshot: fromSnapshot,
    pyodide: pyodide.version,
  });
  // One full collection now that start-up is over: the snapshot's bytes, the wasm binary's
  // file buffer and start-up garbage go back to the OS before the first run.
  if (collect) collect();
  const bridge = pyodide.pyimport("flowbox.bridge");
  runReady = bridge.run_ready;
  const onLines = bridge.attach(io);
  const onWatchdog = bridge.on_watchdog;
  watchdog.onTimeout = () => {
    try { onWatchdog(); } catch (err) { process.stderr.write(`flow sandbox: watchdog: ${err && err.message || err}\n`); }
  };
  // The host closing the bridge ends the process.
  input.listen(lineReader((text) => onLines(text)), () => process.exit(0));
}

// The bootstrap turns a watchdog interrupt into an ordinary error inside the task of the run
// it is for (and raises none in other code); one that still escapes ends the process, and
// the host replaces it.
process.on("uncaughtException", (err) => fail(`uncaught: ${err && err.stack || err}`));
process.on("unhandledRejection", (err) => fail(`unhandled rejection: ${err && err.stack || err}`));
main().catch((err) => fail(`start-up failed: ${err && err.stack || err}`));

// The Node.js side of a Flow sandbox (docs/sandbox.md).
//
// Loads the pinned Pyodide, closes every door listed in the sandbox notes before any
// compiled code runs, and then only moves JSON lines: stdin -> Python `on_line`,
// Python `io.write` -> stdout. stderr is for diagnostics only.
//
//   node [flags] runner.mjs --pyodide DIR --bootstrap DIR [--snapshot FILE] [--memory-mb N]
//   node runner.mjs --pyodide DIR --bootstrap DIR --make-snapshot FILE     (trusted builder)

import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import module from "node:module";
import childProcess from "node:child_process";
import net from "node:net";
import tls from "node:tls";
import workerThreads, { Worker } from "node:worker_threads";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

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

function fail(message) {
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
  // worker_threads too (the watchdog is already running): a new Worker would get fresh,
  // unstubbed copies of every module above.
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

// --- the watchdog (watchdog.mjs): deadlines that hold even while Python is busy --------------
const LAYOUT = { INTERRUPT: 0, STATE: 1, ASKING: -1, TAKEN: -2, FIRING: -3, FIRED: -4 };

function startWatchdog() {
  const control = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
  const worker = new Worker(path.join(here, "watchdog.mjs"), { workerData: { buffer: control.buffer, layout: LAYOUT } });
  worker.unref();
  let generation = 0;
  const dog = {
    interrupt: control,  // Pyodide polls element 0 (INTERRUPT)
    onTimeout: () => {},
    arm(ms) {
      reset();
      generation = generation % 0x7fffffff + 1;
      Atomics.store(control, LAYOUT.STATE, generation);
      worker.postMessage({ arm: generation, ms: Number(ms) });
    },
    disarm() {
      reset();
      worker.postMessage({});
    },
  };
  // Back to idle. A worker between deciding to interrupt and writing the buffer (FIRING,
  // a few instructions) is waited out, so that the clear below is final: without it a
  // deadline passing while a run ends would interrupt whatever Python runs next.
  function reset() {
    for (;;) {
      const state = Atomics.load(control, LAYOUT.STATE);
      if (state === LAYOUT.FIRING) continue;
      if (Atomics.compareExchange(control, LAYOUT.STATE, state, 0) === state) break;
    }
    Atomics.store(control, LAYOUT.INTERRUPT, 0);
  }
  // This handler runs only when the main thread is idle, i.e. Python is not running and
  // the run is awaiting something: take the deadline from the worker and cancel the run
  // the ordinary way. A KeyboardInterrupt left pending instead would go off in whatever
  // Python code runs next (the next stdin line), outside the run.
  worker.on("message", ({ ask }) => {
    if (ask !== generation) return;
    if (Atomics.compareExchange(control, LAYOUT.STATE, LAYOUT.ASKING, LAYOUT.TAKEN) !== LAYOUT.ASKING) return;
    Atomics.notify(control, LAYOUT.STATE);
    dog.onTimeout();
  });
  return dog;
}

async function main() {
  // Node creates the stdio streams lazily, through `net` when they are pipes: make them
  // now, before `net` is stubbed out.
  const stdio = [process.stdin, process.stdout, process.stderr];
  if (stdio.some((s) => !s)) fail("stdio is missing");
  // Only the bridge writes to stdout. Everything else that would (console.log, Pyodide's
  // default stdout after a `setStdout()`, Emscripten's `system` with stdio "inherit")
  // goes to stderr, so no code in the sandbox can put a non-protocol line on the stream.
  const stdoutWrite = process.stdout.write.bind(process.stdout);
  process.stdout.write = process.stderr.write.bind(process.stderr);
  // Pyodide's own Node writer (what `pyodide.setStdout()` restores) bypasses the stream
  // with fs.writeSync(1, ...): send every fd-1 write of the fs module to fd 2 as well.
  // (The stream above writes through its pipe handle, not through these functions.)
  for (const name of ["write", "writeSync", "writev", "writevSync"]) {
    const original = fs[name];
    fs[name] = function (fd, ...rest) { return original.call(this, fd === 1 ? 2 : fd, ...rest); };
  }
  module.syncBuiltinESMExports();
  const writeLine = (line) => {
    if (typeof line !== "string" || line.includes("\n")) throw new TypeError("a bridge line is one string without a newline");
    stdoutWrite(line + "\n");
  };
  // process.py starts Node with --expose-gc for one collection after start-up (below);
  // the global goes at once (it is not configurable, so it cannot be deleted: cleared).
  const collect = typeof globalThis.gc === "function" ? globalThis.gc : null;
  globalThis.gc = undefined;
  const args = parseArgs(process.argv.slice(2));
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
    const snapshot = { then(resolve) { const taken = bytes; bytes = null; resolve(taken); } };
    pyodide = await loadPyodide({ ...common, jsglobals, _loadSnapshot: snapshot });
    fromSnapshot = true;
  } else {
    pyodide = await loadPyodide({ ...common, jsglobals });
    installBootstrap(pyodide, args.bootstrap);
  }

  const watchdog = startWatchdog();
  closeDoors();
  pyodide.setInterruptBuffer(watchdog.interrupt);

  const io = Object.freeze({
    write: writeLine,
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
  const onLine = bridge.attach(io);
  const onWatchdog = bridge.on_watchdog;
  watchdog.onTimeout = () => {
    try { onWatchdog(); } catch (err) { process.stderr.write(`flow sandbox: watchdog: ${err && err.message || err}\n`); }
  };
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", (line) => { if (line) onLine(line); });
  lines.on("close", () => process.exit(0));  // the host closed the bridge: shut down
}

// The bootstrap turns a watchdog interrupt into an ordinary error inside each task; one
// that still escapes (raised between tasks) ends the process, and the host replaces it.
process.on("uncaughtException", (err) => fail(`uncaught: ${err && err.stack || err}`));
process.on("unhandledRejection", (err) => fail(`unhandled rejection: ${err && err.stack || err}`));
main().catch((err) => fail(`start-up failed: ${err && err.stack || err}`));

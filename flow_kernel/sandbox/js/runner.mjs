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
import { Worker } from "node:worker_threads";
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
let heap = null;
function capMemory(megabytes) {
  const cap = megabytes * 1024 * 1024;
  const grow = WebAssembly.Memory.prototype.grow;
  WebAssembly.Memory.prototype.grow = function (pages) {
    heap = this;
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
  for (const [name, mod] of [["child_process", childProcess], ["net", net], ["tls", tls]]) {
    for (const key of Object.keys(mod)) {
      if (typeof mod[key] === "function") {
        try { mod[key] = blocked(`${name}.${key}`); } catch { /* a getter-only export stays, the permission model covers it */ }
      }
    }
  }
  module.syncBuiltinESMExports();
  delete globalThis.require;
}

async function main() {
  // Node creates the stdio streams lazily, through `net` when they are pipes: make them
  // now, before `net` is stubbed out.
  const stdio = [process.stdin, process.stdout, process.stderr];
  if (stdio.some((s) => !s)) fail("stdio is missing");
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
    pyodide = await loadPyodide({ ...common, jsglobals, _loadSnapshot: fs.readFileSync(args.snapshot) });
    fromSnapshot = true;
  } else {
    pyodide = await loadPyodide({ ...common, jsglobals });
    installBootstrap(pyodide, args.bootstrap);
  }

  // The watchdog: a worker thread that sets the interrupt buffer when a deadline passes,
  // so a busy loop in Python gets KeyboardInterrupt even though this thread is blocked.
  const signal = new Int32Array(new SharedArrayBuffer(4));
  const watchdog = new Worker(path.join(here, "watchdog.mjs"), { workerData: signal.buffer });
  watchdog.unref();
  closeDoors();
  pyodide.setInterruptBuffer(signal);

  const io = {
    write: (line) => { process.stdout.write(line + "\n"); },
    arm: (ms) => { watchdog.postMessage(ms); },
    disarm: () => { watchdog.postMessage(-1); Atomics.store(signal, 0, 0); },
    memory: () => (heap ? heap.buffer.byteLength : 0),
    snapshot: fromSnapshot,
  };
  const bridge = pyodide.pyimport("flowbox.bridge");
  const onLine = bridge.attach(io);
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", (line) => { if (line) onLine(line); });
  lines.on("close", () => process.exit(0));  // the host closed the bridge: shut down
}

// The bootstrap turns a watchdog interrupt into an ordinary error inside each task; one
// that still escapes (raised between tasks) ends the process, and the host replaces it.
process.on("uncaughtException", (err) => fail(`uncaught: ${err && err.stack || err}`));
process.on("unhandledRejection", (err) => fail(`unhandled rejection: ${err && err.stack || err}`));
main().catch((err) => fail(`start-up failed: ${err && err.stack || err}`));

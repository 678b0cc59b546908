// Runs Python in Pyodide under Node for cellar.rerender.pyodide_host: the same runtime and the same
// cellar wheel as the browser tab, driven over a line protocol on stdin / stdout.
//
//   node pyodide_host.mjs '{"runtime": DIR, "wheels": [PATH...], "packages": [NAME...],
//                           "files": {PYODIDE_PATH: HOST_PATH...}}'
//
// `files` are copied into Pyodide's file system before any Python of the caller's runs.
//
// Each request is one JSON line {"id", "code"}; each reply one line starting with MARK:
// {"id", "ok": true, "value": <JSON text of the code's final expression>} or
// {"id", "ok": false, "error": <Python traceback>}. Python's own output goes to stderr, so
// nothing a notebook prints can be mistaken for a reply. {"id", "read": PATH} replies with the
// bytes of a file in Pyodide's file system in base64 (coded here in Node: in Python it is slow).
//
// Python runs on this thread, so nothing here can interrupt it from outside while it runs. Python
// arms a deadline with `js.cellarArmDeadline(seconds)` (0 disarms), and the interpreter's own
// periodic check of its interrupt buffer raises KeyboardInterrupt once the deadline has passed.
// A cell stuck inside one long C call is out of its reach; cellar.rerender.pyodide_host's
// per-request timeout kills the process for that.

import { constants as fsConstants } from "node:fs";
import { readFile } from "node:fs/promises";
import { constants as osConstants } from "node:os";
import { dirname, resolve } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const MARK = "\x1ecellar-host ";
// One string hash seed for every interpreter, here and in the browser tab (web/worker.js): with
// Python's default, a random seed per process, sets of strings iterate in another order in each
// worker, and a notebook that plots or prints one is not the same to the byte twice.
const HASH_SEED = { PYTHONHASHSEED: "0" };
const reply = (message) => process.stdout.write(MARK + JSON.stringify(message) + "\n");
const options = JSON.parse(process.argv[2]);

// Emscripten's NODEFS reads the file flags through process.binding("constants"), which Node's
// permission model refuses; the same constants are public.
const binding = process.binding;
process.binding = (name) => (name === "constants" ? { fs: fsConstants, os: osConstants } : binding.call(process, name));

const pyodideModule = await import(pathToFileURL(resolve(options.runtime, "pyodide.mjs")).href);
const pyodide = await pyodideModule.loadPyodide({
  indexURL: resolve(options.runtime) + "/",
  env: HASH_SEED,
  stdout: (line) => process.stderr.write(line + "\n"),
  stderr: (line) => process.stderr.write(line + "\n"),
});
// Code a notebook left running (a promise nobody awaits, a callback that throws) must not end the
// process in the middle of a later notebook, which would then be blamed for it: report, go on;
// unless Pyodide itself has failed for good (a system call the permission model refused, say),
// when nothing more can run here: exit, and the host starts a fresh worker.
const survive = (what) => (error) => {
  process.stderr.write(`${what}: ${error}\n`);
  try {
    pyodide.runPython("0");
  } catch {
    process.exit(70);
  }
};
process.on("unhandledRejection", survive("unhandled rejection"));
process.on("uncaughtException", survive("uncaught exception"));
// The wheels by path in the same call as the runtime's packages, as the tab does, and half a
// second sooner than micropip: loadPackage reads no wheel's requirements, so nothing is looked
// up online. micropip is loaded, not imported: it is there for a notebook that imports it.
// loadPackage reports a package it cannot load without failing: fail here.
const failures = [];
await pyodide.loadPackage(["micropip", ...options.packages, ...options.wheels],
  { messageCallback: () => {}, errorCallback: (message) => failures.push(message) });
if (failures.length) {
  reply({ id: 0, ok: false, error: failures.join("\n") });
  process.exit(1);
}
for (const [target, source] of Object.entries(options.files)) {
  pyodide.FS.mkdirTree(dirname(target));
  pyodide.FS.writeFile(target, await readFile(source));
}

// The deadline is checked on this thread, by the interpreter itself: CPython under Emscripten reads
// `interruptBuffer[0]` every few dozen bytecodes (and writes 0 back), and this "buffer" answers
// SIGINT (2) once the deadline has passed. No watchdog thread is needed, so the process runs
// without Node's --allow-worker.
let deadline = 0; // Date.now() at which to interrupt (0: none)
const interruptBuffer = {
  get 0() {
    if (deadline === 0 || Date.now() < deadline) return 0;
    deadline = 0;
    return 2;
  },
  set 0(_) {},
};
pyodide.setInterruptBuffer(interruptBuffer);
globalThis.cellarArmDeadline = (seconds) => {
  deadline = seconds > 0 ? Date.now() + seconds * 1000 : 0;
};

const run = pyodide.runPython(`
import json
from pyodide.code import eval_code_async

async def cellar_host_run(code):
    return json.dumps(await eval_code_async(code, {"__name__": "__main__"}))

cellar_host_run
`);
reply({ id: 0, ok: true, value: JSON.stringify({ python: pyodide.version }) });

async function answer(request) {
  if ("read" in request) {
    return Buffer.from(pyodide.FS.readFile(request.read)).toString("base64");
  }
  return await run(request.code);
}

// A failed request's error text: Python's traceback, or for a file system error (Emscripten's
// carry only an errno) the file and the errno's name.
function describe(error, request) {
  if (error.errno === undefined) return String(error.message ?? error);
  const name = Object.keys(pyodide.ERRNO_CODES).find((code) => pyodide.ERRNO_CODES[code] === error.errno);
  return `${request.read}: ${name ?? error.errno}`;
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const request = JSON.parse(line);
  try {
    reply({ id: request.id, ok: true, value: await answer(request) });
  } catch (error) {
    reply({ id: request.id, ok: false, error: describe(error, request) });
  }
}
// stdin closed: the host is done, or gone. Whatever a notebook left open (a socket, a timer) must
// not keep this process alive.
process.exit(0);

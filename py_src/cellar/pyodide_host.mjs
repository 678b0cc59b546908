// Runs Python in Pyodide under Node for cellar.pyodide_host: the same runtime and the same
// cellar wheel as the browser tab, driven over a line protocol on stdin / stdout.
//
//   node pyodide_host.mjs '{"runtime": DIR, "wheels": [PATH...], "packages": [NAME...]}'
//
// Each request is one JSON line {"id", "code"}; each reply one line starting with MARK:
// {"id", "ok": true, "value": <JSON text of the code's final expression>} or
// {"id", "ok": false, "error": <Python traceback>}. Python's own output goes to stderr, so
// nothing a notebook prints can be mistaken for a reply.
//
// Python runs on this thread, so nothing here can interrupt it while it runs. A watchdog thread
// can: Python arms it with `js.cellarArmDeadline(seconds)` (0 disarms), and when the deadline
// passes the watchdog writes SIGINT into Pyodide's interrupt buffer, which raises
// KeyboardInterrupt at the next bytecode check. A cell stuck inside one long C call is out of
// its reach; cellar.pyodide_host's per-request timeout kills the process for that.

import { readFile } from "node:fs/promises";
import { basename, resolve } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";

const MARK = "\x1ecellar-host ";
const reply = (message) => process.stdout.write(MARK + JSON.stringify(message) + "\n");
const options = JSON.parse(process.argv[2]);

const pyodideModule = await import(pathToFileURL(resolve(options.runtime, "pyodide.mjs")).href);
const pyodide = await pyodideModule.loadPyodide({
  indexURL: resolve(options.runtime) + "/",
  stdout: (line) => process.stderr.write(line + "\n"),
  stderr: (line) => process.stderr.write(line + "\n"),
});
await pyodide.loadPackage(["micropip", ...options.packages], { messageCallback: () => {} });
if (options.wheels.length) {
  // micropip installs from emfs: URLs in Node; deps=False, as in the tab, so nothing is looked
  // up online.
  pyodide.FS.mkdirTree("/tmp/wheels");
  const urls = [];
  for (const wheel of options.wheels) {
    const target = `/tmp/wheels/${basename(wheel)}`;
    pyodide.FS.writeFile(target, await readFile(wheel));
    urls.push(`emfs:${target}`);
  }
  await pyodide.pyimport("micropip").install.callKwargs(urls, { deps: false });
}

// interrupt[0]: Pyodide's interrupt buffer; deadline[0]: Date.now() at which to trip it (0: none);
// wake[0]: bumped to wake the watchdog when the deadline changes.
const interrupt = new Int32Array(new SharedArrayBuffer(4));
const deadline = new Float64Array(new SharedArrayBuffer(8));
const wake = new Int32Array(new SharedArrayBuffer(4));
pyodide.setInterruptBuffer(interrupt);
const watchdog = new Worker(`
  const { workerData: { interrupt, deadline, wake } } = require("node:worker_threads");
  for (;;) {
    const seen = Atomics.load(wake, 0);  // read first: a later change makes the wait return at once
    const due = deadline[0];
    if (due > 0 && Date.now() >= due) { deadline[0] = 0; Atomics.store(interrupt, 0, 2); continue; }
    Atomics.wait(wake, 0, seen, due > 0 ? Math.max(1, due - Date.now()) : 60000);
  }`, { eval: true, workerData: { interrupt, deadline, wake } });
watchdog.unref();
globalThis.cellarArmDeadline = (seconds) => {
  Atomics.store(interrupt, 0, 0);
  deadline[0] = seconds > 0 ? Date.now() + seconds * 1000 : 0;
  Atomics.add(wake, 0, 1);
  Atomics.notify(wake, 0);
};

const run = pyodide.runPython(`
import json
from pyodide.code import eval_code_async

async def cellar_host_run(code):
    return json.dumps(await eval_code_async(code, {"__name__": "__main__"}))

cellar_host_run
`);
reply({ id: 0, ok: true, value: JSON.stringify({ python: pyodide.version }) });

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const request = JSON.parse(line);
  try {
    reply({ id: request.id, ok: true, value: await run(request.code) });
  } catch (error) {
    reply({ id: request.id, ok: false, error: String(error.message ?? error) });
  }
}

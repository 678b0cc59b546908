// The Python side of every Cellar page: a module Web Worker that boots Pyodide, installs the
// cellar wheel with micropip and then answers calls into `cellar.*` modules. The page's thread
// never runs Python, so it never freezes.
//
// Messages to the page:   {type: "stage", stage, t}          boot progress (t: ms since start)
//                         {type: "ready", python, cellar, t}
//                         {type: "failed", error}
//                         {type: "result", id, ok, value | error}
// Messages from the page: {type: "call", id, module, name, args}

import { loadPyodide } from "./pyodide/pyodide.mjs";

const started = performance.now();
const elapsed = () => Math.round(performance.now() - started);
const stage = (name) => postMessage({ type: "stage", stage: name, t: elapsed() });

// Calls cross the boundary as JSON: plain data in, plain data out, and Python exceptions come
// back as {type, message} instead of opaque proxies.
const BRIDGE = `
import importlib, json

def cellar_call(module, name, args_json):
    if module != "cellar" and not module.startswith("cellar."):
        raise ValueError(f"only cellar modules can be called, not {module!r}")
    function = getattr(importlib.import_module(module), name)
    try:
        return json.dumps({"ok": True, "value": function(*json.loads(args_json))})
    except Exception as error:
        return json.dumps({"ok": False, "error": {"type": type(error).__name__, "message": str(error)}})
`;

async function boot() {
  stage("runtime");
  const build = await (await fetch(new URL("./build.json", import.meta.url))).json();
  const pyodide = await loadPyodide({ indexURL: new URL("./pyodide/", import.meta.url).href });
  stage("packages");
  await pyodide.loadPackage(["micropip", "numpy"], { messageCallback: () => {} });
  stage("cellar");
  const micropip = pyodide.pyimport("micropip");
  // One call with every local wheel and deps=False: micropip would look a missing dependency
  // up online, and the site must work offline.
  const wheels = build.wheels.map((path) => new URL(`./${path}`, import.meta.url).href);
  await micropip.install.callKwargs(wheels, { deps: false });
  pyodide.runPython(BRIDGE);
  const versions = pyodide.runPython(
    "import sys, cellar; (sys.version.split()[0], cellar.__version__)").toJs();
  return { pyodide, python: versions[0], cellar: versions[1] };
}

const booting = boot();
booting.then(
  ({ python, cellar }) => postMessage({ type: "ready", python, cellar, t: elapsed() }),
  (error) => postMessage({ type: "failed", error: String(error && error.message || error) }),
);

onmessage = async ({ data }) => {
  if (data.type !== "call") return;
  try {
    const { pyodide } = await booting;
    const call = pyodide.globals.get("cellar_call");
    const reply = JSON.parse(call(data.module, data.name, JSON.stringify(data.args ?? [])));
    call.destroy();
    postMessage({ type: "result", id: data.id, ...reply });
  } catch (error) {
    postMessage({ type: "result", id: data.id, ok: false,
                  error: { type: "WorkerError", message: String(error && error.message || error) } });
  }
};

// The Python side of every Cellar page: a module Web Worker that boots Pyodide, installs the
// cellar wheel and then answers calls into `cellar.*` modules. The page's thread
// never runs Python, so it never freezes.
//
// Messages to the page:   {type: "stage", stage, t}          boot progress (t: ms since start)
//                         {type: "ready", python, cellar, t}
//                         {type: "failed", error}
//                         {type: "result", id, ok, value | error}
//                         {type: "deadline", due}      Python armed a time limit (Date.now() ms)
// Messages from the page: {type: "interrupts", buffer, deadline}  SharedArrayBuffer-backed: an
//                                                           Int32Array the page writes 2 (SIGINT) into
//                                                           to stop Python, and a Float64Array with
//                                                           the armed deadline (0: none)
//                         {type: "call", id, module, name, args, files?, packages?, seal?}
//                         files: {path in Python's file system: URL or bytes}, fetched once per worker
//                         before the call (e.g. a model that a function loads from disk);
//                         packages: Pyodide packages (by name, from the site's lock) to load
//                         first, so heavy ones (pandas, matplotlib) load only for what needs them
//                         {type: "prefetch", files}  the same files, downloaded now (while the
//                                                   runtime boots) and written once it is up
//
// Two modes, one boot. The page's worker (`new Worker(url, {type: "module"})`) serves every
// Python call of the page for as long as the page lives. A re-render worker (the same module
// started with `{name: "rerender"}`: cellar-client.js `startCellar(url, {name: "rerender",
// once: true})`) runs one archive notebook for the viewer and is terminated after it: a fresh
// interpreter per re-render, so nothing a notebook does outlives the run or touches the page's
// own Python. It takes its files as bytes from the page, never as URLs, and a call with
// `seal: true` closes its last way out before Python runs it (see `lockDown`).

import { loadPyodide } from "./pyodide/pyodide.mjs";

const RERENDER = self.name === "rerender";

// Delete `names` from `root` and everything on its prototype chain (a WebIDL operation or
// interface object may sit on the global itself or on one of its prototypes).
function remove(root, names) {
  for (let scope = root; scope; scope = Object.getPrototypeOf(scope)) {
    for (const name of names) {
      if (Object.hasOwn(scope, name)) delete scope[name];
    }
  }
}

// Python here runs learners' code (and, in re-render mode, an archive notebook), and Pyodide's
// `js` module hands it this worker's globals. Origin storage goes before any of it runs: the
// offline copy (CacheStorage) holds what the pages trust as the site's own files, and IndexedDB,
// the origin private file system (navigator.storage) and storage buckets (each with caches,
// IndexedDB and a file system of its own) are origin storage too. None is used here. (The page's
// policy keeps the worker's fetches on the site and lets it start no worker from a blob: or
// data: URL, where these would come back.)
remove(self, ["caches", "indexedDB"]);
remove(self.navigator, ["storage", "storageBuckets"]);

// The re-render worker keeps nothing a notebook could use to reach out. What the browser
// enforces is the page's Content-Security-Policy (inherited by the worker: connect-src, worker-src
// and script-src 'self', no eval) and the worker's own lifetime (terminated after the run); these
// deletions are a second layer, made before Python starts: every request API, every channel to
// other contexts of the origin (Web Locks among them), origin storage, and nested workers. The
// page's channel back (postMessage) is kept, privately: Python finds no `postMessage` to forge a
// result with.
const WAYS_OUT = [
  "XMLHttpRequest", "WebSocket", "WebSocketStream", "WebTransport", "EventSource", "importScripts",
  "BroadcastChannel", "Worker", "SharedWorker", "FontFace", "fonts",
  "RTCPeerConnection", "webkitRTCPeerConnection", "webkitRequestFileSystem", "webkitRequestFileSystemSync",
  "webkitResolveLocalFileSystemURL", "webkitResolveLocalFileSystemSyncURL", "postMessage",
];
const post = self.postMessage.bind(self);
let siteFetch = null;  // the boot's loader (re-render mode): the site's runtime and wheels only
let sealed = false;
if (RERENDER) {
  remove(self.navigator, ["sendBeacon", "serviceWorker", "locks"]);
  remove(self, WAYS_OUT);
  // In a module worker importScripts always throws a TypeError; Pyodide tells a worker from
  // other hosts by its presence (and then falls back to import()), so a stub that refuses stays.
  self.importScripts = () => { throw new TypeError("importScripts is not available in the re-render worker"); };
  // Pyodide fetches its runtime, packages and the wheels by the global name `fetch` while it
  // boots (no notebook code runs then). It gets a loader that reaches only those files of the
  // site, and that is gone (deleted, and refusing if kept) before the notebook's call runs.
  const nativeFetch = self.fetch.bind(self);
  const site = new URL("./", import.meta.url);
  const allowed = ["pyodide/", "wheels/"].map((folder) => new URL(folder, site).href);
  siteFetch = (resource, init) => {
    const url = new URL(resource instanceof Request ? resource.url : resource, site);
    if (sealed || !(url.href === new URL("build.json", site).href || allowed.some((prefix) => url.href.startsWith(prefix)))) {
      return Promise.reject(new TypeError(`the re-render worker fetches nothing but the site's runtime (${url.href})`));
    }
    return nativeFetch(url.href, init);
  };
  remove(self, ["fetch"]);
  self.fetch = siteFetch;
}

// The last way out of a re-render worker, once its runtime and packages are loaded and its files
// written: the boot's loader. After this the worker can only answer the page.
function lockDown() {
  sealed = true;
  remove(self, ["fetch"]);
}

const started = performance.now();
const elapsed = () => Math.round(performance.now() - started);
const stage = (name) => post({ type: "stage", stage: name, t: elapsed() });

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
    # KeyboardInterrupt is the page's time limit arriving through the interrupt buffer: Python
    # stays usable, so it comes back as an error like any other.
    except (Exception, KeyboardInterrupt) as error:
        return json.dumps({"ok": False, "error": {"type": type(error).__name__, "message": str(error)}})
`;

async function boot() {
  stage("runtime");
  const build = await (await fetch(new URL("./build.json", import.meta.url))).json();
  // The string hash seed that `cellar rerender`'s workers use (cellar/pyodide_host.mjs): the
  // same set order, so a notebook re-rendered here comes out as it does there, to the byte.
  const pyodide = await loadPyodide({ indexURL: new URL("./pyodide/", import.meta.url).href,
                                      env: { PYTHONHASHSEED: "0" } });
  stage("packages");
  // NumPy and the local wheels in one call, so that they download side by side (in turn, the
  // wheels' 8 MB waited for NumPy's install). The wheels go by URL: loadPackage installs them as
  // they are, resolving nothing, so the site works offline, and without loading micropip (half a
  // second of the boot). A feature that needs micropip loads it itself.
  const wheels = build.wheels.map((path) => new URL(`./${path}`, import.meta.url).href);
  await pyodide.loadPackage(["numpy", ...wheels], { messageCallback: () => {} });
  pyodide.runPython(BRIDGE);
  const versions = pyodide.runPython(
    "import sys, cellar; (sys.version.split()[0], cellar.__version__)").toJs();
  return { pyodide, python: versions[0], cellar: versions[1] };
}

const booting = boot();
booting.then(
  ({ python, cellar }) => post({ type: "ready", python, cellar, t: elapsed() }),
  (error) => post({ type: "failed", error: String(error && error.message || error) }),
);

let interrupts = null;
let deadline = null;

// The sandbox's watchdog (cellar.rerender.sandbox `_arm`): Python arms a limit of `seconds` (0 disarms).
// Python runs on this thread, so the page's thread keeps the time: it trips the interrupt
// buffer when the deadline in shared memory is due and has not been disarmed meanwhile.
function cellarArmDeadline(seconds) {
  Atomics.store(interrupts, 0, 0);
  deadline[0] = seconds > 0 ? Date.now() + seconds * 1000 : 0;
  if (deadline[0]) post({ type: "deadline", due: deadline[0] });
}

// Files land in Python's (in-memory) file system the first time a call needs them. The download
// does not wait for the runtime: a page that names its files early (prefetch) overlaps the two.
// A file given as bytes (an ArrayBuffer or typed array: how the page feeds a re-render worker,
// which fetches nothing of the archive) is written as it is.
const fetched = new Map();
function provide(files) {
  return Promise.all(Object.entries(files).map(([path, url]) => {
    if (!fetched.has(path)) {
      const download = (async () => {
        if (typeof url !== "string") return new Uint8Array(url.buffer ?? url);
        const response = await fetch(new URL(url, self.location.href));
        if (!response.ok) throw new Error(`${url}: ${response.status} ${response.statusText}`);
        return new Uint8Array(await response.arrayBuffer());
      })();
      fetched.set(path, Promise.all([download, booting]).then(([bytes, { pyodide }]) => {
        pyodide.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")) || "/");
        pyodide.FS.writeFile(path, bytes);
      }));
      fetched.get(path).catch(() => fetched.delete(path));  // a later call may try again
    }
    return fetched.get(path);
  }));
}

onmessage = async ({ data }) => {
  if (data.type === "interrupts") {
    interrupts = data.buffer;
    deadline = data.deadline;
    globalThis.cellarArmDeadline = cellarArmDeadline;
    booting.then(({ pyodide }) => pyodide.setInterruptBuffer(interrupts), () => {});
    return;
  }
  if (data.type === "prefetch") {
    provide(data.files).catch(() => {});  // a call that needs them reports the failure
    return;
  }
  if (data.type !== "call") return;
  try {
    const { pyodide } = await booting;
    if (data.files) await provide(data.files);
    if (data.packages) await pyodide.loadPackage(data.packages, { messageCallback: () => {} });
    if (data.seal) lockDown();
    // A stop request that came after the last call had already finished must not hit this one.
    if (interrupts) interrupts[0] = 0;
    const call = pyodide.globals.get("cellar_call");
    const reply = JSON.parse(call(data.module, data.name, JSON.stringify(data.args ?? [])));
    call.destroy();
    post({ type: "result", id: data.id, ...reply });
  } catch (error) {
    post({ type: "result", id: data.id, ok: false,
           error: { type: "WorkerError", message: String(error && error.message || error) } });
  }
};

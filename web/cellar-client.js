// window.cellar: the page's handle on the Python worker. Later pages extend it.
//
//   await cellar.ready            -> {python, cellar, timeline}; rejects when booting fails.
//                                    A new promise after a restart (see callWith).
//   cellar.timeline               -> [{stage, t}] boot stages with ms since the worker started
//   cellar.onStage(callback)      -> called with ({stage, t}) for every boot stage, of every boot
//   cellar.onRestart(callback)    -> called with ({reason}) when the worker is replaced
//   await cellar.call(module, name, ...args)   any function of a cellar.* module, JSON in and out
//   await cellar.callWith({timeout, files, packages}, module, name, ...args)
//                                    the same with a time limit in ms (the call is stopped after it
//                                    and rejects with error.stopped = true, and error.partial =
//                                    the answer if Python still gave one), files to place in
//                                    Python's file system first ({path: url}) and Pyodide packages
//                                    to load first ([name])
//   cellar.prefetch(files)        -> start downloading files ({path: url}) now, while Python boots;
//                                    a later callWith({files}) naming them waits for them only
//   await cellar.revision(text)   -> SHA-256 hex computed by cellar.ingest.provenance in Python
//
// Stopping: where the page is cross-origin isolated, the worker shares an interrupt buffer and
// Python gets a KeyboardInterrupt (cheap: the interpreter and its packages stay loaded). If that
// brings no answer within GRACE_MS, or without isolation, the worker is terminated and a fresh
// one boots; calls still waiting on the old one reject. Python can also arm its own time limits
// (a notebook cell in cellar.rerender.sandbox): the worker shares the deadline, and this thread trips the
// interrupt buffer when it is due.

// An interrupted loop answers within a few hundred ms on a quiet machine; on two busy cores the
// worker was seen to need more than 1.5 s, and then more than 3 s (the browser tests restarted
// it, losing what it had printed and the packages it had loaded). A restart costs the learner
// all of that, and the wait only a call that ignores the interrupt pays: it gets 10 s.
const GRACE_MS = 10000;
// A trip that Python takes but never raises (seen about once in five runs of an endless loop in
// the browser tests: the call ran on until the restart) is tripped once more before that.
const RETRIP_MS = 4000;
const SIGINT = 2;

//
// `startCellar(url, {name: "rerender", once: true})` starts the re-render worker (worker.js):
// one run of an archive notebook, files given as bytes (`files: {path: Uint8Array}`) and
// `seal: true` on the call that runs it; `terminate()` ends it. With `once` a stopped call ends
// the worker instead of booting a fresh one.

export function startCellar(workerUrl = new URL("./worker.js", import.meta.url), { name = null, once = false } = {}) {
  const listeners = { stage: [], restart: [] };
  const timeline = [];
  let nextId = 1;
  let worker, pending, ready, interrupts, deadline, watchdog;
  let ended = false;

  function boot() {
    worker = new Worker(workerUrl, { type: "module", ...(name ? { name } : {}) });
    pending = new Map();
    timeline.length = 0;
    let resolveReady, rejectReady;
    ready = new Promise((resolve, reject) => { resolveReady = resolve; rejectReady = reject; });
    ready.catch(() => {});  // the page reports a failed boot when it awaits `ready`
    if (self.crossOriginIsolated) {
      interrupts = new Int32Array(new SharedArrayBuffer(4));
      deadline = new Float64Array(new SharedArrayBuffer(8));
      worker.postMessage({ type: "interrupts", buffer: interrupts, deadline });
    } else {
      interrupts = deadline = null;
    }
    const stage = (entry) => {
      timeline.push(entry);
      listeners.stage.forEach((listener) => listener(entry));
    };
    worker.onmessage = ({ data }) => {
      if (data.type === "stage") {
        stage({ stage: data.stage, t: data.t });
      } else if (data.type === "ready") {
        stage({ stage: "ready", t: data.t });
        resolveReady({ python: data.python, cellar: data.cellar, timeline });
      } else if (data.type === "failed") {
        rejectReady(new Error(data.error));
      } else if (data.type === "deadline") {
        watch(data.due);
      } else if (data.type === "result") {
        const call = pending.get(data.id);
        if (!call) return;  // it was stopped already
        pending.delete(data.id);
        call.settle(data);
      }
    };
    worker.onerror = (event) => rejectReady(new Error(event.message || "the Python worker failed to start"));
  }

  // Trip the interrupt buffer at `due`, unless Python disarmed or moved the deadline meanwhile.
  function watch(due) {
    clearTimeout(watchdog);
    const check = () => {
      const at = deadline[0];
      if (at > 0 && Date.now() >= at) {
        deadline[0] = 0;
        Atomics.store(interrupts, 0, SIGINT);
      } else if (at > 0) {
        watchdog = setTimeout(check, at - Date.now());
      }
    };
    watchdog = setTimeout(check, Math.max(0, due - Date.now()));
  }

  function restart(reason) {
    clearTimeout(watchdog);
    const old = pending;
    worker.terminate();
    if (once) ended = true;
    else boot();
    old.forEach((call) => call.settle({ ok: false, error: { type: "Restarted", message: reason } }));
    listeners.restart.forEach((listener) => listener({ reason }));
  }

  function terminate() {
    clearTimeout(watchdog);
    if (ended) return;
    ended = true;
    worker.terminate();
    pending.forEach((call) => call.settle({ ok: false, error: { type: "Terminated", message: "the worker was terminated" } }));
  }

  function callWith({ timeout = 0, files = null, packages = null, seal = false } = {}, module, name, ...args) {
    if (ended) return Promise.reject(new Error("the worker was terminated"));
    return ready.then(() => new Promise((resolve, reject) => {
      const id = nextId++;
      let timer = null;
      let retrip = null;
      let stopped = null;
      const settle = (data) => {
        clearTimeout(timer);
        clearTimeout(retrip);
        // An interrupted call may still answer (what the code printed before it was stopped).
        if (stopped) reject(data.ok ? Object.assign(stopped, { partial: data.value }) : stopped);
        else if (data.ok) resolve(data.value);
        else reject(Object.assign(new Error(data.error.message), { pythonType: data.error.type }));
      };
      pending.set(id, { settle });
      worker.postMessage({ type: "call", id, module, name, args, ...(files ? { files } : {}),
                           ...(packages ? { packages } : {}), ...(seal ? { seal } : {}) });
      if (!timeout) return;
      timer = setTimeout(() => {
        stopped = Object.assign(
          new Error(`stopped after ${(timeout / 1000).toFixed(timeout % 1000 ? 1 : 0)} s`),
          { stopped: true, pythonType: "Timeout" });
        const restartNow = () => {
          if (pending.has(id)) restart(`Python was restarted: a call ${stopped.message}`);
        };
        if (interrupts) {
          Atomics.store(interrupts, 0, SIGINT);
          retrip = setTimeout(() => pending.has(id) && Atomics.store(interrupts, 0, SIGINT), RETRIP_MS);
          timer = setTimeout(restartNow, GRACE_MS);
        } else {
          restartNow();
        }
      }, timeout);
    }));
  }

  boot();
  return {
    get ready() { return ready; },
    timeline,
    onStage: (listener) => listeners.stage.push(listener),
    onRestart: (listener) => listeners.restart.push(listener),
    call: (module, name, ...args) => callWith({}, module, name, ...args),
    callWith,
    terminate,
    get terminated() { return ended; },
    prefetch: (files) => worker.postMessage({ type: "prefetch", files }),
    revision: (text) => callWith({}, "cellar.ingest.provenance", "revision", text),
  };
}

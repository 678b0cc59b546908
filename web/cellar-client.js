// window.cellar: the page's handle on the Python worker. Later pages extend it.
//
//   await cellar.ready            -> {python, cellar, timeline}; rejects when booting fails
//   cellar.timeline               -> [{stage, t}] boot stages with ms since the worker started
//   cellar.onStage(callback)      -> called with ({stage, t}) for every boot stage
//   await cellar.call(module, name, ...args)   any function of a cellar.* module, JSON in and out
//   await cellar.revision(text)   -> SHA-256 hex computed by cellar.provenance in Python

export function startCellar(workerUrl = new URL("./worker.js", import.meta.url)) {
  const worker = new Worker(workerUrl, { type: "module" });
  const pending = new Map();
  const listeners = [];
  const timeline = [];
  let nextId = 1;
  let resolveReady, rejectReady;
  const ready = new Promise((resolve, reject) => { resolveReady = resolve; rejectReady = reject; });

  worker.onmessage = ({ data }) => {
    if (data.type === "stage") {
      const entry = { stage: data.stage, t: data.t };
      timeline.push(entry);
      listeners.forEach((listener) => listener(entry));
    } else if (data.type === "ready") {
      timeline.push({ stage: "ready", t: data.t });
      listeners.forEach((listener) => listener({ stage: "ready", t: data.t }));
      resolveReady({ python: data.python, cellar: data.cellar, timeline });
    } else if (data.type === "failed") {
      rejectReady(new Error(data.error));
    } else if (data.type === "result") {
      const { resolve, reject } = pending.get(data.id);
      pending.delete(data.id);
      if (data.ok) resolve(data.value);
      else reject(Object.assign(new Error(data.error.message), { pythonType: data.error.type }));
    }
  };
  worker.onerror = (event) => rejectReady(new Error(event.message || "the Python worker failed to start"));

  function call(module, name, ...args) {
    return ready.then(() => new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      worker.postMessage({ type: "call", id, module, name, args });
    }));
  }

  return {
    ready,
    timeline,
    onStage: (listener) => listeners.push(listener),
    call,
    revision: (text) => call("cellar.provenance", "revision", text),
  };
}

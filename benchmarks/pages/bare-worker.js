import { loadPyodide } from "./pyodide/pyodide.mjs";

const started = performance.now();
const pyodide = await loadPyodide({ indexURL: new URL("./pyodide/", import.meta.url).href });
const runtime = performance.now() - started;
await pyodide.loadPackage("numpy", { messageCallback: () => {} });
pyodide.runPython("import numpy");
postMessage({ runtime, ready: performance.now() - started });

// The reference for benchmarks/boot.py: Pyodide and numpy in a module worker, nothing else.
// (A file of its own, not inline: the site's server sends the site's policy, which forbids inline script.)
const worker = new Worker("./bare-worker.js", { type: "module" });
window.bare = new Promise((resolve) => { worker.onmessage = ({ data }) => resolve(data); });

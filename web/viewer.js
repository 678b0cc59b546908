// The read-only notebook viewer: viewer.html?path=<archive path>&cell=N[&output=M][&rev=SHA-256].
// Python (cellar.ingest.notebook, in the worker) reads the archive's .ipynb bytes, so cells are numbered
// as the index numbers them and the revision is computed from the same bytes; this page draws
// them: markdown rendered, code highlighted, outputs shown (HTML tables sanitised, images from
// the notebook itself as data URIs, errors), and the cited cell marked and scrolled into view.
//
// When the site was built, `cellar rerender` ran every notebook (site/rendered/): the page shows that
// run's status and, unless it is clean, the saved and fresh outputs side by side, since the index
// holds the fresh outputs of clean and drifted notebooks.
//
// Re-render: the button runs the notebook in the tab with the code `cellar rerender` runs under
// Node (cellar.site.bridge.rerender_*: cellar.rerender.environment, cellar.rerender.sandbox, cellar.rerender.batch), the
// archive's blobs fetched from the site and checked against their hashes, in a worker of its own
// started for the run and terminated after it (rerenderInWorker). pandas, matplotlib and
// IPython load only then, never for search. Each code cell then shows its saved and fresh
// outputs side by side with a badge (same / drifted / failed / not run), and the notebook its
// status (clean / drifted / stale, with the reason). A cell has the archive's time limit
// (rerender.json, 60 s by default), enforced through the interrupt buffer: Python runs in the
// re-render worker, so the page stays usable meanwhile.

import { startCellar } from "./cellar-client.js";
import { highlightPython, renderMarkdown, sanitize } from "./bundles/notebook.js";
import { registerOffline } from "./offline.js";
import { $, bootStatus, element } from "./ui.js";

const params = new URLSearchParams(location.search);
const path = params.get("path");
const cited = params.has("cell") ? Number(params.get("cell")) : null;
const citedOutput = params.has("output") ? Number(params.get("output")) : null;
const citedRevision = params.get("rev");
const cellar = (window.cellar = startCellar());
const LOCK = { "/pyodide/pyodide-lock.json": "pyodide/pyodide-lock.json" };
const HOST_MARGIN_S = 30;  // past the notebook's own limit before the worker is restarted
let build = null;
let shown = null;
bootStatus(cellar, $("boot-status"), () => "en");

// An archive path as a URL path below the archive folder: each segment encoded (as sw.js does).
const archiveUrl = (folder, file) => folder + file.split("/").map(encodeURIComponent).join("/");

async function show() {
  if (!path) throw new Error("no notebook named: open the viewer from a search result (viewer.html?path=...)");
  $("path").textContent = path;
  document.title = `${path} · Cellar`;
  if (document.referrer && new URL(document.referrer).pathname === new URL("./", location.href).pathname) {
    $("back").href = document.referrer;  // back to the same question
  }
  build = await (await fetch("build.json")).json();
  const file = `/archive/${path}`;
  shown = await cellar.callWith({ files: { [file]: archiveUrl(build.archive, path) } },
    "cellar.site.bridge", "notebook_view", file, path);
  draw(shown);
  if (build.rendered) {
    showBuildRender().catch((error) => {
      Object.assign($("built-status"), { textContent: `The build's re-render cannot be shown: ${error.message}`, className: "problem" });
    });
  }
  $("rerender").disabled = false;
  $("rerender").addEventListener("click", () => rerender().catch((error) => {
    say(`The re-render failed: ${error.message}`, "problem");
    document.body.dataset.rerendered = "failed";
  }).finally(() => { $("rerender").disabled = false; }));
}

const say = (text, className = "") => Object.assign($("rerender-status"), { textContent: text, className });

// An archive file's text, or null when the archive has none (a 404).
async function optionalText(name) {
  const response = await fetch(archiveUrl(build.archive, name));
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(`${name}: ${response.status} ${response.statusText}`);
  return response.text();
}

// The fresh notebook `cellar rerender` wrote when the site was built (what the index holds for
// clean and drifted notebooks), beside the saved one; a clean notebook only gets its status line.
async function showBuildRender() {
  const response = await fetch(archiveUrl(build.rendered, path));
  if (response.status === 404) {
    $("built-status").textContent = "This notebook was not re-rendered when the site was built.";
    return;
  }
  if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
  const [fresh, settings] = await Promise.all([response.text(), optionalText("rerender.json")]);
  const result = await cellar.call("cellar.site.bridge", "rendered_view", `/archive/${path}`, fresh, path, settings);
  statusLine($("built-status"), result, null);
  if (result.status !== "clean" && !document.body.dataset.rerendered) sideBySide(result);
  document.body.dataset.built = result.status;
}

async function rerender() {
  $("rerender").disabled = true;
  delete document.body.dataset.rerendered;
  say("Reading the archive's path map and requirements…");
  const [pathmap, requirements, settings] = await Promise.all(
    ["pathmap.json", "requirements.txt", "rerender.json"].map(optionalText));
  const texts = { pathmap, requirements, settings };
  const plan = await cellar.callWith({ files: LOCK }, "cellar.site.bridge", "rerender_plan", texts, Object.keys(LOCK)[0]);
  say(`Starting a fresh Python for this notebook, with ${plan.packages.join(", ")}…`);
  const setup = performance.now();
  const result = await rerenderInWorker(path, archiveUrl(build.archive, path), texts, plan);
  statusLine($("rerender-status"), result, `${((performance.now() - setup) / 1000).toFixed(1)} s in this tab`);
  const download = $("rerender-download");
  URL.revokeObjectURL(download.href);
  download.href = URL.createObjectURL(new Blob([result.ipynb], { type: "application/x-ipynb+json" }));
  download.download = path.split("/").at(-1);
  download.hidden = false;
  sideBySide(result);
  document.body.dataset.rerendered = result.status;
}

// The notebook at `url` (archive `path`) re-run in a worker of its own (worker.js, re-render
// mode): started for this run and terminated after it, so the notebook's code shares nothing
// with the page's Python (the `cellar` worker that searches and draws this page) and nothing it
// does outlives the run. This page fetches the notebook, the blobs `plan` names and the runtime's
// lock and hands their bytes over (Python checks every blob against its hash); the worker loads
// its packages and then, before the notebook's call runs, gives up its last way to the network.
async function rerenderInWorker(path, url, texts, plan) {
  const bytes = async (from) => {
    const response = await fetch(from);
    if (!response.ok) throw new Error(`${from}: ${response.status} ${response.statusText}`);
    return new Uint8Array(await response.arrayBuffer());
  };
  const file = `/archive/${path}`;
  const urls = { ...LOCK, [file]: url };
  for (const blob of plan.blobs) urls[`/archive/${blob}`] = archiveUrl(build.archive, blob);
  const files = Object.fromEntries(await Promise.all(
    Object.entries(urls).map(async ([name, from]) => [name, await bytes(from)])));
  const runner = startCellar(undefined, { name: "rerender", once: true });
  try {
    await runner.callWith({ packages: plan.packages }, "cellar.site.bridge", "rerender_prepare");
    say(`Running the cells (at most ${plan.limits.cell_timeout} s each)…`);
    return await runner.callWith({ files, seal: true, timeout: (plan.limits.notebook_timeout + HOST_MARGIN_S) * 1000 },
      "cellar.site.bridge", "rerender_notebook", file, path, "/archive", texts, Object.keys(LOCK)[0]);
  } finally {
    runner.terminate();
  }
}
// For the browser tests: the same run for a notebook at any URL of the site.
window.rerenderInWorker = async (path, url, texts) => {
  build ??= await (await fetch("build.json")).json();
  const plan = await cellar.callWith({ files: LOCK }, "cellar.site.bridge", "rerender_plan", texts, Object.keys(LOCK)[0]);
  return rerenderInWorker(path, url, texts, plan);
};

// "drifted 5 same, 1 drifted · <when>", and why, for stale.
function statusLine(target, result, when) {
  const status = element("span", { className: `status status-${result.status}`, textContent: result.status });
  const counts = ["same", "drifted", "failed", "not run"]
    .map((badge) => [badge, result.cells.filter((cell) => cell.badge === badge).length])
    .filter(([, n]) => n).map(([badge, n]) => `${n} ${badge}`).join(", ");
  target.replaceChildren(status, ` ${counts}${when ? ` · ${when}` : ""}`,
    ...(result.reason ? [element("br"), element("span", { className: "reason", textContent: `Why stale: ${result.reason}` })] : []));
  target.className = "";
}

// Each code cell's saved and fresh outputs in two columns, with its badge and what changed.
function sideBySide(result) {
  for (const fresh of result.cells) {
    const item = $(`cell-${fresh.index}`);
    const saved = shown.cells[fresh.index];
    item.querySelectorAll(".compare, .outputs, .cell-label .badge").forEach((node) => node.remove());
    item.dataset.badge = fresh.badge;
    item.querySelector(".cell-label").prepend(
      element("span", { className: `badge badge-${fresh.badge.replace(" ", "-")}`, textContent: fresh.badge }));
    const column = (title, outputs, prefix, empty) => element("section", { className: `outputs ${title.toLowerCase()}` },
      element("h3", { textContent: title }),
      ...(outputs.length ? outputs.map((output) => outputView(fresh.index, output, prefix))
        : [element("p", { className: "muted small", textContent: empty })]));
    const compare = element("div", { className: "compare" },
      column("Saved", saved.outputs, "cell", "(no saved output)"),
      column("Fresh", fresh.outputs, "fresh", fresh.badge === "not run" ? "(not run: the run stopped before this cell)" : "(no output)"));
    item.append(compare);
    if (fresh.diffs.length) {
      const text = fresh.diffs.filter((diff) => diff.status !== "same")
        .map((diff) => `${diff.status} ${diff.kind}${diff.diff ? `\n${diff.diff}` : ""}`).join("\n\n");
      item.append(element("details", { className: "diff compare" }, element("summary", { textContent: "What changed" }),
        element("pre", { textContent: text })));
    }
  }
}

function draw(notebook) {
  const meta = notebook.metadata.cellar ?? {};
  const title = meta.title || notebook.metadata.title || notebook.path.split("/").at(-1);
  $("title").textContent = title;
  document.title = `${title} · Cellar`;
  $("revision-short").textContent = notebook.revision.slice(0, 7);
  $("revision-short").title = notebook.revision;
  $("revision-full").textContent = notebook.revision;
  if (citedRevision) {
    const same = citedRevision === notebook.revision;
    $("revision-check").textContent = same
      ? "This is the revision the search result cited."
      : `This file has changed since it was indexed: the result cited revision ${citedRevision.slice(0, 7)}, the file is now ${notebook.revision.slice(0, 7)}.`;
    $("revision-check").className = same ? "muted small" : "warning";
  }
  const facts = [
    ["Project", meta.project], ["Year", meta.year], ["Author", meta.author], ["Vessel class", meta.vessel_class],
    ["Tags", (meta.tags ?? []).join(", ")], ["Deprecated", meta.deprecated ? "yes: superseded, kept for the record" : null],
    ["Kernel", notebook.metadata.kernelspec?.display_name], ["nbformat", notebook.nbformat],
    ["Cells", notebook.cells.length],
  ];
  for (const [name, value] of facts) {
    if (value === null || value === undefined || value === "") continue;
    $("facts").append(element("dt", { textContent: name }), element("dd", { textContent: String(value) }));
  }
  $("cells").replaceChildren(...notebook.cells.map(cell));
  document.body.dataset.rendered = "true";
  if (cited !== null) {
    const target = $(`cell-${cited}`);
    if (!target) {
      $("revision-check").textContent += ` The cited cell ${cited} is not in this notebook.`;
      return;
    }
    target.scrollIntoView({ block: "center" });
    target.focus({ preventScroll: true });
    document.body.dataset.citedCell = String(cited);
  }
}

function cell(data) {
  const isCited = data.index === cited;
  const label = `${isCited ? "Cited: " : ""}cell ${data.index}, ${data.cell_type}`;
  const item = element("li", { id: `cell-${data.index}`, className: `cell cell-${data.cell_type}${isCited ? " cited" : ""}`, tabIndex: -1 });
  item.setAttribute("aria-label", label);
  if (isCited) item.setAttribute("aria-current", "location");
  const count = data.outputs.find((output) => output.execution_count !== null)?.execution_count;
  item.append(element("p", { className: "cell-label" },
    isCited ? element("strong", { className: "cited-label", textContent: "Cited cell · " }) : null,
    `cell ${data.index} · ${data.cell_type}${count ? ` · In [${count}]` : ""}`));
  if (data.cell_type === "markdown") {
    const body = element("div", { className: "prose markdown" });
    body.innerHTML = renderMarkdown(withAttachments(data.source, data.attachments));
    item.append(body);
  } else if (data.cell_type === "code") {
    const code = element("code", { className: "hljs language-python" });
    code.innerHTML = highlightPython(data.source);
    item.append(element("pre", { className: "source" }, code));
    if (data.outputs.length) {
      item.append(element("div", { className: "outputs" }, ...data.outputs.map((output) => outputView(data.index, output, "cell"))));
    }
  } else {
    item.append(element("pre", { className: "source", textContent: data.source }));
  }
  return item;
}

// Markdown images that point at the cell's attachments, as data URIs.
function withAttachments(source, attachments) {
  return Object.entries(attachments ?? {}).reduce((text, [name, bundle]) => {
    const [mime, data] = Object.entries(bundle)[0] ?? [];
    return mime ? text.replaceAll(`attachment:${name}`, `data:${mime};base64,${data.replace(/\s/g, "")}`) : text;
  }, source);
}

// `prefix` tells the saved outputs ("cell": the ones a citation names) from fresh ones ("fresh").
function outputView(cellIndex, output, prefix) {
  const isCited = prefix === "cell" && cellIndex === cited && output.index === citedOutput;
  const box = element("div", { id: `${prefix}-${cellIndex}-output-${output.index}`, className: `output output-${output.output_type}${isCited ? " cited" : ""}` });
  box.setAttribute("aria-label", `${isCited ? "Cited: " : ""}output ${output.index} of cell ${cellIndex}`);
  box.append(outputBody(cellIndex, output));
  return box;
}

function outputBody(cellIndex, output) {
  if (output.output_type === "error") {
    const text = output.traceback.length ? output.traceback.join("\n") : `${output.ename}: ${output.evalue}`;
    return element("div", { className: "traceback" }, element("pre", { textContent: text }));
  }
  if (output.output_type === "stream") {
    return element("div", { className: output.name === "stderr" ? "stderr" : "stdout" }, element("pre", { textContent: output.text }));
  }
  const data = output.data ?? {};
  const alt = data["text/plain"] ?? `output ${output.index} of cell ${cellIndex}`;
  for (const mime of ["image/png", "image/jpeg", "image/gif"]) {
    if (data[mime]) return element("img", { src: `data:${mime};base64,${data[mime].replace(/\s/g, "")}`, alt });
  }
  if (data["image/svg+xml"]) {
    return element("img", { src: `data:image/svg+xml;charset=utf-8,${encodeURIComponent(data["image/svg+xml"])}`, alt });
  }
  if (data["text/html"]) {
    const html = element("div", { className: "html-output table-wrap" });
    html.innerHTML = sanitize(data["text/html"]);
    return html;
  }
  if (data["text/markdown"]) {
    const markdown = element("div", { className: "prose" });
    markdown.innerHTML = renderMarkdown(data["text/markdown"]);
    return markdown;
  }
  const text = data["text/plain"] ?? data["text/latex"];
  if (text !== undefined) return element("pre", { textContent: text });
  return element("p", { className: "muted small", textContent: `(${Object.keys(data).join(", ") || "empty"} output, not shown)` });
}

show().then(() => registerOffline().catch(() => {}), (error) => {
  $("revision-check").textContent = `The notebook could not be shown: ${error.message}`;
  $("revision-check").className = "problem";
  document.body.dataset.rendered = "failed";
});

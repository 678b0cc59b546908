// The read-only notebook viewer: viewer.html?path=<archive path>&cell=N[&output=M][&rev=SHA-256].
// Python (cellar.notebook, in the worker) reads the archive's .ipynb bytes, so cells are numbered
// as the index numbers them and the revision is computed from the same bytes; this page draws
// them: markdown rendered, code highlighted, outputs shown (HTML tables sanitised, images from
// the notebook itself as data URIs, errors), and the cited cell marked and scrolled into view.

import { startCellar } from "./cellar-client.js";
import { highlightPython, renderMarkdown, sanitize } from "./bundles/notebook.js";
import { registerOffline } from "./offline.js";
import { bootStatus } from "./ui.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const path = params.get("path");
const cited = params.has("cell") ? Number(params.get("cell")) : null;
const citedOutput = params.has("output") ? Number(params.get("output")) : null;
const citedRevision = params.get("rev");
const cellar = (window.cellar = startCellar());
bootStatus(cellar, $("boot-status"), () => "en");

function element(tag, properties = {}, ...children) {
  const node = Object.assign(document.createElement(tag), properties);
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

// An archive path as a URL path below the archive folder: each segment encoded (as sw.js does).
const archiveUrl = (folder, file) => folder + file.split("/").map(encodeURIComponent).join("/");

async function show() {
  if (!path) throw new Error("no notebook named: open the viewer from a search result (viewer.html?path=...)");
  $("path").textContent = path;
  document.title = `${path} · Cellar`;
  if (document.referrer && new URL(document.referrer).pathname === new URL("./", location.href).pathname) {
    $("back").href = document.referrer;  // back to the same question
  }
  const build = await (await fetch("build.json")).json();
  const file = `/archive/${path}`;
  const notebook = await cellar.callWith({ files: { [file]: archiveUrl(build.archive, path) } },
    "cellar.web", "notebook_view", file, path);
  draw(notebook);
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
      item.append(element("div", { className: "outputs" }, ...data.outputs.map((output) => outputView(data.index, output))));
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

function outputView(cellIndex, output) {
  const isCited = cellIndex === cited && output.index === citedOutput;
  const box = element("div", { id: `cell-${cellIndex}-output-${output.index}`, className: `output output-${output.output_type}${isCited ? " cited" : ""}` });
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

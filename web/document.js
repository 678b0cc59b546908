// The document viewer: document.html?path=<archive path>&start=N&end=M[&rev=SHA-256][&cite=...].
// A report, a clause collection or a file of service notes, as the index read it: the shard
// publishes each document's extracted text with its blocks (heading path, citation, offsets, a
// PDF's page, a note's id and structured fields) as a file of its own, named by its hash and
// listed with its SHA-256 in the manifest (cellar.retrieval.published). The worker fetches the
// manifest and that file, Python checks both (a damaged or replaced file is refused, named) and
// hands the view over; this page draws every block as text (the archive is hostile: nothing of
// it is ever parsed as HTML), marks the block that holds [start, end) (the hit's quote, in <mark>)
// and scrolls to it, with its citation as one reads it aloud and the file's revision.

import { startCellar } from "./cellar-client.js";
import { registerOffline } from "./offline.js";
import { $, bootStatus, element, fieldName } from "./ui.js";

const SHARD_DIR = "/shard";
const params = new URLSearchParams(location.search);
const path = params.get("path");
const offset = (name) => (params.has(name) && /^\d+$/.test(params.get(name)) ? Number(params.get(name)) : null);
const quoteStart = offset("start");
const quoteEnd = offset("end") ?? quoteStart;
const citedRevision = params.get("rev");
const cellar = (window.cellar = startCellar());
const SOURCE_NAMES = { document: "Document", clauses: "Clause collection", records: "Service notes" };
bootStatus(cellar, $("boot-status"), () => "en");

async function show() {
  if (!path) throw new Error("no document named: open the viewer from a search result (document.html?path=...)");
  $("path").textContent = path;
  document.title = `${path} · Cellar`;
  if (document.referrer && new URL(document.referrer).pathname === new URL("./", location.href).pathname) {
    $("back").href = document.referrer;  // back to the same question
  }
  const build = await (await fetch("build.json")).json();
  const shardUrl = new URL(build.shard, location.href);
  const place = (names) => Object.fromEntries(names.map((name) => [`${SHARD_DIR}/${name}`, new URL(name, shardUrl).href]));
  // Round one places the manifest (Python names the document's file); round two, that file.
  let files = place(["manifest.json"]);
  const fetched = [];
  for (let round = 0; round < 2; round++) {
    const view = await cellar.callWith({ files }, "cellar.site.bridge", "document_view", path, SHARD_DIR);
    fetched.push(...Object.values(files));
    if (!view.fetch) {
      keep(fetched);
      return draw(view);
    }
    files = place(view.fetch);
  }
  throw new Error("the document's file could not be placed in Python's file system");
}

// Ask the offline copy (sw.js) to keep the files this view read (the worker's fetches bypass a
// service worker that came after it; of a large shard only the boot files are kept at install):
// a document opened once opens offline. The service worker keeps only files the manifest lists.
function keep(urls) {
  if (!("serviceWorker" in navigator)) return;
  navigator.serviceWorker.getRegistration(new URL("./", location.href).href).then((registration) => {
    registration?.active?.postMessage({ type: "keep", urls });
  }, () => {});
}

// The block that holds the quote [quoteStart, quoteEnd): the first whose span contains its start.
function citedBlock(blocks) {
  if (quoteStart === null) return -1;
  return blocks.findIndex((block) => block.start <= quoteStart && quoteStart < Math.max(block.end, block.start + 1));
}

function draw(view) {
  const title = view.title || path.split("/").at(-1);
  $("title").textContent = title;
  document.title = `${title} · Cellar`;
  $("revision-short").textContent = view.revision.slice(0, 7);
  $("revision-short").title = view.revision;
  $("revision-full").textContent = view.revision;
  if (citedRevision) {
    const same = citedRevision === view.revision;
    $("revision-check").textContent = same
      ? "This is the revision the search result cited."
      : `The published document is revision ${view.revision.slice(0, 7)}, the result cited ${citedRevision.slice(0, 7)}.`;
    $("revision-check").className = same ? "muted small" : "warning";
  }
  $("extracted-note").textContent = ["markdown", "text"].includes(view.type)
    ? "The file's own text, divided into the passages the index cites."
    : `The text Cellar extracted from this ${view.type.toUpperCase()} file (the offsets of every citation point into it), divided into the passages the index cites.`;
  const facts = [["Kind", SOURCE_NAMES[view.source] ?? view.source], ["Standard", view.designation], ["Published file", view.file]];
  for (const [name, value] of facts) {
    if (value) $("facts").append(element("dt", { textContent: name }), element("dd", { textContent: String(value) }));
  }
  const cited = citedBlock(view.blocks);
  const items = [];
  let at = 0;
  view.blocks.forEach((block, number) => {
    const between = view.text.slice(at, block.start);
    if (between.trim()) items.push(element("li", { className: "doc-gap" }, element("pre", { className: "doc-text", textContent: between })));
    items.push(blockItem(view, block, number, number === cited));
    at = Math.max(at, block.end);
  });
  const rest = view.text.slice(at);
  if (rest.trim()) items.push(element("li", { className: "doc-gap" }, element("pre", { className: "doc-text", textContent: rest })));
  $("blocks").replaceChildren(...items);
  document.body.dataset.rendered = "true";
  if (cited < 0) {
    $("citation").textContent = params.get("cite") || "(no passage cited)";
    if (quoteStart !== null) $("revision-check").textContent += ` No passage of this document holds offset ${quoteStart}.`;
    return;
  }
  const block = view.blocks[cited];
  $("citation").textContent = block.citation;
  const target = $(`block-${cited}`);
  target.scrollIntoView({ block: "center" });
  target.focus({ preventScroll: true });
  document.body.dataset.citedBlock = String(cited);
  document.body.dataset.cited = block.citation;
}

function blockItem(view, block, number, isCited) {
  const item = element("li", { id: `block-${number}`, className: `doc-block block-${block.kind.replace(" ", "-")}${isCited ? " cited" : ""}`, tabIndex: -1 });
  if (isCited) item.setAttribute("aria-current", "location");
  const where = [block.citation, block.page ? `page ${block.page}` : null].filter(Boolean).join(" · ");
  item.append(element("p", { className: "cell-label" },
    isCited ? element("strong", { className: "cited-label", textContent: "Cited · " }) : null,
    element("cite", { textContent: where }),
    block.headings.length > 1 ? element("span", { className: "muted small", textContent: ` (${block.headings.join(" > ")})` }) : null));
  if (block.fields) {
    const fields = element("dl", { className: "facts note-fields" });
    for (const [key, value] of Object.entries(block.fields)) {
      fields.append(element("dt", { textContent: fieldName(key) }), element("dd", { textContent: String(value) }));
    }
    item.append(fields);
  }
  const text = view.text.slice(block.start, block.end);
  const body = element("pre", { className: "doc-text" });
  if (isCited) {
    // the quote inside the block, marked; the rest of the block as it is
    const from = Math.max(quoteStart, block.start) - block.start;
    const to = Math.min(Math.max(quoteEnd, quoteStart), block.end) - block.start;
    body.append(text.slice(0, from), element("mark", { className: "quote-mark", textContent: text.slice(from, to) }), text.slice(to));
  } else {
    body.textContent = text;
  }
  item.append(body);
  return item;
}

show().then(() => registerOffline().catch(() => {}), (error) => {
  $("revision-check").textContent = `The document could not be shown: ${error.message}`;
  $("revision-check").className = "problem";
  document.body.dataset.rendered = "failed";
});

// The search page: a query box and filters; results per notebook with kind badges, highlighted
// terms, tables drawn as tables and citations that open the viewer at the cited cell; refusals
// with their reason and the closest thing found. Python boots in a worker meanwhile: a question
// typed during the boot runs as soon as the index is open.
//
// window.cellar.search(query, options) -> the answer contract (for tests and embedding).

import { startCellar } from "./cellar-client.js";
import { searchClient } from "./search-client.js";
import { registerOffline } from "./offline.js";
import { renderTable } from "./bundles/notebook.js";
import { $, element, fieldName, STAGE_NAMES } from "./ui.js";

const STAGES = { ...STAGE_NAMES.en, ready: "Ready" };  // ready here: the index is open too
// Share of the progress bar at the start of each stage, and a stage's usual length (ms) on a
// modest laptop: the bar creeps towards the next stage, so it moves without pretending to know.
const PROGRESS = { runtime: [0, 3000], packages: [45, 3000], index: [85, 800], ready: [100, 1] };
const DEBOUNCE_MS = 200;
const QUOTE_LIMIT = 900;

const cellar = (window.cellar = startCellar());
const client = searchClient(cellar);
cellar.search = client.search;
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
const opened = performance.now();

// --- boot progress --------------------------------------------------------------------------

let current = null;
function enterStage(stage, t) {
  if (current) current.item.querySelector(".time").textContent = seconds(t - current.t);
  const item = element("li", {}, element("span", { className: "name", textContent: STAGES[stage] ?? stage }), " ",
    element("span", { className: "time" }));
  $("stages").append(item);
  current = stage === "ready" ? null : { stage, item, t, since: performance.now() };
  drawProgress();
}

function drawProgress() {
  if (!current) {
    $("boot-progress").value = 100;
    return;
  }
  const [start, typical] = PROGRESS[current.stage] ?? [0, 1000];
  const next = Object.values(PROGRESS).map(([share]) => share).find((share) => share > start) ?? 100;
  const percent = start + (next - start) * (1 - Math.exp(-(performance.now() - current.since) / typical));
  $("boot-progress").value = Math.floor(percent);
  $("boot-status").textContent =
    `${current.item.querySelector(".name").textContent}… ${Math.floor(percent)} % (${seconds(performance.now() - opened)})`;
}

cellar.onStage(({ stage, t }) => { if (stage !== "ready") enterStage(stage, t); });
const ticker = setInterval(drawProgress, 200);

cellar.ready.then(
  ({ python, cellar: version, timeline }) => {
    enterStage("index", timeline.at(-1).t);
    $("python-version").textContent = python;
    $("cellar-version").textContent = version;
    $("ready-after").textContent = seconds(timeline.at(-1).t);
    $("versions").hidden = false;
    $("revision-tool").hidden = false;
    document.body.dataset.ready = "true";
  },
  (error) => failed(`Python could not start: ${error.message}`),
);

function failed(message) {
  clearInterval(ticker);
  $("boot-status").textContent = message;
  $("boot").classList.add("failed");
  $("results-count").textContent = message;
}

client.open().then(
  (facts) => {
    enterStage("ready", performance.now() - opened);
    clearInterval(ticker);
    $("boot-status").textContent = `Ready: ${facts.notebooks} notebooks, ${facts.chunks} passages.`;
    $("boot").hidden = true;
    $("index-facts").textContent = `${facts.notebooks} notebooks, ${facts.chunks} passages, model ${facts.model}`;
    for (const box of document.querySelectorAll("#kinds input")) {
      const kind = box.value;
      box.closest(".choice").hidden = !facts.kinds[kind];
      box.nextElementSibling.textContent = `${kind} (${facts.kinds[kind] ?? 0})`;
    }
    document.body.dataset.searchReady = "true";
    // with a question pending, they wait for its first answer (run), not competing with it
    if (!$("query").value.trim()) afterFirstAnswer();
  },
  (error) => { if (document.body.dataset.ready) failed(`The index could not be opened: ${error.message}`); },
);

// --- filters, from the shard's notebooks table -----------------------------------------------

client.manifest.then((manifest) => {
  // the chunk kinds the shard's index knows, in their code order
  $("kinds").append(...manifest.kinds.map((kind) => element("div", { className: "choice" },
    element("input", { type: "checkbox", id: `kind-${kind}`, value: kind }),
    element("label", { htmlFor: `kind-${kind}`, textContent: kind }))));
}, (error) => failed(`The index could not be read: ${error.message}`));

// What waits for the first answer when the page opens with a question: the filters' options
// (a large archive has thousands of projects: drawing them held the first answer back by a
// third of a second) and the offline copy.
let waited = false;
function afterFirstAnswer() {
  if (waited) return;
  waited = true;
  client.filters().then(showFilters, () => {});  // without them the page still searches
  keepOffline();
}

// The year range and the projects, from the notebook table that Python opened (a boot file of
// the shard: the manifest stays small however large the archive).
function showFilters({ years, projects, sources, fields }) {
  for (const id of ["year-from", "year-to"]) {
    const input = $(id);
    input.closest(".filter").hidden = !years;
    if (years) Object.assign(input, { min: years[0], max: years[1] });
  }
  $("year-from").placeholder = years ? String(years[0]) : "";
  $("year-to").placeholder = years ? String(years[1]) : "";
  $("project").closest(".filter").hidden = !projects.length;
  $("project").append(...projects.map(([project, title]) => element("option", {
    value: project, textContent: `${project} (${title})`,
  })));
  const wanted = new URLSearchParams(location.search).get("project");
  if (wanted && projects.some(([project]) => project === wanted)) {
    $("project").value = wanted;
    if ($("query").value.trim()) run();  // the question the page opened with, within that project
  }
  sourceFilters(sources ?? [], fields ?? {});
}

// Documents beside the notebooks: a source filter when the archive holds more than notebooks,
// and one filter per structured field of its records (machine, fault code, ...), from the
// entries' catalogue that Python read (each service note is an entry with its fields).
const SOURCE_NAMES = { notebook: "Notebooks", document: "Documents", clauses: "Clause collections", records: "Records" };

function sourceFilters(sources, fields) {
  $("source").closest(".filter").hidden = sources.length < 2;
  $("source").append(...sources.map((name) => element("option", { value: name, textContent: SOURCE_NAMES[name] ?? name })));
  $("fields").replaceChildren(...Object.keys(fields).map((key) => {
    const select = element("select", { id: `field-${key}`, className: "field" },
      element("option", { value: "", textContent: "any" }),
      ...fields[key].map((value) => element("option", { value, textContent: value })));
    select.dataset.field = key;
    const name = fieldName(key);  // "Fault code", written as the other filters' labels are
    return element("div", { className: "filter" },
      element("label", { htmlFor: `field-${key}`, textContent: name[0].toUpperCase() + name.slice(1) }), select);
  }));
}

function options() {
  const year = (id) => ($(id).value.trim() === "" ? null : Number($(id).value));
  return {
    k: 3,
    year_from: year("year-from"),
    year_to: year("year-to"),
    project: $("project").value || null,
    kinds: [...document.querySelectorAll("#kinds input:checked")].map((box) => box.value),
    include_deprecated: $("include-deprecated").checked,
    sources: $("source").value ? [$("source").value] : [],
    fields: Object.fromEntries([...document.querySelectorAll("#fields select")]
      .filter((select) => select.value).map((select) => [select.dataset.field, select.value])),
  };
}

// --- searching: the latest question wins ------------------------------------------------------

let latest = 0;
let debounce = null;

async function run() {
  clearTimeout(debounce);
  const query = $("query").value.trim();
  const request = ++latest;
  const url = new URL(location.href);
  if (query) url.searchParams.set("q", query); else url.searchParams.delete("q");
  history.replaceState(null, "", url);
  if (!query) {
    $("results-count").textContent = "";
    $("refusal").replaceChildren();
    $("notebooks").replaceChildren();
    return;
  }
  $("results").setAttribute("aria-busy", "true");
  if (!document.body.dataset.searchReady) {
    $("results-count").textContent = `Searching for “${query}” as soon as Python is ready…`;
  }
  try {
    const answer = await client.search(query, options());
    if (request !== latest) return;
    draw(answer);
    if (!document.body.dataset.firstResult) {
      document.body.dataset.firstResult = String(Math.round(performance.now()));
      afterFirstAnswer();
    }
  } catch (error) {
    if (request !== latest) return;
    $("results-count").textContent = `The search failed: ${error.message}`;
    if (document.body.dataset.searchReady) afterFirstAnswer();
  } finally {
    if (request === latest) $("results").removeAttribute("aria-busy");
  }
}

$("search-form").addEventListener("submit", (event) => { event.preventDefault(); run(); });
$("query").addEventListener("input", () => { clearTimeout(debounce); debounce = setTimeout(run, DEBOUNCE_MS); });
$("filters").addEventListener("change", () => run());
$("clear-filters").addEventListener("click", () => {
  for (const id of ["year-from", "year-to", "project", "source"]) $(id).value = "";
  document.querySelectorAll("#fields select").forEach((select) => { select.value = ""; });
  $("filters").querySelectorAll("input[type=checkbox]").forEach((box) => { box.checked = false; });
  run();
});

const initial = new URLSearchParams(location.search).get("q");
if (initial) {
  $("query").value = initial;
  run();
}

// --- drawing an answer -----------------------------------------------------------------------

function draw(answer) {
  const shown = answer.notebooks;
  const ms = answer.timings_ms?.total;
  $("results-count").textContent = answer.refused
    ? `No answer for “${answer.query}”.`
    : `${shown.length} notebook${shown.length === 1 ? "" : "s"} for “${answer.query}”${ms ? ` (${Math.round(ms)} ms)` : ""}.`;
  if (answer.cut) $("results-count").textContent += ` ${cutNote(answer.cut)}`;
  $("route").textContent = searched(answer.route);
  $("refusal").replaceChildren(...(answer.refused ? [refusal(answer)] : []));
  $("notebooks").replaceChildren(...shown.map((notebook, rank) => element("li", {}, notebookCard(notebook, rank + 1))));
  document.body.dataset.answered = answer.query;
}

// A pasted page is read up to its first characters (search.MAX_QUERY_CHARS), and the page says so.
function cutNote(cut) {
  const number = (n) => n.toLocaleString("en");
  return `Only its first ${number(cut.read_chars)} of ${number(cut.asked_chars)} characters were read.`;
}

// What a routed question searched first: a machine id's notes, or (when asked) the standards;
// and when nothing current answered, that a deprecated notebook does.
function searched(route) {
  if (!route) return "";
  const superseded = route.deprecated
    ? "Nothing current answers this: the answer comes from a deprecated notebook, kept for the record."
    : "";
  if (route.rule === "none") return superseded;
  const fields = Object.entries(route.fields ?? {}).map(([key, value]) => `${fieldName(key)} ${value}`);
  const first = fields.length ? `the service notes of ${fields.join(", ")}` : `the ${route.sources[0]}`;
  // a machine's question falls back to the other sources, never to other machines' notes
  const then = fields.length ? ", then the other sources" : ", then every source";
  return `Searched ${first} first${route.fell_back ? then : ""}.${superseded ? ` ${superseded}` : ""}`;
}

function refusal(answer) {
  const closest = answer.closest?.[0];
  return element("div", { className: "panel refusal", role: "note" },
    element("h3", { textContent: "Not in the archive, as far as Cellar can tell" }),
    element("p", { className: "reason", textContent: answer.refusal_reason }),
    closest ? element("div", { className: "closest" },
      element("h4", { textContent: "The closest thing found" }),
      notebookCard({ ...closest, hits: closest.hits.slice(0, 1) }, null)) : null);
}

function notebookCard(notebook, rank) {
  const meta = notebook.meta ?? {};
  const id = `nb-${rank ?? "closest"}`;
  // a service note's structured fields (its date is its year): fault code E217 · machine T2-0457
  const fields = Object.entries(meta.fields ?? {}).filter(([key]) => key !== "date");
  const facts = [
    meta.project && `project ${meta.project}`,
    meta.year && `year ${meta.year}`,
    meta.author && meta.author,
    ...fields.map(([key, value]) => `${fieldName(key)} ${value}`),
  ].filter(Boolean).join(" · ");
  // The status is a notebook's re-render verdict (clean, drifted, stale, unchecked); a document
  // (meta.source) is never re-run, so it has none to show.
  const badges = element("span", { className: "statuses" },
    meta.source ? null : element("span", { className: `status status-${notebook.status}`, textContent: notebook.status }),
    meta.deprecated ? element("span", { className: "status status-deprecated", textContent: "deprecated" }) : null);
  const first = notebook.hits[0];
  return element("article", { className: "notebook" },
    element("h3", { id },
      rank ? element("span", { className: "rank", textContent: `${rank}. ` }) : null,
      element("a", { href: viewerUrl(notebook, first), textContent: notebook.title || notebook.path })),
    element("p", { className: "path" }, element("code", { textContent: notebook.path })),
    element("p", { className: "meta" }, facts, facts && badges.childElementCount ? " · " : "", badges),
    notebook.warning ? element("p", { className: "warning", role: "note", textContent: notebook.warning }) : null,
    notebook.note ? element("p", { className: "note muted small", textContent: notebook.note }) : null,
    element("ol", { className: "hits", ariaLabel: `Passages of ${notebook.title || notebook.path}` },
      ...notebook.hits.map((hit) => element("li", { className: `hit kind-${hit.kind}` }, hitBody(notebook, hit)))),
    notebook.neighbourhood.length ? neighbourhood(notebook) : null);
}

function hitBody(notebook, hit) {
  const body = element("div");
  body.append(element("p", { className: "hit-head" }, badge(hit.kind), " ", citation(notebook, hit)));
  if (hit.kind === "table" && hit.table) body.append(table(hit.table));
  else body.append(quote(hit.quote, hit.marks ?? []));
  // a re-rendered plot: what the figure itself shows, read from its objects (text, never markup)
  if (hit.kind === "plot" && hit.figure) body.append(element("p", { className: "figure-text muted small", textContent: hit.figure }));
  return body;
}

const badge = (kind) => element("span", { className: `badge badge-${kind}`, textContent: kind });

function citation(notebook, hit) {
  if (hit.citation !== undefined) {
    // A document's block, cited as read aloud (`CVS 210:2019 §6.3.2 b`, a note's id): opens the
    // document viewer at that block, the quote marked.
    const where = hit.citation;
    const link = element("a", { className: "cite document", href: viewerUrl(notebook, hit) },
      element("cite", {}, `${notebook.path}, `, element("strong", { textContent: where }), ", revision ",
        element("code", { textContent: notebook.revision.slice(0, 7) })));
    link.setAttribute("aria-label", `Open ${notebook.path} at ${where} (revision ${notebook.revision.slice(0, 7)}) in the document viewer`);
    return link;
  }
  const where = `cell ${hit.cell}${hit.output !== null ? `, output ${hit.output}` : ""}`;
  const link = element("a", { className: "cite", href: viewerUrl(notebook, hit) },
    element("cite", {}, `${notebook.path}, ${where}, revision `, element("code", { textContent: notebook.revision.slice(0, 7) })));
  link.setAttribute("aria-label", `Open ${notebook.path} at ${where} (revision ${notebook.revision.slice(0, 7)}) in the viewer`);
  return link;
}

function viewerUrl(notebook, hit) {
  const params = new URLSearchParams({ path: notebook.path, rev: notebook.revision });
  if (hit && hit.citation !== undefined) {  // a document's block: the document viewer, at the quote
    params.set("start", hit.start);
    params.set("end", hit.end);
    params.set("cite", hit.citation);
    return `document.html?${params}`;
  }
  if (hit && hit.cell !== null) params.set("cell", hit.cell);
  if (hit && hit.output !== null && hit.output !== undefined) params.set("output", hit.output);
  return `viewer.html?${params}`;
}

// The text with each [start, end) of `marks` in a <mark>; long text is cut after QUOTE_LIMIT.
function highlighted(text, marks) {
  const limit = Math.min(text.length, QUOTE_LIMIT);
  const parts = [];
  let at = 0;
  for (const [start, end] of marks) {
    if (start >= limit) break;
    parts.push(text.slice(at, start), element("mark", { textContent: text.slice(start, Math.min(end, limit)) }));
    at = Math.min(end, limit);
  }
  parts.push(text.slice(at, limit), limit < text.length ? element("span", { className: "muted", textContent: " …" }) : null);
  return parts.filter((part) => part !== "" && part !== null);
}

const quote = (text, marks) => element("pre", { className: "quote" }, ...highlighted(text, marks));

// A table chunk's text: the expression that made it, a Markdown table, a summary sentence.
function table(text) {
  const lines = text.split("\n");
  const rows = lines.filter((line) => line.startsWith("|"));
  const rest = lines.filter((line) => !line.startsWith("|") && line.trim());
  const wrap = element("div", { className: "table-wrap" });
  wrap.innerHTML = renderTable(rows.join("\n"));
  return element("figure", { className: "table-hit" }, wrap,
    rest.length ? element("figcaption", { textContent: rest.join(" ") }) : null);
}

function neighbourhood(notebook) {
  const isDocument = notebook.neighbourhood.some((entry) => entry.citation !== undefined);
  const place = (entry) => {
    if (entry.citation !== undefined && entry.start !== undefined) {
      // a document's passage: the document viewer at that block, as the hit's own citation opens it
      return element("a", { href: viewerUrl(notebook, entry), className: "cite" }, element("cite", { textContent: entry.citation }));
    }
    if (entry.citation !== undefined || isDocument) return element("cite", { textContent: entry.citation ?? "section" });
    const output = entry.output !== undefined ? `, output ${entry.output}` : "";
    return element("a", { href: viewerUrl(notebook, entry), textContent: `cell ${entry.cell}${output}` });
  };
  return element("details", { className: "neighbourhood" },
    element("summary", { textContent: isDocument
      ? "Context: the section, the passage and the next two in it"
      : "Context: the heading above, the cell and the next two cells" }),
    element("ol", {}, ...notebook.neighbourhood.map((entry) => element("li", {},
      element("p", { className: "hit-head" }, badge(entry.kind), " ", place(entry)),
      quote(entry.text, entry.marks ?? [])))));
}

// --- about: offline copy and the revision tool ----------------------------------------------

let kept = null;
function keepOffline() {
  kept ??= registerOffline().then(
    () => {
      client.keepFetched();  // what the searches so far fetched, before the service worker was there
      $("offline-status").textContent = "This site is kept for offline use: it works without a network from now on.";
    },
    (error) => { $("offline-status").textContent = `Offline use is not available: ${error.message}`; });
}

let latestRevision = 0;
$("revision-input").addEventListener("input", async (event) => {
  const request = ++latestRevision;
  try {
    const value = await cellar.revision(event.target.value);
    if (request === latestRevision) $("revision-output").textContent = value;
  } catch (error) {
    if (request === latestRevision) $("revision-output").textContent = `error: ${error.message}`;
  }
});

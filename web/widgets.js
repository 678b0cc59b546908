// The lessons' interactive widgets, mounted where the prose has <!-- widget: NAME -->.
// Each gets its place, the lesson's files, the page language and `python(name, args, options)`,
// which calls cellar.site.bridge in the worker. Only the latest answer is drawn.

import { element } from "./ui.js";

const TEXT = {
  en: {
    explorer: "Chunk explorer", preset: "Example", text: "Text", window: "Window (words)",
    overlap: "Overlap (words)", passages: "Passages: choose one to highlight it in the text",
    source: "The text, with the chosen passage highlighted",
    stats: (r) => `${r.total_words} words, ${r.covered_words} covered (coverage ${pct(r.coverage)}), ` +
      `${r.word_occurrences} word occurrences, duplication ${r.duplication_factor === null ? "none" : r.duplication_factor.toFixed(2)}` +
      (r.missing_word_indices.length ? `, missing words ${r.missing_word_indices.join(", ")}` : ""),
    chars: "chars", words: "words",
    lab: "Embedding lab", query: "Query", queries: "Queries to try", heatmap: "Cosine similarity of every pair of passages",
    embedding: "Embedding (cosine)", bm25: "BM25", fused: "Fused (RRF)", loading: "Loading the model (8 MB) and embedding the passages…",
    noBm25: "no passage shares a term with the query", lookFor: "Look for", model: "Model",
  },
  nl: {
    explorer: "Chunkverkenner", preset: "Voorbeeld", text: "Tekst", window: "Venster (woorden)",
    overlap: "Overlap (woorden)", passages: "Passages: kies er een om hem in de tekst te markeren",
    source: "De tekst, met de gekozen passage gemarkeerd",
    stats: (r) => `${r.total_words} woorden, ${r.covered_words} gedekt (dekking ${pct(r.coverage)}), ` +
      `${r.word_occurrences} woordvoorkomens, duplicatie ${r.duplication_factor === null ? "geen" : r.duplication_factor.toFixed(2).replace(".", ",")}` +
      (r.missing_word_indices.length ? `, ontbrekende woorden ${r.missing_word_indices.join(", ")}` : ""),
    chars: "tekens", words: "woorden",
    lab: "Embeddinglab", query: "Zoekvraag", queries: "Zoekvragen om te proberen", heatmap: "Cosinusgelijkenis van elk paar passages",
    embedding: "Embedding (cosinus)", bm25: "BM25", fused: "Gefuseerd (RRF)", loading: "Het model (8 MB) laden en de passages embedden…",
    noBm25: "geen passage deelt een term met de zoekvraag", lookFor: "Let op", model: "Model",
  },
};

const pct = (value) => value === null ? "–" : `${Math.round(value * 100)} %`;
let widgetCount = 0;

// Calls whose answers may arrive out of order: only the latest one is drawn.
function latestOnly(python) {
  let latest = 0;
  return async (name, args, options, draw, fail) => {
    const request = ++latest;
    try {
      const value = await python(name, args, options);
      if (request === latest) draw(value);
    } catch (error) {
      if (request === latest) fail(error);
    }
  };
}

function slider(id, label, min, max, value) {
  const input = element("input", { type: "range", id, min, max, value });
  const shown = element("output", { htmlFor: id, value: String(value) });
  input.addEventListener("input", () => { shown.value = input.value; });
  return { input, shown, row: element("div", { className: "slider" }, element("label", { htmlFor: id, textContent: label }), input, shown) };
}

function chunkExplorer(place, { files, lang, python }) {
  const t = TEXT[lang];
  const settings = JSON.parse(files["widget.json"]);
  const presets = settings.presets[lang];
  const id = `explorer-${++widgetCount}`;
  const call = latestOnly(python);
  const select = element("select", { id: `${id}-preset` },
    ...presets.map((preset, i) => element("option", { value: String(i), textContent: preset.label })));
  const text = element("textarea", { id: `${id}-text`, rows: 4, spellcheck: false });
  const windowSlider = slider(`${id}-window`, t.window, settings.window.min, Math.min(settings.window.max, 64), settings.window.default);
  const overlapSlider = slider(`${id}-overlap`, t.overlap, settings.overlap.min, settings.window.default - 1, settings.overlap.default);
  const stats = element("p", { className: "stats", role: "status" });
  stats.setAttribute("aria-live", "polite");
  const list = element("ol", { className: "passages", id: `${id}-passages` });
  const source = element("pre", { className: "source", id: `${id}-source` });
  let chosen = null;
  let answer = null;

  const highlight = () => {
    const passage = answer?.passages.find((p) => p.id === chosen);
    const value = text.value;
    source.replaceChildren(...(passage
      ? [value.slice(0, passage.start), element("mark", { textContent: value.slice(passage.start, passage.end) }), value.slice(passage.end)]
      : [value]));
    list.querySelectorAll("button").forEach((button) => button.setAttribute("aria-pressed", String(button.dataset.passage === chosen)));
  };
  const draw = (result) => {
    answer = result.error ? null : result;
    place.dataset.state = result.error ? "error" : "ready";
    if (result.error) {
      stats.textContent = result.error;
      stats.classList.add("problem");
      list.replaceChildren();
    } else {
      stats.classList.remove("problem");
      stats.textContent = t.stats(result);
      if (!result.passages.some((p) => p.id === chosen)) chosen = null;
      list.replaceChildren(...result.passages.map((passage) => {
        const button = element("button", { type: "button" },
          element("span", { className: "passage-id", textContent: passage.id }),
          ` ${t.chars} ${passage.start}-${passage.end} · ${t.words} ${passage.word_start}-${passage.word_end} `,
          element("q", { textContent: passage.text }));
        button.dataset.passage = passage.id;
        button.addEventListener("click", () => { chosen = chosen === passage.id ? null : passage.id; highlight(); });
        return element("li", {}, button);
      }));
    }
    highlight();
  };
  const update = () => {
    overlapSlider.input.max = String(Number(windowSlider.input.value) - 1);
    overlapSlider.shown.value = overlapSlider.input.value;
    call("chunk_explorer", [text.value, Number(windowSlider.input.value), Number(overlapSlider.input.value), settings.document_id],
      {}, draw, (error) => { stats.textContent = error.message; stats.classList.add("problem"); });
  };
  const usePreset = (preset) => {
    text.value = preset.text;
    windowSlider.input.value = windowSlider.shown.value = preset.window;
    overlapSlider.input.max = String(preset.window - 1);
    overlapSlider.input.value = overlapSlider.shown.value = preset.overlap;
    chosen = null;
    update();
  };
  select.addEventListener("change", () => usePreset(presets[Number(select.value)]));
  [text, windowSlider.input, overlapSlider.input].forEach((input) => input.addEventListener("input", update));

  place.className = "widget chunk-explorer";
  place.setAttribute("aria-labelledby", `${id}-title`);
  place.replaceChildren(
    element("h3", { id: `${id}-title`, textContent: t.explorer }),
    element("div", { className: "field" }, element("label", { htmlFor: select.id, textContent: t.preset }), select),
    element("div", { className: "field" }, element("label", { htmlFor: text.id, textContent: t.text }), text),
    windowSlider.row, overlapSlider.row, stats,
    element("h4", { id: `${id}-passages-title`, textContent: t.passages }), list,
    element("h4", { textContent: t.source }), source);
  list.setAttribute("aria-labelledby", `${id}-passages-title`);
  usePreset(presets[0]);
}

function embeddingLab(place, { files, lang, python }) {
  const t = TEXT[lang];
  const lab = JSON.parse(files["lab.json"]);
  const { passages, queries } = lab[lang];
  const id = `lab-${++widgetCount}`;
  const call = latestOnly(python);
  const input = element("input", { type: "search", id: `${id}-query`, value: queries[0].text });
  const choices = element("div", { className: "choices", role: "group" });
  choices.setAttribute("aria-label", t.queries);
  const lookFor = element("p", { className: "look-for" });
  const status = element("p", { className: "stats", role: "status", textContent: t.loading });
  status.setAttribute("aria-live", "polite");
  const heatmap = element("table", { className: "heatmap" });
  const rankings = element("div", { className: "rankings" });
  rankings.setAttribute("aria-live", "polite");
  const title = (passageId) => passages.find((p) => p.id === passageId)?.title ?? passageId;

  const ranking = (label, rows, relevant, empty) => element("section", {},
    element("h4", { textContent: label }),
    rows.length ? element("ol", {}, ...rows.map((row) => element("li", { className: relevant.includes(row.id) ? "relevant" : "" },
      element("span", { textContent: title(row.id) }), " ", element("span", { className: "score", textContent: row.score.toFixed(3) }))))
      : element("p", { className: "muted", textContent: empty }));

  const drawHeatmap = (result) => {
    const head = element("tr", {}, element("td"), ...result.ids.map((pid) => element("th", { scope: "col", textContent: pid })));
    const body = result.similarity.map((row, i) => element("tr", {},
      element("th", { scope: "row", textContent: title(result.ids[i]) }),
      ...row.map((value, j) => {
        const cell = element("td", { textContent: value.toFixed(2), title: `${title(result.ids[i])} · ${title(result.ids[j])}: ${value.toFixed(3)}` });
        // White at 0 (or below), deep blue at 1.
        cell.style.background = `hsl(205 70% ${Math.round(97 - 55 * Math.max(0, value))}%)`;
        if (value > 0.6) cell.style.color = "white";
        return cell;
      })));
    heatmap.replaceChildren(element("caption", { textContent: t.heatmap }), element("thead", {}, head), element("tbody", {}, ...body));
  };
  const update = () => {
    const query = queries.find((q) => q.text === input.value);
    lookFor.textContent = query ? `${t.lookFor}: ${query.look_for}` : "";
    choices.querySelectorAll("button").forEach((b) => b.setAttribute("aria-pressed", String(b.textContent === input.value)));
    call("embedding_lab", [passages, input.value, lab.fusion_k], { timeout: 0 },
      (result) => {
        if (!heatmap.rows.length) drawHeatmap(result);
        status.classList.remove("problem");
        status.textContent = `${t.model}: ${result.model}`;
        const relevant = query?.relevant ?? [];
        rankings.replaceChildren(
          ranking(t.embedding, result.embedding.slice(0, lab.top), relevant, ""),
          ranking(t.bm25, result.bm25.slice(0, lab.top), relevant, t.noBm25),
          ranking(t.fused, result.fused.slice(0, lab.top), relevant, ""));
        place.dataset.state = "ready";
      },
      (error) => { status.textContent = error.message; status.classList.add("problem"); place.dataset.state = "error"; });
  };
  choices.append(...queries.map((query) => {
    const button = element("button", { type: "button", textContent: query.text });
    button.addEventListener("click", () => { input.value = query.text; update(); });
    return button;
  }));
  let typing = null;  // one embedding per pause in typing, not per key
  input.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(update, 250); });

  place.className = "widget embedding-lab";
  place.setAttribute("aria-labelledby", `${id}-title`);
  place.replaceChildren(
    element("h3", { id: `${id}-title`, textContent: t.lab }),
    choices,
    element("div", { className: "field" }, element("label", { htmlFor: input.id, textContent: t.query }), input),
    lookFor, status, rankings, element("div", { className: "heatmap-scroll" }, heatmap));
  update();
}

export const WIDGETS = { "chunk-explorer": chunkExplorer, "embedding-lab": embeddingLab };

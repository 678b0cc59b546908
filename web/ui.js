// Helpers shared by every page: DOM building, the page language, lesson front matter, the names
// of the worker's boot stages and a boot status line.

export const $ = (id) => document.getElementById(id);

// A record's structured field as words (fault_code -> "fault code"): a card, a filter, a note.
export const fieldName = (key) => key.replaceAll("_", " ");

// A new element with `properties` set and `children` appended (null and undefined skipped).
export function element(tag, properties = {}, ...children) {
  const node = Object.assign(document.createElement(tag), properties);
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

export const LANGUAGES = ["en", "nl"];
const LANGUAGE_KEY = "cellar.lang";

// The remembered choice, else the browser's language, else English.
export function pageLanguage() {
  const saved = localStorage.getItem(LANGUAGE_KEY);
  if (LANGUAGES.includes(saved)) return saved;
  const browser = (navigator.languages ?? [navigator.language]).map((tag) => tag.slice(0, 2).toLowerCase());
  return browser.find((lang) => LANGUAGES.includes(lang)) ?? "en";
}

export function rememberLanguage(lang) {
  localStorage.setItem(LANGUAGE_KEY, lang);
  document.documentElement.lang = lang;
}

// The language switch: one pressed button per language; `onChange(lang)` after a switch.
export function languageSwitch(container, lang, onChange) {
  const names = { en: "English", nl: "Nederlands" };
  container.replaceChildren(...LANGUAGES.map((code) => {
    const button = document.createElement("button");
    button.type = "button";
    button.lang = code;
    button.textContent = names[code];
    button.setAttribute("aria-pressed", String(code === lang));
    button.addEventListener("click", () => {
      container.querySelectorAll("button").forEach((b) => b.setAttribute("aria-pressed", String(b === button)));
      rememberLanguage(code);
      onChange(code);
    });
    return button;
  }));
}

export async function fetchText(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: ${response.status} ${response.statusText}`);
  return response.text();
}

// The page's own quick read of a lesson file's `+++` front matter (flat `key = value` lines:
// strings, integers, arrays of strings), so titles show without waiting for Python; Python's
// cellar.lessons.lesson is the judge of whether a lesson is valid.
export function frontMatter(text) {
  const lines = text.split("\n");
  const close = lines.indexOf("+++", 1);
  if (lines[0].trim() !== "+++" || close < 0) return { meta: {}, body: text };
  const meta = {};
  for (const line of lines.slice(1, close)) {
    const match = line.match(/^\s*(\w+)\s*=\s*(.+?)\s*$/);
    if (match) {
      try { meta[match[1]] = JSON.parse(match[2]); } catch { /* not a JSON-like value: not needed here */ }
    }
  }
  return { meta, body: lines.slice(close + 1).join("\n") };
}

// The worker's boot stages (worker.js), then the search page's own: opening the index.
export const STAGE_NAMES = {
  en: { runtime: "Loading the Python runtime", packages: "Loading NumPy and cellar",
        index: "Opening the index", ready: "Python is ready", failed: "Python could not start",
        waiting: "Starting Python" },
  nl: { runtime: "Python-runtime laden", packages: "NumPy en cellar laden",
        index: "De index openen", ready: "Python is klaar", failed: "Python kon niet starten",
        waiting: "Python starten" },
};

// A one-line status that follows the worker's boot stages (again after a restart), with the
// running stage's elapsed time ticking, so the page never looks frozen.
export function bootStatus(cellar, line, language) {
  let current = "waiting";
  let since = performance.now();
  const draw = () => {
    const names = STAGE_NAMES[language()];
    line.textContent = current === "ready" ? names.ready
      : `${names[current] ?? current}… ${((performance.now() - since) / 1000).toFixed(1)} s`;
  };
  let ticker = setInterval(draw, 250);
  const watch = () => cellar.ready.then(
    () => { current = "ready"; clearInterval(ticker); draw(); line.dataset.state = "ready"; },
    (error) => {
      clearInterval(ticker);
      line.textContent = `${STAGE_NAMES[language()].failed}: ${error.message}`;
      line.dataset.state = "failed";
    });
  cellar.onStage(({ stage }) => { if (stage !== "ready") { current = stage; since = performance.now(); draw(); } });
  cellar.onRestart(() => {
    current = "waiting"; since = performance.now(); line.dataset.state = "booting";
    clearInterval(ticker); ticker = setInterval(draw, 250); watch();
  });
  line.dataset.state = "booting";
  draw();
  watch();
  return { redraw: draw };
}

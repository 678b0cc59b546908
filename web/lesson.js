// The lesson workbench: prose beside a CodeMirror editor; Run, Check, hints, the sample solution,
// progress kept in this browser, the lesson's widgets. Python runs in the worker (cellar.site.bridge);
// everything that needs no Python (prose, editor, starter, solution) shows before it is ready.

import { startCellar } from "./cellar-client.js";
import { createEditor } from "./bundles/editor.js";
import { renderMarkdown, highlightPython } from "./bundles/notebook.js";
import { $, bootStatus, fetchText, frontMatter, languageSwitch, pageLanguage, rememberLanguage } from "./ui.js";
import { WIDGETS } from "./widgets.js";

// Learner code is stopped after this long: an endless loop must not hold the page.
export const TIME_LIMIT_MS = 8000;

const TEXT = {
  en: {
    lessons: "Lessons", checkpoints: "Checkpoints", run: "Run", running: "Running…",
    reset: "Reset to the starter", showSolution: "Sample solution…", progress: "Progress",
    checkpointsWaiting: "The checkpoints appear when Python is ready.",
    check: "Check", checking: "Checking…", hint: "Hint", passed: "Passed", notYet: "Not yet",
    editorHelp: "Ctrl+Enter runs the code. Tab indents; press Escape, then Tab, to leave the editor.",
    editorLabel: "Your code: main.py", previous: "Previous", next: "Next", waiting: "Waiting for Python…",
    stopped: (after) => `Stopped after ${after.replace("stopped after ", "")}: the code ran too long (an endless loop?). Python is ready for the next run.`,
    noOutput: "(no output)", stdout: "Output", stderr: "Errors and warnings", error: "Stopped with an error",
    confirmSolution: "Replace your code with the sample solution? Ctrl+Z in the editor brings your code back.",
    confirmReset: "Replace your code with the starter? Ctrl+Z in the editor brings your code back.",
    replace: "Replace", cancel: "Cancel", runExample: "Run example", minutes: (n) => `about ${n} minutes`,
    failedToLoad: "This lesson could not be loaded", example: "Example",
  },
  nl: {
    lessons: "Lessen", checkpoints: "Checkpoints", run: "Uitvoeren", running: "Bezig…",
    reset: "Terug naar de beginversie", showSolution: "Voorbeeldoplossing…", progress: "Voortgang",
    checkpointsWaiting: "De checkpoints verschijnen zodra Python klaar is.",
    check: "Controleer", checking: "Controleren…", hint: "Hint", passed: "Geslaagd", notYet: "Nog niet",
    editorHelp: "Ctrl+Enter voert de code uit. Tab laat inspringen; druk Escape en dan Tab om de editor te verlaten.",
    editorLabel: "Jouw code: main.py", previous: "Vorige", next: "Volgende", waiting: "Wachten op Python…",
    stopped: (after) => `Gestopt na ${after.replace("stopped after ", "")}: de code liep te lang (een oneindige lus?). Python is klaar voor de volgende keer.`,
    noOutput: "(geen uitvoer)", stdout: "Uitvoer", stderr: "Fouten en waarschuwingen", error: "Gestopt met een fout",
    confirmSolution: "Je code vervangen door de voorbeeldoplossing? Ctrl+Z in de editor haalt je code terug.",
    confirmReset: "Je code vervangen door de beginversie? Ctrl+Z in de editor haalt je code terug.",
    replace: "Vervangen", cancel: "Annuleren", runExample: "Voorbeeld uitvoeren", minutes: (n) => `ongeveer ${n} minuten`,
    failedToLoad: "Deze les kon niet worden geladen", example: "Voorbeeld",
  },
};

const cellar = (window.cellar = startCellar());
let lang = pageLanguage();
const t = () => TEXT[lang];
rememberLanguage(lang);
bootStatus(cellar, $("boot-status"), () => lang);

// One Python action at a time, in order: a time limit then measures only that action, never
// the wait behind another one.
let chain = Promise.resolve();
function python(name, args, options = {}) {
  const result = chain.then(() => cellar.callWith({ timeout: TIME_LIMIT_MS, ...options }, "cellar.site.bridge", name, ...args));
  chain = result.catch(() => {});
  return result;
}

// --- the lesson's files, and what this browser remembers of it ----------------------------------

const folder = new URLSearchParams(location.search).get("lesson");
const index = (await (await fetch("lessons/index.json")).json()).lessons;
const position = Math.max(0, index.findIndex((entry) => entry.folder === folder));
const entry = index[position];
const files = Object.fromEntries(await Promise.all(entry.files.map(
  async (name) => [name, await fetchText(`lessons/${entry.folder}/${name}`)])));
const storeKey = `cellar.lesson.${entry.folder}`;
const store = { code: null, passed: [], total: null, ...JSON.parse(localStorage.getItem(storeKey) ?? "{}") };
const save = () => localStorage.setItem(storeKey, JSON.stringify(store));

// --- the editor ---------------------------------------------------------------------------------

const editor = createEditor($("editor"), {
  doc: store.code ?? files["main.py"],
  label: t().editorLabel,
  onChange: (text) => { store.code = text; save(); },
  onRun: () => run(),
});
document.body.dataset.editor = "ready";
performance.mark("cellar-editor-ready");

// --- output of a run ----------------------------------------------------------------------------

function block(className, label, text) {
  const figure = document.createElement("figure");
  figure.className = className;
  const caption = document.createElement("figcaption");
  caption.textContent = label;
  const pre = document.createElement("pre");
  pre.textContent = text;
  figure.append(caption, pre);
  return figure;
}

function showRun(container, result) {
  const parts = [];
  if (result.stdout) parts.push(block("stdout", t().stdout, result.stdout));
  if (result.stderr) parts.push(block("stderr", t().stderr, result.stderr));
  if (result.traceback) parts.push(block("traceback", `${t().error}: ${result.error}`, result.traceback));
  if (!parts.length) parts.push(block("stdout", t().stdout, t().noOutput));
  container.replaceChildren(...parts);
}

function showFailure(container, error) {
  const message = document.createElement("p");
  message.className = "problem";
  message.textContent = error.stopped ? t().stopped(error.message) : `${error.pythonType ?? "Error"}: ${error.message}`;
  if (error.partial) showRun(container, error.partial);  // what it printed, and where it was stopped
  else container.replaceChildren();
  container.prepend(message);
}

async function runInto(container, button, source, filename) {
  container.setAttribute("aria-busy", "true");
  container.replaceChildren(Object.assign(document.createElement("p"),
    { className: "muted", textContent: cellar.timeline.at(-1)?.stage === "ready" ? t().running : t().waiting }));
  button.disabled = true;
  try {
    showRun(container, await python("run_code", [source, filename]));
  } catch (error) {
    showFailure(container, error);
  } finally {
    button.disabled = false;
    container.removeAttribute("aria-busy");
  }
}

const run = () => runInto($("output"), $("run"), editor.getText(), "main.py");
$("run").addEventListener("click", run);

// --- replacing the code: reset and sample solution, each behind a confirmation -----------------

function confirmReplace(question) {
  const dialog = $("confirm");
  $("confirm-text").textContent = question;
  $("confirm-yes").textContent = t().replace;
  $("confirm-no").textContent = t().cancel;
  dialog.returnValue = "";
  dialog.showModal();
  $("confirm-no").focus();
  return new Promise((resolve) => dialog.addEventListener("close", () => resolve(dialog.returnValue === "yes"), { once: true }));
}

$("reset").addEventListener("click", async () => {
  if (await confirmReplace(t().confirmReset)) { editor.setText(files["main.py"]); editor.focus(); }
});
$("show-solution").addEventListener("click", async () => {
  if (await confirmReplace(t().confirmSolution)) { editor.setText(files["solution.py"]); editor.focus(); }
});

// --- checkpoints and progress -------------------------------------------------------------------

let checkpoints = null;  // from cellar.site.bridge.lesson_page, per language

function showProgress() {
  const total = checkpoints?.length ?? store.total;
  $("progress").textContent = total ? `${store.passed.length} / ${total}` : "–";
}

function renderCheckpoints() {
  if (!checkpoints) return;
  $("checkpoints-waiting").hidden = true;
  $("checkpoint-list").replaceChildren(...checkpoints.map((checkpoint, number) => {
    const item = document.createElement("li");
    item.className = "checkpoint";
    item.id = `checkpoint-${checkpoint.id}`;
    item.dataset.checkpoint = checkpoint.id;
    item.innerHTML = `<h3><span class="title"></span> <span class="badge"></span></h3>
      <div class="task"></div>
      <details><summary></summary><div class="hint"></div></details>
      <div class="toolbar"><button type="button" class="check"></button></div>
      <p class="verdict" role="status" aria-live="polite"></p>`;
    item.querySelector(".title").textContent = `${number + 1}. ${checkpoint.title}`;
    item.querySelector(".task").innerHTML = renderMarkdown(checkpoint.task);
    item.querySelector("summary").textContent = t().hint;
    item.querySelector(".hint").innerHTML = renderMarkdown(checkpoint.hint);
    const button = item.querySelector(".check");
    button.textContent = t().check;
    button.setAttribute("aria-describedby", `${item.id}-title`);
    item.querySelector(".title").id = `${item.id}-title`;
    button.addEventListener("click", () => checkOne(checkpoint.id, item));
    markPassed(item, store.passed.includes(checkpoint.id));
    return item;
  }));
  showProgress();
}

function markPassed(item, passed) {
  item.classList.toggle("passed", passed);
  item.querySelector(".badge").textContent = passed ? `✓ ${t().passed}` : "";
}

async function checkOne(id, item) {
  const verdict = item.querySelector(".verdict");
  const button = item.querySelector(".check");
  button.disabled = true;
  verdict.className = "verdict";
  verdict.textContent = t().checking;
  try {
    const result = await python("check_code", [files, id, editor.getText()]);
    verdict.classList.add(result.passed ? "pass" : "fail");
    verdict.textContent = result.passed ? `✓ ${t().passed}` : `✗ ${t().notYet}: ${result.message}`;
    store.passed = store.passed.filter((passed) => passed !== id).concat(result.passed ? [id] : []);
    store.total = checkpoints.length;
    save();
    markPassed(item, result.passed);
    showProgress();
  } catch (error) {
    verdict.classList.add("fail");
    verdict.textContent = error.stopped ? t().stopped(error.message) : `${error.pythonType ?? "Error"}: ${error.message}`;
  } finally {
    button.disabled = false;
  }
}

const pages = {};
async function loadCheckpoints() {
  const wanted = lang;
  pages[wanted] ??= python("lesson_page", [files, wanted], { timeout: 0 });
  try {
    const page = await pages[wanted];
    if (wanted !== lang) return;
    checkpoints = page.checkpoints;
    renderCheckpoints();
  } catch (error) {
    delete pages[wanted];
    $("checkpoints-waiting").textContent = `${t().failedToLoad}: ${error.message}`;
  }
}

// --- prose, examples, widgets -------------------------------------------------------------------

function renderProse() {
  const { meta, body } = frontMatter(files[`lesson.${lang}.md`]);
  document.title = `${meta.title} · Cellar`;
  $("lesson-meta").textContent = `${meta.module} · ${meta.number} · ${t().minutes(meta.minutes)}`;
  // Widget markers become placeholders, and ```python run fences get a class of their own.
  const markdown = body
    .replace(/<!--\s*widget:\s*([a-z0-9-]+)\s*-->/g, (_, name) => `<div data-widget="${name}"></div>`)
    .replace(/^```python run[ \t]*$/gm, "```python-run");
  const prose = $("prose");
  prose.innerHTML = renderMarkdown(markdown);
  prose.querySelectorAll("code.language-python").forEach((code) => { code.innerHTML = highlightPython(code.textContent); });
  prose.querySelectorAll("code.language-python-run").forEach((code, number) => mountExample(code, number + 1));
  prose.querySelectorAll("[data-widget]").forEach((place) => {
    const widget = WIDGETS[place.dataset.widget];
    if (widget) widget(place, { files, lang, python });
  });
  prose.removeAttribute("aria-busy");
}

function mountExample(code, number) {
  const source = code.textContent;
  code.innerHTML = highlightPython(source);
  const pre = code.parentElement;
  const example = document.createElement("section");
  example.className = "example";
  example.setAttribute("aria-label", `${t().example} ${number}`);
  pre.replaceWith(example);
  const button = Object.assign(document.createElement("button"), { type: "button", textContent: t().runExample });
  const output = document.createElement("div");
  output.className = "output";
  output.setAttribute("aria-live", "polite");
  example.append(pre, button, output);
  button.addEventListener("click", () => runInto(output, button, source, `example${number}.py`));
}

async function renderNav() {
  const link = async (neighbour, rel, text) => {
    if (!neighbour) return document.createElement("span");
    const { meta } = frontMatter(await fetchText(`lessons/${neighbour.folder}/lesson.${lang}.md`));
    return Object.assign(document.createElement("a"), {
      href: `lesson.html?lesson=${neighbour.folder}`, rel, textContent: text(meta.title),
    });
  };
  $("lesson-nav").replaceChildren(
    await link(index[position - 1], "prev", (title) => `← ${t().previous}: ${title}`),
    await link(index[position + 1], "next", (title) => `${t().next}: ${title} →`));
}

function renderTexts() {
  document.querySelectorAll("[data-text]").forEach((element) => { element.textContent = t()[element.dataset.text]; });
  editor.view.contentDOM.setAttribute("aria-label", t().editorLabel);
}

function render() {
  renderTexts();
  renderProse();
  renderNav();
  showProgress();
  if (checkpoints) renderCheckpoints();
}

languageSwitch(document.querySelector(".lang-switch"), lang, (chosen) => {
  lang = chosen;
  render();
  loadCheckpoints();
});
render();
loadCheckpoints();
// For tests and benchmarks: the page's editor and the lesson it shows.
window.workbench = { editor, files, folder: entry.folder, timeLimitMs: TIME_LIMIT_MS };

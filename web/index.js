import { startCellar } from "./cellar-client.js";

const STAGES = {
  runtime: "Loading the Python runtime",
  packages: "Loading NumPy",
  cellar: "Installing cellar",
  ready: "Ready",
};

const cellar = (window.cellar = startCellar());
const $ = (id) => document.getElementById(id);
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
const opened = performance.now();

// The boot panel: one line per stage, the running one with its elapsed time ticking.
let current = null;
cellar.onStage(({ stage, t }) => {
  if (current) current.querySelector(".time").textContent = seconds(t - current.dataset.t);
  const item = document.createElement("li");
  item.dataset.t = t;
  item.innerHTML = `<span class="name"></span> <span class="time"></span>`;
  item.querySelector(".name").textContent = STAGES[stage] ?? stage;
  $("stages").append(item);
  current = stage === "ready" ? null : item;
});
const ticker = setInterval(() => {
  const since = seconds(performance.now() - opened);
  $("boot-status").textContent = current
    ? `${current.querySelector(".name").textContent}… ${since}` : `Loading… ${since}`;
}, 200);

cellar.ready.then(
  ({ python, cellar: version, timeline }) => {
    clearInterval(ticker);
    $("boot-status").textContent = `Python is ready.`;
    $("python-version").textContent = python;
    $("cellar-version").textContent = version;
    $("ready-after").textContent = seconds(timeline.at(-1).t);
    $("versions").hidden = false;
    $("revision-tool").hidden = false;
    document.body.dataset.ready = "true";
  },
  (error) => {
    clearInterval(ticker);
    $("boot-status").textContent = `Python could not start: ${error.message}`;
    $("boot").classList.add("failed");
  },
);

// Revisions are computed as the user types; only the latest answer is shown.
let latest = 0;
$("revision-input").addEventListener("input", async (event) => {
  const request = ++latest;
  try {
    const value = await cellar.revision(event.target.value);
    if (request === latest) $("revision-output").textContent = value;
  } catch (error) {
    if (request === latest) $("revision-output").textContent = `error: ${error.message}`;
  }
});

// The list of lessons (lessons/index.json) with titles in the page language and this browser's
// progress. It needs no Python: the titles come from each lesson's front matter.

import { fetchText, frontMatter, languageSwitch, pageLanguage, rememberLanguage } from "./ui.js";

const TEXT = {
  en: { heading: "Lessons", intro: "Write the code of Cellar's retrieval in this tab: Python runs and is checked in the browser.",
        minutes: (n) => `about ${n} minutes`, progress: (done, total) => `${done} / ${total} checkpoints` },
  nl: { heading: "Lessen", intro: "Schrijf de code van Cellars zoekmachine in dit tabblad: Python draait en wordt gecontroleerd in de browser.",
        minutes: (n) => `ongeveer ${n} minuten`, progress: (done, total) => `${done} / ${total} checkpoints` },
};

const index = (await (await fetch("lessons/index.json")).json()).lessons;
let lang = pageLanguage();
rememberLanguage(lang);

async function render() {
  const t = TEXT[lang];
  document.getElementById("heading").textContent = t.heading;
  document.getElementById("intro").textContent = t.intro;
  const items = await Promise.all(index.map(async ({ folder }) => {
    const { meta } = frontMatter(await fetchText(`lessons/${folder}/lesson.${lang}.md`));
    const saved = JSON.parse(localStorage.getItem(`cellar.lesson.${folder}`) ?? "{}");
    const item = document.createElement("li");
    item.innerHTML = `<a></a><p class="meta"></p>`;
    Object.assign(item.querySelector("a"), { href: `lesson.html?lesson=${folder}`, textContent: meta.title });
    item.querySelector(".meta").textContent = [meta.module, t.minutes(meta.minutes),
      saved.total ? t.progress(saved.passed.length, saved.total) : null].filter(Boolean).join(" · ");
    return item;
  }));
  const list = document.getElementById("lesson-list");
  list.replaceChildren(...items);
  list.removeAttribute("aria-busy");
}

languageSwitch(document.querySelector(".lang-switch"), lang, (chosen) => { lang = chosen; render(); });
render();
